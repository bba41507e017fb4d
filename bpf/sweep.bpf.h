/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sampled sweep (--offcpu=sweep): at each tick, the threads that
 * moved with their scheduler counts (and kernel stacks), and an exiting
 * thread's last counts.
 */
#ifndef __PYSIGHT_SWEEP_BPF_H
#define __PYSIGHT_SWEEP_BPF_H

/*
 * What the scheduler counted for a thread, read at a tick: its CPU time,
 * its run-queue wait and its switches.  User space turns the deltas
 * between two ticks into exact CPU and run-queue time, and the rest of
 * the tick into blocked time; a thread whose switch count has not moved
 * still has the stack read last time.  The time is the pass's: a pass
 * takes tens of microseconds, and each thread's deltas add up to the
 * same total whichever instant of it stands for the pass.  run_delay
 * needs CONFIG_SCHED_INFO (schedstats): without it the field reads 0 and
 * run-queue time counts as blocked, which user space says at the start.
 * task is trusted: its fields are plain loads, not a helper call each
 * (0.54 us a task before, with the rest of the record).
 */
static __always_inline void sweep_counts(struct task_struct *task,
					 struct thread_record *r, __u64 now)
{
	r->now = now;
	r->start_time = task->start_time;
	r->ran_ns = task->se.sum_exec_runtime;
	if (bpf_core_field_exists(task->sched_info.run_delay))
		r->run_delay_ns = task->sched_info.run_delay;
	r->switches = task->nvcsw + task->nivcsw;
	r->vswitches = task->nvcsw;
	if (bpf_core_field_exists(task->sched_info.pcount))
		r->arrivals = task->sched_info.pcount;
}

/*
 * bpf_ktime_get_ns() less the scheduler's clock (rq->clock, which
 * sched_info.last_arrival is in).  clock_gap_seen: this pass's reading,
 * at its first thread that needs it (0: not yet), from the current
 * task's run queue, reached through its group's cfs_rq
 * (CONFIG_FAIR_GROUP_SCHED): the per-CPU runqueues symbol needs
 * CONFIG_KALLSYMS_ALL, which kernels like this one leave out.  That
 * clock moves only at scheduler events on its CPU, so a reading is too
 * large by the time since the last one: the sweeper's switch-in, mostly
 * tens of microseconds before, milliseconds when it did not sleep.  The
 * two clocks tick from one counter, so user space keeps the floor of
 * the recent readings in clock_gap (0: none yet), and the smaller of the
 * two is used.
 */
__s64 clock_gap = 0;
__s64 clock_gap_seen = 0;

static __always_inline __s64 sweep_clock_gap(void)
{
	struct task_struct *me;

	if (!clock_gap_seen) {
		me = bpf_get_current_task_btf();
		clock_gap_seen = (__s64)pass_now -
				 (__s64)BPF_CORE_READ(me, se.cfs_rq, rq, clock);
		if (!clock_gap_seen)
			clock_gap_seen = 1;
	}
	return clock_gap && clock_gap < clock_gap_seen ? clock_gap :
							   clock_gap_seen;
}

/*
 * When an off-CPU thread left the CPU (ktime ns), 0 when not known: its
 * last switch-in (sched_info.last_arrival) and how long it ran from
 * there (se.sum_exec_runtime - se.prev_sum_exec_runtime, complete once it
 * is off).  User space gives a block that began between two ticks its
 * exact head from this, not half of their interval: at 100 Hz the
 * halves alone were 0.4-0.6 points off on the 20/50/30 ms cycle.
 */
static __always_inline __u64 sweep_off_since(struct task_struct *task)
{
	__u64 arrived, ran, at;
	__s64 gap;

	if (!bpf_core_field_exists(task->sched_info.last_arrival) ||
	    !bpf_core_field_exists(task->se.cfs_rq))
		return 0;
	gap = sweep_clock_gap();
	arrived = task->sched_info.last_arrival;
	ran = task->se.sum_exec_runtime - task->se.prev_sum_exec_runtime;
	if (!arrived || ran > pass_now)
		return 0;
	at = arrived + ran + gap;
	return at <= pass_now ? at : 0;
}

/* What the sweep last reported of a thread. */
struct sweep_seen {
	__u64 switches;
	__u32 state;
	__u8 on_cpu;
	__u8 pad[3];
	__u64 same_until;	/* last found unchanged, ktime ns */
	__u64 kstack_at;	/* its kernel stack's switch count + 1, 0 */
	__s32 kstack;		/* that stack's id in task_kstacks */
	__u32 pad2;
};

struct kstack_buf {
	__u64 ips[PYSIGHT_KSTACK_DEPTH];	/* leaf first, 0 past the end */
};

/*
 * The sweep's kernel stacks (--kernel-stacks), by an id that is a hash
 * of their addresses: threads blocked in the same place share one, and
 * user space reads them as it reads kstacks (sampler__kernel_stack).  A
 * stack trace map cannot hold them, as bpf_get_stackid() takes only the
 * current task's; the LRU bounds them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct kstack_buf);
} task_kstacks SEC(".maps");

/* 1 KiB: more than a program's stack can spare */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kstack_buf);
} kstack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sweep_seen);
} sweep_seen SEC(".maps");

