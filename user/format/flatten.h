/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A profile as lines of frame texts, root first: the --group-by roots,
 * the stack, and for off-CPU time the pseudo-frame of its cause (below
 * the kernel frames, if any).  This is what a folded line reads and what
 * a flame graph draws, so every such writer builds its frames here.
 * Lines are sorted by their texts, a prefix first, so lines that read
 * alike are neighbours and a tree can be built in one pass.
 */
#ifndef __PYSIGHT_FLATTEN_H
#define __PYSIGHT_FLATTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile.h"

struct write_opts;
struct flatten;

/* What a line's frame is. */
enum flat_role {
	FLAT_ROOT = 0,		/* a --group-by label */
	FLAT_FRAME,		/* one of the stack's frames */
	FLAT_CAUSE,		/* the off-CPU cause: "[off-cpu: sleep]" */
};

/* Every entry of p as a line, sorted; o may be NULL.  -ENOMEM. */
int flatten__new(const struct profile *p, const struct write_opts *o,
		 struct flatten **out);
void flatten__free(struct flatten *fl);

size_t flatten__nlines(const struct flatten *fl);
const struct pentry *flatten__entry(const struct flatten *fl, size_t i);
int flatten__depth(const struct flatten *fl, size_t i);

/*
 * The d-th frame of line i as text, ';' and line breaks replaced (the
 * folded format's separators).  *frame, when asked for, is the stack's
 * frame, or NULL for a root label or the cause.  Texts live as long as fl.
 */
const char *flatten__text(struct flatten *fl, size_t i, int d,
			  const struct pframe **frame, int *role);

/* How many leading frames lines i and j share, by text. */
int flatten__common(struct flatten *fl, size_t i, size_t j);
/* Whether lines i and j read the same, frame for frame. */
bool flatten__same(struct flatten *fl, size_t i, size_t j);

#endif /* __PYSIGHT_FLATTEN_H */
