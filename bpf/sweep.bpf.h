/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The sampled sweep (--offcpu=sweep): a thread's scheduler counts. */
#ifndef __PYSIGHT_SWEEP_BPF_H
#define __PYSIGHT_SWEEP_BPF_H

/*
 * What the scheduler counted for a thread, read at a tick: its CPU time,
 * its run-queue wait and its switches.  User space turns the deltas
 * between two ticks into exact CPU and run-queue time, and the rest of
 * the tick into blocked time; a thread whose switch count has not moved
 * still has the stack read last time.  run_delay needs CONFIG_SCHED_INFO
 * (schedstats): without it the field reads 0 and run-queue time counts
 * as blocked, which user space says at the start.
 */
static __always_inline void sweep_counts(struct task_struct *task,
					 struct thread_record *r)
{
	r->now = bpf_ktime_get_ns();
	r->start_time = BPF_CORE_READ(task, start_time);
	r->ran_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	if (bpf_core_field_exists(task->sched_info.run_delay))
		r->run_delay_ns = BPF_CORE_READ(task, sched_info.run_delay);
	r->switches = BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw);
}

#endif /* __PYSIGHT_SWEEP_BPF_H */