/*
 * The sweep's records, read by user space right after each pass: a
 * bpf_seq_write of one object (a process's threads) must fit the seq
 * file's 32 KiB, about 290 records.  1 MiB holds about 8,700 threads a
 * pass; those past it wait for the next tick (sweep_capped).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} sweep_ring SEC(".maps");

__u64 sweep_capped = 0;		/* records the ring had no room for */

/*
 * Threads looked at a tick in a process, at most (0: all), when not
 * every thread is asked for: a pass over 5,000 threads took 1-3 ms.  The
 * next tick goes on where this one stopped, so a process of more
 * threads has each looked at every few ticks: its counts add up the
 * same, and only where its moves are seen is coarser.
 */
const volatile __u32 sweep_budget = 1024;

/* the index of the thread looked at: in global memory, so that the
 * verifier does not follow each value (the loop's states would never
 * meet: "argument list too long") */
__u32 sweep_index = 0;

/* tgid -> the index of the thread the next tick starts at */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} sweep_cursor SEC(".maps");

extern int bpf_iter_task_new(struct bpf_iter_task *it,
			     struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *
bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;
extern struct task_struct *bpf_task_acquire(struct task_struct *p) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;

/* A thread of Python process proc, as the task iterators report it. */
static __always_inline void thread_fill(struct thread_record *r,
					struct task_struct *task,
					struct py_proc *proc, __u32 tgid,
					__u64 now)
{
	r->tgid = tgid;
	r->tid = task->pid;
	r->ns_tid = ns_tid(task);
	r->state = task->__state;
	r->fsbase = task->thread.fsbase;
	r->on_cpu = task->on_cpu != 0;
	r->cgroup_id = task->cgroups->dfl_cgrp->kn->id;
	r->kind = r->on_cpu ? KIND_CPU : classify(task, proc, r->state, false);
	r->kstack = -1;
	BPF_CORE_READ_STR_INTO(&r->comm, task, comm);
	sweep_counts(task, r, now);
}

/* --native: where an off-CPU thread's native stack starts, for user
 * space to walk: the user registers saved as it entered the kernel. */
static __always_inline void sweep_user_regs(struct task_struct *task,
					    struct thread_record *r)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs || (task->flags & PF_KTHREAD))
		return;
	r->user_ip = BPF_CORE_READ(regs, ip);
	r->user_sp = BPF_CORE_READ(regs, sp);
	r->user_bp = BPF_CORE_READ(regs, bp);
}

static __always_inline bool kstack_same(const struct kstack_buf *a,
					const struct kstack_buf *b)
{
	int i;

	for (i = 0; i < PYSIGHT_KSTACK_DEPTH; i++)
		if (a->ips[i] != b->ips[i])
			return false;
	return true;
}

/*
 * An off-CPU thread's kernel stack, as its id in task_kstacks, or -1.
 * It is taken again only when the thread has switched since it was last
 * taken: a thread blocked for a minute costs one read.
 * bpf_get_task_stack() leaves out the scheduler's own frames
 * (stack_trace_save_tsk() skips them for a task that is not current), so
 * its leaf is the function that blocked.
 */
static __always_inline __s32 sweep_kstack(struct task_struct *task,
					  struct sweep_seen *s, __u64 switches)
{
	struct kstack_buf *b, *had;
	__u32 zero = 0, id;
	__u64 h = 0;
	int i;

	if (s && s->kstack_at == switches + 1)
		return s->kstack;
	b = bpf_map_lookup_elem(&kstack_scratch, &zero);
	if (!b || bpf_get_task_stack(task, b->ips, sizeof(b->ips), 0) <= 0)
		return -1;
	for (i = 0; i < PYSIGHT_KSTACK_DEPTH; i++)
		h = mix64(h ^ b->ips[i]);
	id = (__u32)(h ^ (h >> 32)) & 0x7fffffff;
	/* another stack of the same id is there: this one goes without */
	if (bpf_map_update_elem(&task_kstacks, &id, b, BPF_NOEXIST)) {
		had = bpf_map_lookup_elem(&task_kstacks, &id);
		if (!had || !kstack_same(had, b))
			return -1;
	}
	if (s) {
		s->kstack = id;
		s->kstack_at = switches + 1;
	}
	return id;
}

/*
 * A thread for the sweep, when it has switched or changed state since
 * the sweep last reported it (or all).  A thread that has not is blocked
 * in the same wait, or runs on, and its counts can wait: its time adds
 * up the same whenever they are read next.  So most ticks report only
 * the threads that moved, and a thread blocked all along costs a lookup,
 * not a record (user space asks for every thread now and then).  -1 when
 * the ring is full: the thread stays unreported, for the next tick.
 */
