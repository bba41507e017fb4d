/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The sampled sweep (--offcpu=sweep): a thread's scheduler counts. */
#ifndef __PYSIGHT_SWEEP_BPF_H
#define __PYSIGHT_SWEEP_BPF_H

/*
 * What the scheduler counted for a thread, read at a tick: its CPU time,
 * its run-queue wait and its switches.  User space turns the deltas
 * between two ticks into exact CPU and run-queue time, and the rest of
 * the tick into blocked time; a thread whose switch count has not moved
 * still has the stack read last time.  The time is the pass's: a pass
 * takes tens of microseconds, and each thread's deltas add up to the
 * same total whichever instant of it stands for the pass.  run_delay needs CONFIG_SCHED_INFO
 * (schedstats): without it the field reads 0 and run-queue time counts
 * as blocked, which user space says at the start.  task is the
 * iterator's, a trusted pointer: its fields are plain loads, not a
 * helper call each (0.54 us a task before, with the rest of the record).
 */
static __always_inline void sweep_counts(struct task_struct *task,
					 struct thread_record *r)
{
	if (!pass_now)
		pass_now = bpf_ktime_get_ns();
	r->now = pass_now;
	r->start_time = task->start_time;
	r->ran_ns = task->se.sum_exec_runtime;
	if (bpf_core_field_exists(task->sched_info.run_delay))
		r->run_delay_ns = task->sched_info.run_delay;
	r->switches = task->nvcsw + task->nivcsw;
}

#endif /* __PYSIGHT_SWEEP_BPF_H */
