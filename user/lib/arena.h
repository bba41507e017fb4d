/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A bump allocator for objects that live and die together: a profile's
 * stacks and entries.  No per-object header, so 100k stacks cost what
 * they hold and not what malloc adds to each.
 */
#ifndef __PYSIGHT_ARENA_H
#define __PYSIGHT_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;
	size_t used;		/* bytes used in head */
};

/* Zeroed, 8-aligned memory of size bytes, or NULL. */
void *arena__alloc(struct arena *a, size_t size);
void arena__free(struct arena *a);

#endif /* __PYSIGHT_ARENA_H */