static __always_inline int sweep_thread(struct task_struct *task,
					struct py_proc *proc, __u32 tgid,
					bool all)
{
	struct sweep_seen *s, now = {};
	struct thread_record *r;

	/* its last counts came from its exit hook (sweep_exit): listed
	 * after them, it is not a thread any more */
	if (task->flags & PF_EXITING)
		return 0;
	if (!pass_now)
		pass_now = bpf_ktime_get_ns();
	now.switches = task->nvcsw + task->nivcsw;
	now.state = task->__state;
	now.on_cpu = task->on_cpu != 0;
	s = bpf_task_storage_get(&sweep_seen, task, 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	/* unchanged: until now its time is its last record's (user space
	 * must not split it with the next record's) */
	if (s && s->switches == now.switches && s->state == now.state &&
	    s->on_cpu == now.on_cpu) {
		s->same_until = pass_now;
		if (!all)
			return 0;
	}
	r = bpf_ringbuf_reserve(&sweep_ring, sizeof(*r), 0);
	if (!r) {
		sweep_capped++;
		return -1;
	}
	__builtin_memset(r, 0, sizeof(*r));
	thread_fill(r, task, proc, tgid, pass_now);
	r->same_until = s ? s->same_until : 0;
	if (!r->on_cpu) {
		r->off_since = sweep_off_since(task);
		if (kernel_stacks)
			r->kstack = sweep_kstack(task, s, now.switches);
		if (native)
			sweep_user_regs(task, r);
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	if (s) {
		s->switches = now.switches;
		s->state = now.state;
		s->on_cpu = now.on_cpu;
		s->same_until = 0;
	}
	return 0;
}

/*
 * A thread of a swept process exits: its last counts, so that the time
 * since its last record is not lost (sweep__final in user space).  Into
 * the sweep's ring, in order with the ticks' records; user space reads
 * that ring before it handles the process's EV_EXIT, sent after this.
 */
static __always_inline void sweep_exit(struct task_struct *task)
{
	struct sweep_seen *s;
	struct thread_record *r;
	struct py_proc *proc;
	__u32 tgid;

	proc = python_of(task, &tgid, true, false);
	if (!proc)
		return;
	s = bpf_task_storage_get(&sweep_seen, task, 0, 0);
	if (!s)		/* never reported: nothing of it to end */
		return;
	r = bpf_ringbuf_reserve(&sweep_ring, sizeof(*r), 0);
	if (!r) {
		sweep_capped++;
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	thread_fill(r, task, proc, tgid, bpf_ktime_get_ns());
	r->exiting = 1;
	r->same_until = s->switches == r->switches ? s->same_until : 0;
	bpf_ringbuf_submit(r, 0);
}

/*
 * The threads of the process whose leader is given, along its thread
 * list.  The task iterator's own walk of a process looks each thread up
 * by pid (0.5 us a thread in a VM); this walk follows the list.
 */
static __always_inline void sweep_process(struct task_struct *leader,
					  bool all)
{
	__u32 tgid, from = 0, *cursor = NULL, zero = 0;
	struct bpf_iter_task it;
	struct task_struct *task;
	struct py_proc *proc;
	bool ended = true;

	if (leader->pid != leader->tgid)
		return;
	proc = python_of(leader, &tgid, false, false);
	if (!proc)
		return;
	if (!all && sweep_budget) {
		cursor = bpf_map_lookup_elem(&sweep_cursor, &tgid);
		if (!cursor) {
			bpf_map_update_elem(&sweep_cursor, &tgid, &zero,
					    BPF_NOEXIST);
			cursor = bpf_map_lookup_elem(&sweep_cursor, &tgid);
		}
		from = cursor ? *cursor : 0;
	}
	sweep_index = 0;
	bpf_iter_task_new(&it, leader, BPF_TASK_ITER_PROC_THREADS);
	while ((task = bpf_iter_task_next(&it))) {
		if (sweep_index++ < from)
			continue;
		if (cursor && sweep_index - from > sweep_budget) {
			ended = false;
			break;
		}
		if (sweep_thread(task, proc, tgid, all))
			break;
	}
	bpf_iter_task_destroy(&it);
	if (cursor)
		*cursor = ended ? 0 : sweep_index - 1;
}

/*
 * Every process of the host, along the task list: the kernel's task
 * iterator over all tasks looks each one up in the pid table and runs the
 * program on it, 0.3 us a task that is not Python (1.2% of a CPU for the
 * agent at 19 Hz over 200 processes); this walk visits leaders alone.
 */
bool sweep_host = false;

static __always_inline void sweep_all_processes(bool all)
{
	struct task_struct *task, *leader;
	struct bpf_iter_task it;
	__u32 tgid;

	bpf_iter_task_new(&it, NULL, BPF_TASK_ITER_ALL_PROCS);
	while ((task = bpf_iter_task_next(&it))) {
		iter_visits++;
		if (!python_of(task, &tgid, false, false))
			continue;
		/* a reference, as walking its threads wants one */
		leader = bpf_task_acquire(task);
		if (!leader)
			continue;
		sweep_process(leader, all);
		bpf_task_release(leader);
	}
	bpf_iter_task_destroy(&it);
}

#endif /* __PYSIGHT_SWEEP_BPF_H */
