/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a perf sample does with its stack: the GIL test and wall weight. */
#ifndef __PYSIGHT_ONCPU_BPF_H
#define __PYSIGHT_ONCPU_BPF_H

/* Does this thread hold the GIL?  py-spy's test: locked, and it was the
 * last to take it. */
static __always_inline bool holds_gil(struct py_proc *proc, __u64 tstate)
{
	const struct py_offsets *off = &proc->off;
	__u64 gil = gil_addr(proc), holder = 0;
	__u32 locked = 0;

	if (!gil || !tstate ||
	    bpf_probe_read_user(&locked, sizeof(locked),
				(void *)(gil + off->gil_locked)) ||
	    read_u64(gil + off->gil_last_holder, &holder))
		return false;
	return locked && holder == tstate;
}

/*
 * CPU time the thread used since its last sample, from the scheduler's
 * own count; the period for a thread's first sample.  The count moves at
 * ticks and switches, so two samples within one tick see it still: that
 * is 0, not a period (a period there counted CPU time twice, +3% seen).
 */
static __always_inline __u64 cpu_weight(struct task_struct *task, __u32 tid)
{
	__u64 now = BPF_CORE_READ(task, se.sum_exec_runtime), *last, w;

	last = bpf_map_lookup_elem(&cpu_last, &tid);
	w = !last ? period_ns : now > *last ? now - *last : 0;
	if (!task_exiting(task))
		bpf_map_update_elem(&cpu_last, &tid, &now, BPF_ANY);
	return w;
}

/* What a perf sample does with the stack collect_stack() put in b. */
static __always_inline void sample_on_cpu(struct sample_buf *b,
					  struct py_proc *proc,
					  struct task_struct *task,
					  __u32 tgid, __u32 tid)
{
	struct thread_state *t;

	if (b->ev.status < ST__MAX)
		count(CNT_STATUS_BASE + b->ev.status);
	if (b->ev.status == ST_NO_TSTATE || b->ev.status == ST_IDLE)
		return;
	if (gil_only && !holds_gil(proc, b->tstate))
		return;
	emit_sample(b, tgid, tid, KIND_CPU,
		    mode != PYSIGHT_MODE_CPU ? cpu_weight(task, tid) : 0, -1);
	if (mode == PYSIGHT_MODE_CPU)
		return;
	/* an off-CPU interval that ended without a syscall exit
	 * (preempted, a page fault): its stack is this one */
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (t && t->pending) {
		emit_sample(b, tgid, tid, t->pending_kind, t->pending,
			    t->pending_kstack);
		t->pending = 0;
		count(CNT_OFF_WALKED);
	}
}

#endif /* __PYSIGHT_ONCPU_BPF_H */
