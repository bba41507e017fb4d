// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Empty programs on pysight's two hot hooks: what any program costs there
 * on this machine, bpf_stats' own clock reads included (tools/bench,
 * section offcpu).  The floor under pysight's early returns.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sched_switch")
int BPF_PROG(empty_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(empty_sys_exit)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
