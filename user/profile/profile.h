/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The profile model every command shares: data, not text.
 *
 * A profile interns frames (qualname, file, line, first line), stacks
 * (frames root first), threads (process and thread ids and names) and
 * cgroups, and adds weight to entries keyed by (stack, thread, cgroup,
 * kind).  Writers, report and diff format these fields themselves.
 * Interned objects live as long as the profile, so a collector can keep
 * pointers to them across profile__reset().
 */
#ifndef __PYSIGHT_PROFILE_H
#define __PYSIGHT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"	/* enum sample_kind */

/* What an entry's weight measures. */
enum profile_unit {
	UNIT_SAMPLES = 0,
	UNIT_NANOSECONDS,
};

/* What the profile records (record --mode). */
enum profile_mode {
	MODE_CPU = PYSIGHT_MODE_CPU,	/* on-CPU samples */
	MODE_WALL = PYSIGHT_MODE_WALL,	/* on-CPU and off-CPU time */
	MODE_OFF = PYSIGHT_MODE_OFF,	/* off-CPU time alone */
};

enum pframe_kind {
	PFRAME_PYTHON = 0,	/* qualname (file:line) */
	PFRAME_PSEUDO,		/* [truncated], [unknown], [partial stack] */
	PFRAME_KERNEL,		/* a kernel function */
	PFRAME_OTHER,		/* a frame read from a file, of unknown kind */
	PFRAME_NATIVE,		/* --native: "function [library]" */
};

/* The formats with mappings (pprof, OTLP) give each native binary's
 * mapping a range of addresses of its own, this long: the n-th from
 * n * PFRAME_MAPPING_SPAN.  A native frame's address there, less its
 * mapping's start, is its pframe's addr. */
#define PFRAME_MAPPING_SPAN	(1ULL << 40)

/* A kernel frame's name when its symbol is unknown, and its file in every
 * format that has files (pprof, speedscope, OTLP): how a reader tells a
 * kernel frame from a Python one. */
#define PFRAME_KERNEL_FILE	"[kernel]"

/* Where a Python frame's code lives, read from its full file name, which
 * the profile may keep only shortened (filename__shorten). */
enum pframe_origin {
	ORIGIN_UNKNOWN = 0,	/* not said: read from a file, or not Python */
	ORIGIN_OWN,		/* the application's code */
	ORIGIN_STDLIB,		/* under lib/python3.X/ */
	ORIGIN_SITE,		/* under site-packages/ or dist-packages/ */
};

struct pframe {
	const char *name;	/* qualname, or the pseudo-frame's text */
	const char *file;	/* NULL when the frame has none */
	int line;		/* 0 when unknown or not wanted */
	int firstline;		/* the code's first line, 0 when unknown */
	int kind;		/* enum pframe_kind */
	unsigned int id;	/* 0 .. profile__nframes() - 1 */
	int origin;		/* enum pframe_origin, not part of its identity */
	/* PFRAME_NATIVE, for the formats with mappings (pprof, OTLP): its
	 * binary's file name and build-id (hex, "" when none), and its
	 * address there (the binary's own virtual address); NULL and 0
	 * otherwise.  Not part of its identity either. */
	const char *binary, *build_id;
	uint64_t addr;
};

struct pstack {
	unsigned int id;	/* 0 .. profile__nstacks() - 1 */
	unsigned int n;
	const struct pframe *frames[];	/* root first */
};

/* A thread, and the process it belongs to.  Any field may be unknown:
 * 0 or NULL (a profile read from a file has only what the file says). */
struct pthread {
	pid_t pid;		/* host pid */
	pid_t ns_pid;		/* the pid the process sees, if it differs */
	pid_t tid;		/* host tid */
	const char *process;	/* process name */
	const char *name;	/* thread name */
	unsigned int id;
};

struct pcgroup {
	uint64_t id;		/* cgroup v2 id (inode), 0 when unknown */
	const char *path;	/* relative to the v2 mount, or NULL */
	const char *container;	/* the container's id (64 hex), or NULL */
	const char *pod;	/* its pod's uid, or NULL */
	unsigned int num;
};

/* One (stack, thread, cgroup, kind) and what it weighs. */
struct pentry {
	const struct pstack *stack;
	const struct pthread *thread;	/* NULL when unknown */
	const struct pcgroup *cgroup;	/* NULL when unknown */
	int kind;			/* enum sample_kind */
	uint64_t count;			/* events: samples or blocked intervals */
	uint64_t weight;		/* in the profile's unit */
};

/* Facts about the recording, for titles and headers. */
struct profile_meta {
	int mode;			/* enum profile_mode */
	double rate_hz;			/* samples a second of CPU, as
				 * sampled (below -r when the
				 * sampler was slowed); 0: unknown */
	double duration_s;		/* 0 when unknown */
	uint64_t start_unix_ns;		/* wall-clock start, 0 when unknown */
	char target[256];		/* the command, the pids, or "" for all */
	const char *format;		/* the file it was read from: "pprof" */
};

struct profile;

struct profile *profile__new(enum profile_unit unit);
void profile__free(struct profile *p);

enum profile_unit profile__unit(const struct profile *p);
struct profile_meta *profile__meta(struct profile *p);

