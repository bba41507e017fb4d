/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one path from BPF events to a profile, which every command uses:
 * it owns the sampler (the BPF side), the registry of processes, the
 * symboliser and the profile, and turns each ring-buffer record into
 * weight on a symbolised stack.
 */
#ifndef __PYSIGHT_COLLECTOR_H
#define __PYSIGHT_COLLECTOR_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"
#include "profile.h"
#include "sampler.h"
#include "threadnames.h"

/* --asyncio, wall and off modes: tasks read in full per process and
 * sweep tick; of more, a random share is read */
#define COLLECTOR_TASKS_PER_TICK	100

struct collector_opts {
	unsigned int rate_hz;
	int mode;		/* enum profile_mode */
	bool filter_pids;	/* only targets added, and their children */
	bool nolineno;		/* frames without lines */
	bool full_filenames;	/* else py-spy's short names */
	bool gil_only;		/* on-CPU samples of the GIL holder alone */
	bool kernel_stacks;	/* kernel stacks below off-CPU causes */
	bool sweep;		/* off-CPU time by the sampled sweep (sweep.c),
				 * not by tracing switches and syscalls */
	uint64_t sweep_reread_ns;	/* sweep__set_reread(), 0: each move */
	/* ticks wait at least this many times their CPU time (full ticks
	 * twice that): the sweep's share of a CPU is at most 1.5 / it;
	 * 0: SWEEP_DUTY, 150 */
	unsigned int sweep_duty;
	/* --asyncio: a sample's running asyncio task (3.14+) and the tasks
	 * awaiting it replace its event loop's frames */
	bool asyncio;
	/* --native: native frames between the Python ones; --native-all:
	 * the interpreter's own frames kept too */
	bool native, native_all;
	const struct cgroup_filter *cgroups;	/* --cgroup, --container */
	int ncgroups;
};

struct collector_stats {
	uint64_t counters[CNT__MAX];	/* the BPF side's */
	uint64_t unknown_stacks;	/* a stack's id came before its frames */
	uint64_t unknown_frames;	/* frames that could not be named */
	uint64_t stale_symbols;		/* code objects freed before naming */
	uint64_t codes_named;		/* of those, named from their dealloc */
	uint64_t forgotten_stacks;	/* stacks BPF was asked to resend */
	uint64_t name_reads;		/* readings of Python's thread names */
	/* the sampled sweep: ticks, their time in all and in user-space
	 * stack reads (ns), thread records, stack reads, and those read in
	 * one go as the thread's last read planned, and those dropped: the
	 * thread had run since the pass that saw it blocked */
	uint64_t sweeps, sweep_ns, sweep_read_ns, sweep_records, sweep_reads;
	uint64_t sweep_reads_again, sweep_reads_stale;
	/* ticks that waited longer than the rate asked, to keep the sweep
	 * under 1% of a CPU, and the longest tick (ns) */
	uint64_t sweep_slowed, sweep_max_ns;
	uint64_t sweep_capped;	/* threads left to the next tick: no room */
	/* --asyncio: samples shown as their task's stack, and those whose
	 * chain of awaiting tasks was cut short */
	uint64_t task_samples, task_cut;
	/* wall and off modes: reads of every task (ticks), their time (ns),
	 * those that read a random share, tasks read, task samples added */
	uint64_t task_ticks, task_ns, task_sampled, task_reads, task_adds;
	/* --native: stacks whose native walk ended short (by why: enum
	 * native_stop), readings of processes' mappings, binaries held,
	 * their bytes, and those whose rows found no room */
	uint64_t native_stops[NATIVE__MAX];
	uint64_t native_reads;
	size_t native_binaries, native_bytes, native_unplaced;
	unsigned int native_unmapped;	/* of the binaries, kept unmapped */
	uint64_t native_loaded;		/* binaries read, in all */
	unsigned int npython;		/* Python processes seen */
	const char *first_error;	/* why a process was skipped, or NULL */
	/* what every command reports, derived once here */
	uint64_t errors;		/* samples whose stack is an error */
	uint64_t lost;			/* ring buffer full, and ids never named */
	/* how much is held, for -v and the tests that look for leaks */
	struct sampler_sizes maps;
	unsigned int registry, procs, symbols, stacks;
	/* of stacks_seen, the hashes of processes still held: the rest
	 * would be hashes no exit will forget */
	unsigned int stacks_seen_held;
	unsigned int interned;		/* what the profile interns: profile__ninterned */
	double least_keep, slow_s;	/* overload: sampler__slowed */
	unsigned long rss_kib;
};

