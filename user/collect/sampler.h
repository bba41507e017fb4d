/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The BPF side's lifecycle: load, fill maps, attach, poll, tear down. */
#ifndef __PYSIGHT_SAMPLER_H
#define __PYSIGHT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

struct sampler;

struct sampler_opts {
	unsigned int rate_hz;
	int mode;		/* PYSIGHT_MODE_* (enum profile_mode) */
	bool filter_pids;	/* only pids added with sampler__add_target */
	bool gil_only;		/* on-CPU samples of the GIL holder alone */
	bool kernel_stacks;	/* kernel stacks of off-CPU intervals */
	bool sweep;		/* off-CPU time by the sampled sweep: no
				 * program on sched_switch or sys_exit */
	/* --native: the rows the unwind-row pool holds, and the processes
	 * whose mappings BPF keeps; 0: no native stacks */
	unsigned int native_rows;
	unsigned int native_procs;
	/* keep only tasks in these cgroup v2 trees */
	const struct cgroup_filter *cgroups;
	int ncgroups;
};

typedef int (*sampler_event_fn)(void *ctx, const void *data, size_t size);

/* Every call below takes a NULL sampler (a collector without BPF, in the
 * tests): it then does nothing, or returns -ENODEV. */

int sampler__open(const struct sampler_opts *opts, sampler_event_fn fn,
		  void *ctx, struct sampler **out, char *err, size_t errlen);
int sampler__start(struct sampler *s, char *err, size_t errlen);
/* Handle ring buffer events; <0 on error, else the number handled. */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Re-arm each CPU's timer with a random period (anti-aliasing). */
void sampler__jitter(struct sampler *s);

int sampler__set_proc(struct sampler *s, pid_t pid, const struct py_proc *p);
int sampler__set_binary(struct sampler *s, const struct py_binary_key *key,
			const struct py_proc *p);
/* Report code_dealloc of the interpreter file open at fd to BPF (once
 * per file), at a file offset already checked to be code.  pid: whose
 * inspection asks, for the per-process cap. */
int sampler__watch_code_free(struct sampler *s, const struct py_binary_key *key,
			     int fd, __u64 offset, pid_t pid);
/* An executable that is not Python: its execs need no question. */
int sampler__set_not_python(struct sampler *s, const struct py_binary_key *key);
void sampler__delete_proc(struct sampler *s, pid_t pid);
int sampler__get_proc(struct sampler *s, pid_t pid, struct py_proc *p);
/* Have BPF send this stack's frames again next time. */
void sampler__forget_stack(struct sampler *s, __u64 hash);
/* The same for the n stacks of a process that is gone, so that the map
 * holds nothing of it (and a pid reused soon finds nothing stale). */
void sampler__forget_stacks(struct sampler *s, const __u64 *hashes, size_t n);
int sampler__add_target(struct sampler *s, pid_t pid);

void sampler__counters(struct sampler *s, uint64_t out[CNT__MAX]);

/* --native: the row pool BPF searches, mapped here (its native_rows
 * rows), NULL without --native. */
struct unwind_row *sampler__native_rows(struct sampler *s, uint32_t *n);
/* A process's mappings for BPF's native walk, or none. */
int sampler__set_native(struct sampler *s, pid_t pid,
			const struct native_maps *m);
void sampler__delete_native(struct sampler *s, pid_t pid);

/*
 * Run the task iterator over the threads of Python processes (of tgid,
 * or all when 0): ITER_OPEN opens an off-CPU interval for each thread
 * off the CPU, ITER_REPORT calls fn for each thread and closes the
 * intervals it reports.  <0 on error, else the threads reported.
 */
typedef int (*sampler_thread_fn)(void *ctx, const struct thread_record *r);
int sampler__threads(struct sampler *s, int mode, pid_t tgid,
		     sampler_thread_fn fn, void *ctx);
/*
 * One tick of the sampled sweep: fn for every thread of the wanted Python
 * processes (all), or for those that switched or changed state since
 * they were last reported, with the scheduler's counts.  The same
 * iterator as ITER_LIST, its links kept from one tick to the next.
 * pids: the n Python processes known (NULL: more than
 * SAMPLER_SWEEP_PIDS), swept one by one while that is cheaper than a
 * pass over every task.
 */
#define SAMPLER_SWEEP_PIDS	16
int sampler__sweep(struct sampler *s, const pid_t *pids, int n, bool all,
		   sampler_thread_fn fn, void *ctx);
/* The sweep's records sent since its last tick (threads' exits), to the
 * last tick's fn: before a process's exit is handled. */
int sampler__sweep_drain(struct sampler *s);
/* Threads the sweep's ring had no room for (they wait a tick), so far. */
uint64_t sampler__sweep_capped(struct sampler *s);
/* A kernel stack taken for --kernel-stacks: addresses, leaf first. */
int sampler__kernel_stack(struct sampler *s, int id, __u64 *ips, int max);
/* The ktime clock of BPF events, now. */
uint64_t sampler__ktime_now(void);

/* How full each map is, for -v and the leak tests. */
struct sampler_sizes {
	unsigned int procs, binaries, not_python, targets, tstates;
	unsigned int stacks_seen, probes;
};

void sampler__map_sizes(struct sampler *s, struct sampler_sizes *out);
/* Overload: lower the rate while the ring buffer loses samples, raise it
 * back when it keeps up (call often: it looks every 200 ms). */
void sampler__adapt(struct sampler *s);
/* Overload so far: the lowest share of the rate sampled, the seconds
 * spent below it, and the seconds of the rate not sampled (the integral
 * of 1 - share: over a span, the share sampled is 1 - its growth / the
 * span's length). */
void sampler__slowed(struct sampler *s, double *least_keep, double *slow_s,
		     double *unsampled_s);
void sampler__destroy(struct sampler *s);

#endif /* __PYSIGHT_SAMPLER_H */
