/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Places for binaries' unwind rows in one fixed array, the one BPF
 * searches (mapped into pysight's memory): a binary's rows are one
 * extent of it, given back when the binary goes.  First fit over the
 * free extents in address order, neighbours merged, so a host's churn
 * of short processes leaves no holes behind.
 */
#ifndef __PYSIGHT_ROWPOOL_H
#define __PYSIGHT_ROWPOOL_H

#include <stddef.h>
#include <stdint.h>

struct rowpool;

/* A pool of cap rows: NULL when out of memory. */
struct rowpool *rowpool__new(uint32_t cap);
void rowpool__free(struct rowpool *p);

/* n consecutive rows: 0 with *first set, -ENOSPC when no free extent
 * is that long, -EINVAL for n 0 or over the capacity, -ENOMEM. */
int rowpool__alloc(struct rowpool *p, uint32_t n, uint32_t *first);
/* Give back rows [first, first + n), as rowpool__alloc gave them. */
void rowpool__put(struct rowpool *p, uint32_t first, uint32_t n);

/* Rows in use, and the longest free extent. */
uint32_t rowpool__used(const struct rowpool *p);
uint32_t rowpool__capacity(const struct rowpool *p);
uint32_t rowpool__largest_free(const struct rowpool *p);

#endif /* __PYSIGHT_ROWPOOL_H */
