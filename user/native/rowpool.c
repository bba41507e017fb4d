// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rowpool.h"

struct extent {
	uint32_t first, n;
};

struct rowpool {
	uint32_t cap, used;
	struct extent *free;	/* by first, none touching the next */
	size_t nfree, capfree;
};

struct rowpool *rowpool__new(uint32_t cap)
{
	struct rowpool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cap = cap;
	p->free = malloc(sizeof(*p->free));
	if (!p->free) {
		free(p);
		return NULL;
	}
	p->capfree = 1;
	if (cap)
		p->free[p->nfree++] = (struct extent){ 0, cap };
	return p;
}

void rowpool__free(struct rowpool *p)
{
	if (!p)
		return;
	free(p->free);
	free(p);
}

int rowpool__alloc(struct rowpool *p, uint32_t n, uint32_t *first)
{
	size_t i;

	if (!n || n > p->cap)
		return -EINVAL;
	for (i = 0; i < p->nfree; i++) {
		struct extent *e = &p->free[i];

		if (e->n < n)
			continue;
		*first = e->first;
		e->first += n;
		e->n -= n;
		if (!e->n) {
			memmove(e, e + 1, (p->nfree - i - 1) * sizeof(*e));
			p->nfree--;
		}
		p->used += n;
		return 0;
	}
	return -ENOSPC;
}

void rowpool__put(struct rowpool *p, uint32_t first, uint32_t n)
{
	size_t lo = 0, hi = p->nfree, i;
	struct extent *e;

	if (!n)
		return;
	while (lo < hi) {	/* the first free extent after first */
		size_t mid = lo + (hi - lo) / 2;

		if (p->free[mid].first < first)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	p->used -= n;
	if (i && p->free[i - 1].first + p->free[i - 1].n == first) {
		e = &p->free[i - 1];
		e->n += n;
		if (i < p->nfree && e->first + e->n == p->free[i].first) {
			e->n += p->free[i].n;
			memmove(&p->free[i], &p->free[i + 1],
				(p->nfree - i - 1) * sizeof(*e));
			p->nfree--;
		}
		return;
	}
	if (i < p->nfree && first + n == p->free[i].first) {
		p->free[i].first = first;
		p->free[i].n += n;
		return;
	}
	if (p->nfree == p->capfree) {
		size_t cap = p->capfree * 2;
		struct extent *v = realloc(p->free, cap * sizeof(*v));

		if (!v) {
			/* the rows stay lost to the pool, counted as used */
			p->used += n;
			return;
		}
		p->free = v;
		p->capfree = cap;
	}
	memmove(&p->free[i + 1], &p->free[i], (p->nfree - i) * sizeof(*e));
	p->free[i] = (struct extent){ first, n };
	p->nfree++;
}

uint32_t rowpool__capacity(const struct rowpool *p)
{
	return p->cap;
}

uint32_t rowpool__used(const struct rowpool *p)
{
	return p->used;
}

uint32_t rowpool__largest_free(const struct rowpool *p)
{
	uint32_t best = 0;
	size_t i;

	for (i = 0; i < p->nfree; i++)
		if (p->free[i].n > best)
			best = p->free[i].n;
	return best;
}
