/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Off-CPU intervals: why a thread blocks, and when its stack is taken. */
#ifndef __PYSIGHT_OFFCPU_BPF_H
#define __PYSIGHT_OFFCPU_BPF_H

/*
 * Off-CPU time (--mode wall|off).  Per thread, in task storage: it dies
 * with the task, and a thread that sleeps on one CPU and wakes on
 * another is still paired (per-CPU state loses those: OpenTelemetry's
 * profiler, their issue #1348).
 */
/* A stack a walk took as the thread left the CPU, and where it was read,
 * to tell it is still the same one (same_stack()). */
struct kept_stack {
	__u64 hash;		/* 0: none */
	__u64 tstate, leaf, raw, code_gen;
	__u16 nframes;
	__u8 status;		/* the walk's enum sample_status */
	__u8 pad[5];
};

struct thread_state {
	__u64 off_since;	/* ktime it left the CPU, 0: on it */
	__u64 ran_at_off;	/* its CPU time when it left */
	__u64 pending;		/* weight of an ended interval that began
				 * with no stack taken, 0: none */
	struct kept_stack cur;	/* the stack it left with */
	struct kept_stack alt;	/* the one before that was another */
	__s32 kstack, pending_kstack;	/* kernel stack ids, -1: none */
	__u8 walked;		/* a walk began its interval, even one that
				 * found no Python stack */
	__u8 kind, pending_kind;	/* why: enum sample_kind */
	__u8 pad[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

/* tid -> sum_exec_runtime at its last CPU sample (--mode wall): a
 * sample weighs the CPU time the thread used since, exactly. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} cpu_last SEC(".maps");

/* Kernel stacks of off-CPU intervals (--kernel-stacks). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PYSIGHT_KSTACK_DEPTH * sizeof(__u64));
} kstacks SEC(".maps");

/* x86-64 system calls that tell why a thread blocks. */
enum {
	NR_read = 0, NR_write = 1, NR_poll = 7, NR_pread64 = 17,
	NR_pwrite64 = 18, NR_readv = 19, NR_writev = 20, NR_select = 23,
	NR_nanosleep = 35, NR_sendfile = 40, NR_connect = 42,
	NR_accept = 43, NR_sendto = 44, NR_recvfrom = 45, NR_sendmsg = 46,
	NR_recvmsg = 47, NR_fsync = 74, NR_fdatasync = 75, NR_futex = 202,
	NR_io_getevents = 208, NR_clock_nanosleep = 230,
	NR_epoll_wait = 232, NR_openat = 257, NR_pselect6 = 270,
	NR_ppoll = 271, NR_splice = 275, NR_epoll_pwait = 281,
	NR_accept4 = 288, NR_preadv = 295, NR_pwritev = 296,
	NR_recvmmsg = 299, NR_sendmmsg = 307, NR_io_uring_enter = 426,
	NR_epoll_pwait2 = 441, NR_futex_waitv = 449,
};

#define TASK_RUNNING		0
#define TASK_UNINTERRUPTIBLE	0x0002
#define FUTEX_CMD_MASK		0x7f	/* without PRIVATE, CLOCK_REALTIME */
#define FUTEX_WAIT		0
#define FUTEX_LOCK_PI		6
#define FUTEX_WAIT_BITSET	9
#define FUTEX_WAIT_REQUEUE_PI	11
#define FUTEX_LOCK_PI2		13

/* The GIL state's address when it is known without reading the target:
 * in _PyRuntime (<= 3.11), or found before; else 0. */
static __always_inline __u64 gil_known(struct py_proc *proc)
{
	const struct py_offsets *off = &proc->off;

	if (off->runtime_gil != PY_OFF_NONE)
		return proc->runtime_addr + off->runtime_gil;
	return proc->gil_addr;
}

/*
 * The main interpreter's GIL state: in _PyRuntime up to 3.11, behind
 * interp->ceval.gil from 3.12 (found once, kept in the process's entry).
 * Reads the target's memory: only in the context of one of its threads.
 */
static __always_inline __u64 gil_addr(struct py_proc *proc)
{
	const struct py_offsets *off = &proc->off;
	__u64 interp = 0, gil = 0;

	if (gil_known(proc) || off->interp_gil_ptr == PY_OFF_NONE)
		return gil_known(proc);
	if (read_u64(proc->runtime_addr + off->runtime_interpreters_head,
		     &interp) || !interp ||
	    read_u64(interp + off->interp_gil_ptr, &gil))
		return 0;
	proc->gil_addr = gil;
	return gil;
}

static __always_inline bool futex_waits(__u64 op)
{
	op &= FUTEX_CMD_MASK;
	return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET ||
	       op == FUTEX_LOCK_PI || op == FUTEX_LOCK_PI2 ||
	       op == FUTEX_WAIT_REQUEUE_PI;
}

/*
 * Why a blocked thread is off the CPU, from the system call it is in and
 * its arguments (its user registers at syscall entry).  A futex wait on
 * an address inside the GIL state is a GIL wait: take_gil() sleeps on
 * the state's condition variable and mutex.  own: task is current, so
 * its memory may be read to find the GIL (the task iterator runs in
 * pysight's context: it uses the address a sample found).
 */
static __always_inline __u8 classify(struct task_struct *task,
				     struct py_proc *proc, unsigned int state,
				     bool own)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 nr, a0, a1, gil;

	if (state == TASK_RUNNING)
		return KIND_RUNQUEUE;
	if (!regs)
		return KIND_OTHER;
	nr = regs->orig_ax;
	a0 = regs->di;
	a1 = regs->si;
	switch (nr) {
	case NR_nanosleep:
	case NR_clock_nanosleep:
		return KIND_SLEEP;
	case NR_select:
	case NR_pselect6:	/* time.sleep up to 3.10: no descriptors */
		return a0 ? KIND_IO : KIND_SLEEP;
	case NR_poll:
	case NR_ppoll:
		return a1 ? KIND_IO : KIND_SLEEP;
	case NR_futex:
		if (!futex_waits(a1))
			return KIND_OTHER;
		gil = proc->state != PY_PROC_PYTHON ? 0 :
		      own ? gil_addr(proc) : gil_known(proc);
		if (gil && a0 >= gil && a0 < gil + proc->off.gil_size)
			return KIND_GIL;
		return KIND_LOCK;
	case NR_futex_waitv:
		return KIND_LOCK;
	case NR_read: case NR_write: case NR_pread64: case NR_pwrite64:
	case NR_readv: case NR_writev: case NR_preadv: case NR_pwritev:
	case NR_sendfile: case NR_connect: case NR_accept: case NR_accept4:
	case NR_sendto: case NR_recvfrom: case NR_sendmsg: case NR_recvmsg:
	case NR_recvmmsg: case NR_sendmmsg: case NR_fsync:
	case NR_fdatasync: case NR_io_getevents: case NR_epoll_wait:
	case NR_epoll_pwait: case NR_epoll_pwait2: case NR_openat:
	case NR_splice: case NR_io_uring_enter:
		return KIND_IO;
	}
	/* a disk wait outside those calls: a page fault, say */
	return state & TASK_UNINTERRUPTIBLE ? KIND_IO : KIND_OTHER;
}

/*
 * An ended interval, sent against the stack taken when it began: a
 * record without frames, which user space had at that walk (EV_STACK).
 * current need not be task: at switch-in it is the thread leaving.
 */
static __always_inline void emit_interval(struct task_struct *task,
					  const struct thread_state *t,
					  __u8 kind, __u64 weight, __s32 kstack)
{
	struct sample_event *e;

	e = reserve_event(sizeof(*e), EV_SAMPLE, BPF_CORE_READ(task, tgid),
			  BPF_CORE_READ(task, pid));
	if (!e)
		return;
	e->stack_hash = t->cur.hash;
	e->cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	e->weight = weight;
	e->status = t->cur.status;
	e->kstack = kstack;
	e->nframes = t->cur.nframes;
	e->has_frames = 0;
	e->kind = kind;
	e->task_flags = 0;
	e->nnative = 0;
	e->native_stop = NATIVE_NONE;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	count(CNT_OFF_WALKED);
}

/*
 * An interval of weight ends.  Without a stack from its start (it was
 * opened by the task iterator, or began before its process was known to
 * be Python), the thread's next walk in its own context takes one: its
 * next switch out or CPU sample.
 */
static __always_inline void end_interval(struct task_struct *task,
					 struct thread_state *t, __u64 weight)
{
	if (t->cur.hash) {
		emit_interval(task, t, t->kind, weight, t->kstack);
		return;
	}
	if (t->walked)		/* no Python stack: not ours */
		return;
	if (!t->pending) {
		t->pending_kind = t->kind;
		t->pending_kstack = t->kstack;
	}
	t->pending += weight;
}

/*
 * A thread that runs again, which this program did not see come back on
 * (a few times a recording, on a busy host): its interval ended where
 * the CPU time it has used since began.
 */
static __always_inline void close_unseen(struct task_struct *task,
					 struct thread_state *t, __u64 now,
					 __u64 ran)
{
	__u64 off = now - t->off_since, ran_since = ran - t->ran_at_off;

	count(CNT_OFF_UNSEEN);
	t->off_since = 0;
	if (off > ran_since)
		end_interval(task, t, off - ran_since);
}

/* Can k be reused, if its frames match? */
static __always_inline bool reusable(const struct kept_stack *k)
{
	return k->hash && k->status == ST_COMPLETE &&
	       k->code_gen == *(volatile __u64 *)&code_frees &&
	       /* user space forgot it (its frames could not all be
		* named): walk, so they are sent again */
	       bpf_map_lookup_elem(&stacks_seen, &k->hash);
}

/*
 * Is the thread's stack, frame for frame, one of the two its last walks
 * took (the last, or the other one before it: a thread often leaves in
 * turn at a condition wait and at a GIL wait)?  Checking only the top
 * frames is not enough: a function that returns and is called again
 * from another line of its caller pushes its frame at the same address
 * (3.11+: the same slot of the data stack; up to 3.10, the code object's
 * zombie frame) with the same code and instruction, while the caller's
 * line has changed, and so can any caller's below it.  So this reads
 * every frame's code and instruction fields, as the walk does, and
 * compares their hash: what it saves is finding and checking the thread
 * state, each code object's identity, keeping the frames and sending
 * them.  A code address stands for the same object only while none was
 * freed (code_frees, counted by the dealloc uprobe, so only processes
 * that have it).  The thread state is not checked again: a thread's
 * state is deleted after its frames are popped, so a stale one has no
 * first frame to match.  Returns 0 for cur, 1 for alt, -1 for neither.
 */
static __always_inline int same_stack(struct sample_buf *b,
				      const struct py_proc *proc,
				      struct task_struct *task,
				      const struct thread_state *t, __u32 tgid)
{
	bool cur = false, alt = false;
	__u64 frame = 0, tstate;

	if (!(proc->flags & PY_PROC_F_CODE_CACHE))
		return -1;
	tstate = t->cur.hash ? t->cur.tstate : t->alt.tstate;
	if (first_frame(proc, tstate, &frame) || !frame)
		return -1;
	cur = t->cur.leaf == frame && t->cur.tstate == tstate &&
	      reusable(&t->cur);
	alt = t->alt.leaf == frame && t->alt.tstate == tstate &&
	      reusable(&t->alt);
	if (!cur && !alt)
		return -1;
	walk_stack(b, proc, task, tgid, tstate, frame, true, 0);
	if (b->fc.status != ST_COMPLETE)
		return -1;
	if (cur && b->fc.raw == t->cur.raw)
		return 0;
	if (alt && b->fc.raw == t->alt.raw)
		return 1;
	return -1;
}

/*
 * The stack of the interval that begins as the thread leaves the CPU,
 * taken while it is still current, so its memory is readable: reused
 * when it has not changed since one of the last two, else walked, and
 * its frames sent to user space if it has not had them.  The interval's
 * weight is known only at switch in.
 */
static __always_inline void take_stack(struct thread_state *t,
				       struct py_proc *proc,
				       struct task_struct *task, __u32 tgid)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	struct kept_stack k;
	struct sample_buf *b;
	__u64 gen;
	int same;

