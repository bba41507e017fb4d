/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Aggregated samples: interned frames, stacks, and weights per thread. */
#ifndef __PYSIGHT_PROFILE_H
#define __PYSIGHT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum pframe_kind {
	PFRAME_PYTHON = 0,	/* qualname (file:line) */
	PFRAME_PSEUDO,		/* [truncated], [unknown], ... */
	PFRAME_THREAD,		/* thread TID (name) */
};

struct pframe {
	const char *name;
	const char *file;	/* NULL for pseudo frames */
	int line;		/* 0 when unknown or not wanted */
	int kind;		/* enum pframe_kind */
	const char *label;	/* how folded output spells it */
};

struct profile;

struct profile *profile__new(bool threads);
void profile__free(struct profile *p);

/* The one frame with these fields, created on first use. */
const struct pframe *profile__frame(struct profile *p, const char *name,
				    const char *file, int line, int kind);

/* Remember a symbolised stack, frames root first. */
int profile__add_stack(struct profile *p, pid_t pid, uint64_t hash,
		       const struct pframe **frames, int n);
bool profile__has_stack(struct profile *p, pid_t pid, uint64_t hash);

/* Add weight to a known stack; -ENOENT when the stack is unknown. */
int profile__add_sample(struct profile *p, pid_t pid, uint64_t hash,
			pid_t tid, const char *comm, uint64_t weight);

/* One (stack, thread) entry: thread is the root frame when the profile
 * keeps threads, else NULL.  frames point into the profile. */
struct psample {
	const struct pframe *thread;
	const struct pframe *const *frames;	/* root first */
	int nframes;
	uint64_t weight;
};

/* Every entry, in no order, in one array the caller frees: writers can
 * sort and stream without copying stacks. */
int profile__samples(struct profile *p, struct psample **out, size_t *n);

uint64_t profile__total(const struct profile *p);
unsigned int profile__nstacks(const struct profile *p);
unsigned int profile__nthreads(const struct profile *p);
unsigned int profile__nprocs(const struct profile *p);

#endif /* __PYSIGHT_PROFILE_H */
