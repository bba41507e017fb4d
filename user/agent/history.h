/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's recent past: the collector's profile cut into slices of a
 * second or so, each a copy of its entries (which point at the frames,
 * stacks and threads the collector's profile interns for its whole life),
 * kept for a span of seconds.  Exports and snapshots are built from it:
 * the slices between two times, filtered, re-interned into a fresh
 * profile whose ids are dense, as writers want.
 */
#ifndef __PYSIGHT_HISTORY_H
#define __PYSIGHT_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "profile.h"

struct history;

/* What to take from a span: every entry when all fields are 0/NULL. */
struct history_filter {
	pid_t pid;
	const char *cgroup;		/* a path under the v2 mount, or a prefix */
	const char *container;		/* an id, or a prefix of at least 4 */
};

struct history *history__new(double span_s);
void history__free(struct history *h);

/* Move p's entries into a slice for [start_ns, end_ns) (wall clock) and
 * reset p; drop slices that ended more than the span ago.  keep is the
 * share of the rate the sampler took meanwhile (1 unless slowed by
 * overload).  -ENOMEM. */
int history__cut(struct history *h, struct profile *p, uint64_t start_ns,
		 uint64_t end_ns, double keep);

/* What a collect covered: from first_ns to last_ns (0 when nothing), at
 * this share of the rate on average. */
struct history_span {
	uint64_t first_ns, last_ns;
	double keep;
};

/* Entries of the slices that end after since_ns and no later than
 * until_ns, filtered, added into q (a new profile of p's unit). */
int history__collect(struct history *h, uint64_t since_ns, uint64_t until_ns,
		     const struct history_filter *f, struct profile *q,
		     struct history_span *span);
/* Profiles retired and not yet freed, at most. */
#define HISTORY_MAX_RETIRED	4

/* Take p, a profile slices were cut from and no later one will be (the
 * collector's, replaced by collector__rebase), and free it once the last
 * slice cut from it has gone; false, p not taken, when
 * HISTORY_MAX_RETIRED wait already. */
bool history__retire(struct history *h, struct profile *p);
int history__nretired(const struct history *h);
/* Entries kept, and their bytes, for -v and the metrics. */
void history__size(struct history *h, size_t *entries, size_t *bytes);

#endif /* __PYSIGHT_HISTORY_H */