	t->walked = 0;
	if (proc->state != PY_PROC_PYTHON)
		goto none;
	b = scratch_get();
	if (!b)
		goto none;
	same = same_stack(b, proc, task, t, tgid);
	if (same >= 0) {
		count(CNT_OFF_REUSED);
		if (same) {
			k = t->cur;
			t->cur = t->alt;
			t->alt = k;
		}
		t->walked = 1;
		scratch_put();
		return;
	}
	gen = *(volatile __u64 *)&code_frees;
	collect_stack(b, proc, task, tgid, tid);
	count(CNT_OFF_STACKS);
	t->walked = 1;
	if (t->cur.hash)
		t->alt = t->cur;
	t->cur.hash = 0;
	if (b->ev.status != ST_NO_TSTATE && b->ev.status != ST_IDLE &&
	    b->ev.nframes &&
	    !send_stack(b, EV_STACK, tgid, tid, t->kind, 0, -1)) {
		t->cur.hash = b->ev.stack_hash;
		t->cur.nframes = b->ev.nframes;
		t->cur.status = b->ev.status;
		t->cur.tstate = b->tstate;
		t->cur.leaf = b->fc.leaf;
		t->cur.raw = b->fc.raw;
		t->cur.code_gen = gen;
	}
	scratch_put();
	return;
none:
	t->cur.hash = 0;
}