struct collector;
struct pyproc;

/* Load the BPF side; -errno with a one-line reason in err. */
int collector__open(const struct collector_opts *o, struct collector **out,
		    char *err, size_t errlen);
/* Without BPF: events come through collector__handle() alone (tests). */
struct collector *collector__new_offline(const struct collector_opts *o);
void collector__free(struct collector *c);

/* -p PID: a Python process to sample; -errno and why in err. */
int collector__add_pid(struct collector *c, pid_t pid, char *err,
		       size_t errlen);
/* A process to sample once it runs Python, and its children. */
int collector__add_target(struct collector *c, pid_t pid);
/* pid is about to exec path: see registry__expect_exe(). */
int collector__expect_exe(struct collector *c, const char *path, pid_t pid);
int collector__start(struct collector *c, char *err, size_t errlen);
/* Read what is left in the ring, and name the samples held for their
 * code's EV_CODE as well as can be now: before the last profile. */
void collector__flush(struct collector *c);
/* The recording ends: flush, and close the off-CPU intervals still open,
 * with the stacks of their threads read from user space. */
int collector__finish(struct collector *c);

/* Wait up to max_ms for events and handle them: how many, or <0. */
int collector__poll(struct collector *c, int max_ms);
/* What the ring holds now, without waiting and without the registry's
 * tick: before an interval is cut, so that it holds what was sampled up
 * to the cut, not up to the last poll.  How many, or <0. */
int collector__drain(struct collector *c);
/* One ring-buffer record: a sample or a process event. */
int collector__handle(struct collector *c, const void *data, size_t size);

struct stackread;
struct pyproc;

/* One thread of a Python process as it is now, for dump. */
struct thread_snapshot {
	pid_t pid, tid;
	char name[THREADNAME_LEN];	/* Python's name for it, else its comm */
	bool on_cpu;
	int kind;			/* why it is off the CPU (enum sample_kind) */
	bool holds_gil;
	bool torn;			/* its stack kept changing as it was read */
	int status;			/* enum sample_status of the read */
	const struct pstack *stack;	/* root first; NULL when no frames */
	const struct stackread *raw;	/* the frames as read, leaf first */
	const struct pyproc *proc;
};

typedef int (*collector_thread_fn)(void *ctx, const struct thread_snapshot *t);

/*
 * Every thread of Python process pid (of every known one when 0), its
 * stack read from user space while it runs on: re-read until two reads
 * agree, else marked torn.  Calls fn for each; returns the number of
 * threads or -errno.
 */
int collector__snapshot(struct collector *c, pid_t pid,
			collector_thread_fn fn, void *ctx);
/* Find every Python process on the host now. */
void collector__scan(struct collector *c);

/* Frames of process pid read from user space (leaf first), named as a
 * sample's are: root first, marked at the root when status says they are
 * not whole.  NULL for an unknown process, or on ENOMEM. */
const struct pstack *collector__name_frames(struct collector *c, pid_t pid,
					    int status,
					    const struct py_frame *frames,
					    int nframes);

struct profile *collector__profile(struct collector *c);
/* Intern from now on in a fresh profile that holds only the named stacks
 * of live processes, so what exited processes and threads left behind
 * does not pile up in a long run.  The
 * profile must have no entries (cut it first).  The old one, which the
 * caller frees once nothing points into it, or NULL (nothing changed). */
struct profile *collector__rebase(struct collector *c);
/* A Python process the collector knows, or NULL. */
const struct pyproc *collector__process(struct collector *c, pid_t pid);
void collector__stats(struct collector *c, struct collector_stats *st);
/* The sampler's seconds of the rate not sampled so far (overload):
 * cheaper than collector__stats, for each slice. */
double collector__unsampled_s(struct collector *c);
/* The share of the rate sampled over span_s seconds in which
 * collector__unsampled_s grew by unsampled_s: 1 unless slowed, never
 * below 1%. */
static inline double collector__sampled_share(double unsampled_s,
					      double span_s)
{
	if (span_s <= 0 || unsampled_s <= 0)
		return 1.0;
	return fmax(0.01, 1.0 - unsampled_s / span_s);
}
/* "complete", "frame read fault", ... */
const char *collector__status_name(int status);

#endif /* __PYSIGHT_COLLECTOR_H */
