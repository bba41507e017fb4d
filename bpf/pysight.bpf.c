// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight's kernel side: on a perf event (and, off the CPU, at
 * sched_switch) find the current thread's PyThreadState, walk its Python frames into a stack
 * of (code object, instruction offset, identity checksum), dedup the stack
 * by hash and tell user space through a ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "core_fixes.bpf.h"
#include "pysight.h"

#define PF_EXITING	0x00000004	/* include/linux/sched.h */
#define PF_KTHREAD	0x00200000

/* the parts, each using only those before it */
#include "maps.bpf.h"
#include "tstate.bpf.h"
#include "walk.bpf.h"
#include "native.bpf.h"
#include "events.bpf.h"
#include "discovery.bpf.h"
#include "offcpu.bpf.h"
#include "oncpu.bpf.h"
#include "sweep.bpf.h"

SEC("tp_btf/sched_switch")
int BPF_PROG(pysight_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	switch_out(ctx, prev);
	switch_in(next);
	return 0;
}

/*
 * The task iterator: at the start of a recording, open an interval for
 * every thread of a Python process that is off the CPU already (it may
 * stay there throughout); at the end, report the threads still off, to
 * be read from user space and closed.  dump reads thread states here.
 */
SEC("iter/task")
int pysight_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct thread_record r = {};
	struct thread_state *t;
	struct py_proc *proc;
	__u32 tgid;

	if (!task)
		return 0;
	proc = python_of(task, &tgid, false, false);
	if (!proc)
		return 0;
	thread_fill(&r, task, proc, tgid, bpf_ktime_get_ns());
	if (iter_mode == ITER_LIST) {
		if (native && !r.on_cpu)
			sweep_user_regs(task, &r);
		bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
		return 0;
	}
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (iter_mode == ITER_OPEN) {
		if (r.on_cpu || (t && t->off_since) ||
		    (BPF_CORE_READ(task, flags) & PF_EXITING))
			return 0;
		if (!t) {
			t = bpf_task_storage_get(&threads, task, 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (!t)
				return 0;
			count(CNT_THREAD_STATES);
		}
		t->off_since = bpf_ktime_get_ns();
		t->ran_at_off = BPF_CORE_READ(task, se.sum_exec_runtime);
		t->kind = r.kind;
		t->kstack = -1;
		t->cur.hash = 0;	/* its stack is taken at its next walk */
		t->walked = 0;
		return 0;
	}
	if (t && t->off_since && !r.on_cpu) {
		r.off_since = t->off_since;
		r.kind = t->kind;
		t->off_since = 0;
	} else if (t && t->pending) {
		/* ended, stack not yet taken: report it as ended now */
		r.off_since = bpf_ktime_get_ns() - t->pending;
		r.kind = t->pending_kind;
		t->pending = 0;
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/*
 * The sampled sweep, into sweep_ring: the threads of the Python process
 * whose leader the link visits (a process's link visits its leader
 * alone), or with sweep_host those of every Python process on the host
 * (the link visits pysight's own leader).  ITER_SWEEP reports every
 * thread, ITER_SWEEP_MOVED those that moved since.
 */
SEC("iter/task")
int pysight_sweep(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (!task)
		return 0;
	if (sweep_host)
		sweep_all_processes(iter_mode == ITER_SWEEP);
	else
		sweep_process(task, iter_mode == ITER_SWEEP);
	return 0;
}

SEC("perf_event")
int pysight_on_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task;
	struct py_proc *proc;
	struct sample_buf *b;

	/* the filter first: with -p, most runs are other tasks' (bench:
	 * looking up procs first made that early return 150 ns dearer) */
	if (!wanted(tgid))
		return 0;
	task = (struct task_struct *)bpf_get_current_task_btf();
	if (!in_cgroups(task, true))
		return 0;
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc)
		proc = discover(task, tgid, tid);
	if (!proc || proc->state != PY_PROC_PYTHON)
		return 0;

	/* the GIL's address, for the task iterator's causes (it cannot
	 * read the target): found once, here in the target's context */
	if (mode != PYSIGHT_MODE_CPU)
		gil_addr(proc);
	if (mode == PYSIGHT_MODE_OFF)
		return 0;	/* off-CPU time alone */
	count(CNT_SAMPLES);
	b = scratch_get();
	if (!b)
		return 0;
	collect_stack(b, proc, task, tgid, tid);
	if (native && b->ev.nframes)
		native_stack(b, ctx, task, tgid);
	sample_on_cpu(b, proc, task, tgid, tid);
	scratch_put();
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(pysight_exec, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	/* a new image: whatever we knew about this pid is stale */
	bpf_map_delete_elem(&tstates, &tgid);
	bpf_map_delete_elem(&native_procs, &tgid);
	if (!wanted(tgid)) {
		bpf_map_delete_elem(&procs, &tgid);
		return 0;
	}
	if (configure_from_binary(p, tgid, BPF_ANY))
		return 0;
	/* pending until user space answers; the entry makes its exit
	 * reported, so user space can forget what it learns */
	bpf_map_update_elem(&procs, &tgid, &proc_pending, BPF_ANY);
	count(CNT_NEW_PID);
	emit_proc_event(EV_EXEC, tgid, tgid);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(pysight_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct py_proc *proc;
	__u8 one = 1;

	if (ptgid == ctgid)
		return 0;	/* a new thread, not a new process */
	if (filter_pids && bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	/* a forked child shares its parent's image and addresses */
	proc = bpf_map_lookup_elem(&procs, &ptgid);
	if (proc && proc->state == PY_PROC_PYTHON &&
	    !bpf_map_update_elem(&procs, &ctgid, proc, BPF_ANY))
		emit_adopted(ctgid, proc);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(pysight_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 tid = BPF_CORE_READ(p, pid);
	struct py_proc *proc;
	bool told;

	if (sweep)
		sweep_exit(p);
	bpf_map_delete_elem(&tstates, &tid);
	bpf_map_delete_elem(&cpu_last, &tid);
	if (!bpf_task_storage_delete(&threads, p))
		count_n(CNT_THREAD_STATES, -1);
	/* the process ends with its last thread, which need not be the
	 * leader: do_exit() counts signal->live down before this point */
	if (BPF_CORE_READ(p, signal, live.counter))
		return 0;
	/* user space may hold an entry for a process pending or Python
	 * (ignored ones it forgets at once), or may be about to write one */
	proc = bpf_map_lookup_elem(&procs, &tgid);
	told = proc && proc->state != PY_PROC_IGNORED;
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&native_procs, &tgid);
	if (told || (filter_pids && bpf_map_lookup_elem(&targets, &tgid)))
		emit_proc_event(EV_EXIT, tgid, tid);
	bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

/* The interpreter's code_dealloc (PyCode_Type.tp_dealloc), per binary. */
SEC("uprobe")
int BPF_KPROBE(pysight_code_free, void *code)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 idx = code_slot_of(tgid, (__u64)code);
	struct code_slot *slot = bpf_map_lookup_elem(&code_checks, &idx);

	__sync_fetch_and_add(&code_frees, 1);
	if (slot && slot->code == (__u64)code && slot->tgid == tgid) {
		if (slot->tag &&
		    bpf_ktime_get_ns() - slot->seen_ns < CODE_RECENT_NS)
			emit_code(tgid, (__u64)code, slot->check);
		slot->tag = 0;
		count(CNT_CODE_FREED);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
