// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"

void *htab__find(const struct htab *h, uint64_t hash,
		 bool (*eq)(const void *item, const void *key),
		 const void *key)
{
	size_t i;

	if (!h->cap)
		return NULL;
	for (i = hash & (h->cap - 1); h->slots[i]; i = (i + 1) & (h->cap - 1))
		if (eq(h->slots[i], key))
			return h->slots[i];
	return NULL;
}

static void place(void **slots, size_t cap, uint64_t hash, void *item)
{
	size_t i;

	for (i = hash & (cap - 1); slots[i]; i = (i + 1) & (cap - 1))
		;
	slots[i] = item;
}

/* Keep the load under 3/4: linear probing stays short there. */
static int grow(struct htab *h)
{
	size_t cap = h->cap ? h->cap * 2 : 64, i;
	void **slots;

	if (cap > SIZE_MAX / sizeof(void *))
		return -ENOMEM;
	slots = calloc(cap, sizeof(void *));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < h->cap; i++)
		if (h->slots[i])
			place(slots, cap, h->hash(h->slots[i]), h->slots[i]);
	free(h->slots);
	h->slots = slots;
	h->cap = cap;
	return 0;
}

int htab__insert(struct htab *h, uint64_t hash, void *item)
{
	if ((h->n + 1) * 4 > h->cap * 3 && grow(h))
		return -ENOMEM;
	place(h->slots, h->cap, hash, item);
	h->n++;
	return 0;
}

void htab__clear(struct htab *h)
{
	if (h->slots)
		memset(h->slots, 0, h->cap * sizeof(void *));
	h->n = 0;
}

void htab__free(struct htab *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->n = 0;
}