/* A thread leaves the CPU (current is prev): note when, why, and its
 * stack. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev)
{
	__u64 now, ran;
	struct thread_state *t;
	struct py_proc *proc;
	unsigned int state;
	__u32 tgid;

	/*
	 * A process user space has not answered for yet may be Python: its
	 * intervals open now, so a sleep that begins before the answer
	 * (a 'record -- CMD' of a position-independent Python: 4-8 ms of
	 * its first sleep) is whole.  Their stacks are taken at the
	 * thread's next walk, if it is Python by then.  Its GIL is not
	 * known yet: a wait on it counts as a lock.
	 */
	proc = python_of(prev, &tgid, true, true);
	if (!proc)
		return;
	t = bpf_task_storage_get(&threads, prev, 0, 0);
	if (!t) {
		/* an exiting thread still switches out, after its exit
		 * hook dropped its state: do not make it a new one */
		if (BPF_CORE_READ(prev, flags) & PF_EXITING)
			return;
		t = bpf_task_storage_get(&threads, prev, 0,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t)
			return;
		count(CNT_THREAD_STATES);
	}
	now = bpf_ktime_get_ns();
	ran = BPF_CORE_READ(prev, se.sum_exec_runtime);
	if (t->off_since)
		close_unseen(prev, t, now, ran);
	state = BPF_CORE_READ(prev, __state);
	t->off_since = now;
	t->ran_at_off = ran;
	t->kind = classify(prev, proc, state, true);
	t->kstack = kernel_stacks ? bpf_get_stackid(ctx, &kstacks, 0) : -1;
	take_stack(t, proc, prev, tgid);
	if (t->pending && t->walked) {
		/* it ran, and this is the first walk since: the stack of the
		 * interval that had none */
		if (t->cur.hash)
			emit_interval(prev, t, t->pending_kind, t->pending,
				      t->pending_kstack);
		t->pending = 0;
	}
}

/*
 * A thread comes back: how long it was off is known now.  Sending an
 * interval costs a record in the ring and user space's handling, more
 * than a short block is worth, so an interval shorter than
 * walk_below_ns is kept with probability length / walk_below_ns, and
 * then weighs walk_below_ns: the expected total stays exact, as a
 * sampler's does.  Its stack was taken when it began (take_stack()).
 */
static __always_inline void switch_in(struct task_struct *next)
{
	struct thread_state *t = bpf_task_storage_get(&threads, next, 0, 0);
	__u64 off;

	if (!t || !t->off_since)
		return;
	off = bpf_ktime_get_ns() - t->off_since;
	t->off_since = 0;
	count(CNT_OFF_INTERVALS);
	if (off < walk_below_ns) {
		if (bpf_get_prandom_u32() % walk_below_ns >= off)
			return;
		off = walk_below_ns;
	}
	end_interval(next, t, off);
}

#endif /* __PYSIGHT_OFFCPU_BPF_H */
