// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define BLOCK_SIZE	(64 << 10)

struct arena_block {
	struct arena_block *next;
	size_t size;
	char data[];
};

void *arena__alloc(struct arena *a, size_t size)
{
	struct arena_block *b;
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (!size || size > SIZE_MAX / 2)
		return NULL;
	if (!a->head || a->used + size > a->head->size) {
		size_t cap = size > BLOCK_SIZE ? size : BLOCK_SIZE;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->size = cap;
		b->next = a->head;
		a->head = b;
		a->used = 0;
	}
	p = a->head->data + a->used;
	a->used += size;
	memset(p, 0, size);
	return p;
}

void arena__free(struct arena *a)
{
	struct arena_block *b = a->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
	a->used = 0;
}