/* The one frame with these fields, created on first use; NULL on ENOMEM. */
const struct pframe *profile__frame(struct profile *p, const char *name,
				    const char *file, int line, int firstline,
				    int kind);
/* Say which binary f's native code is in, if nobody said so yet. */
void profile__frame_native(struct profile *p, const struct pframe *f,
			   const char *binary, const char *build_id,
			   uint64_t addr);
/* f's copy in p, all it says kept (f may be another profile's). */
const struct pframe *profile__copy_frame(struct profile *p,
					 const struct pframe *f);
/* Say where f's code lives, if nobody said so yet. */
void profile__frame_origin(struct profile *p, const struct pframe *f,
			   int origin);
/* The one stack of these frames (root first); NULL on ENOMEM. */
const struct pstack *profile__stack(struct profile *p,
				    const struct pframe *const *frames,
				    unsigned int n);
/* The one thread record with these fields; strings may be NULL. */
const struct pthread *profile__thread(struct profile *p, pid_t pid,
				      pid_t ns_pid, pid_t tid,
				      const char *process, const char *name);
/*
 * Give t, a thread of p, another name: its samples so far go with it.
 * -EEXIST when p has that thread under that name already, -ENOMEM.
 */
int profile__rename_thread(struct profile *p, const struct pthread *t,
			   const char *name);
/* A cgroup, by what is known of it: any field may be 0 or NULL. */
const struct pcgroup *profile__cgroup(struct profile *p, uint64_t id,
				      const char *path, const char *container,
				      const char *pod);

/* Add count events of weight to an entry; -ENOMEM. */
int profile__add(struct profile *p, const struct pstack *stack,
		 const struct pthread *thread, const struct pcgroup *cgroup,
		 int kind, uint64_t count, uint64_t weight);

/* Add e (an entry of another profile) to p under stack s (one of p's):
 * e's thread and cgroup interned in p, its kind and weights; -ENOMEM. */
int profile__add_from(struct profile *p, const struct pstack *s,
		      const struct pentry *e);

/* s (a stack of another profile) interned in p, its frames with their
 * origins; NULL on ENOMEM. */
const struct pstack *profile__copy_stack(struct profile *p,
					 const struct pstack *s);
/* The period of a rate (Hz, above 0) in whole nanoseconds: 1e9 / hz, cut
 * to an integer, except that a rate whose period is a whole number but
 * for the rounding of doubles (1e9 / 9.000000000000002) gets that number,
 * so a rate read back from a period, or scaled by r / r, keeps it. */
int64_t profile__period_ns(double hz);
/* A copy of p (a profile counted in samples) where each sample is kept
 * with probability keep, as if it had been taken at keep times the rate:
 * the counts are binomial draws, so shares and totals stay unbiased;
 * meta's rate is scaled.  *seed is the generator's state.  NULL on
 * ENOMEM, or when p is not counted in samples. */
struct profile *profile__thin(const struct profile *p, double keep,
			      uint64_t *seed);
/* How many strings, frames, stacks, threads and cgroups p interns: what
 * profile__reset() keeps. */
unsigned int profile__ninterned(const struct profile *p);

/* Drop every entry (weights, totals), keep what is interned. */
void profile__reset(struct profile *p);

/* Every entry, in no order, in one array of pointers the caller frees;
 * the entries stay the profile's. */
int profile__entries(const struct profile *p, const struct pentry ***out,
		     size_t *n);

/* sum of weights, task entries' apart (profile__kind_is_task) */
uint64_t profile__total(const struct profile *p);
uint64_t profile__total_kind(const struct profile *p, int kind);
unsigned int profile__nframes(const struct profile *p);
unsigned int profile__nstacks(const struct profile *p);
unsigned int profile__nentries(const struct profile *p);
/* Distinct threads and processes with weight. */
unsigned int profile__nthreads(const struct profile *p);
unsigned int profile__nprocs(const struct profile *p);

/* Where the off-CPU cause's pseudo-frame goes in an entry's stack: the
 * index of the first kernel frame (under the Python frames, above the
 * kernel's), or n when there are none; -1 for on-CPU entries. */
int pentry__cause_at(const struct pentry *e);

/* "cpu", "sleep", ... and the pseudo-frame that ends an off-CPU stack:
 * "[off-cpu: sleep]", "[runqueue]"; NULL for KIND_CPU. */
const char *profile__kind_name(int kind);
const char *profile__kind_frame(int kind);
/* Is it an asyncio task's kind (KIND_AWAIT_*): weight of a task's own
 * wall time, which never adds into a thread's or the profile's total? */
bool profile__kind_is_task(int kind);
/* The root that task entries hang under in folded output and its SVG. */
#define PROFILE_TASKS_ROOT	"[asyncio tasks]"
/* The sample type of task time (nanoseconds) in pprof and OTLP: a task's
 * sample has it alone, 0 in every other type. */
#define PROFILE_TASK_TYPE	"task_wall"
/* Does a frame's text read as --native's, "function [library]" or
 * "[library]+0x1a2b"?  How a profile read from a file tells them. */
bool profile__native_name(const char *text);

/* The kind a pseudo-frame's text names, or -1. */
int profile__kind_of_frame(const char *text);
const char *profile__mode_name(int mode);

#endif /* __PYSIGHT_PROFILE_H */
