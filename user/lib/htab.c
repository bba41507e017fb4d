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

static bool full(size_t n, size_t cap)
{
	return (n + 1) * 4 > cap * 3;
}

/* The next capacity, 0 when its slots would not fit in a size_t. */
static size_t next_cap(size_t cap, size_t slot_size)
{
	cap = cap ? cap * 2 : 64;
	return cap > SIZE_MAX / slot_size ? 0 : cap;
}

static int grow(struct htab *h)
{
	size_t cap = next_cap(h->cap, sizeof(void *)), i;
	void **slots;

	if (!cap)
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
	if (full(h->n, h->cap) && grow(h))
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

static struct htab64_slot *slot64(struct htab64_slot *slots, size_t cap,
				  uint64_t key)
{
	size_t i;

	for (i = key & (cap - 1); slots[i].value; i = (i + 1) & (cap - 1))
		if (slots[i].key == key)
			break;
	return &slots[i];
}

void *htab64__get(const struct htab64 *h, uint64_t key)
{
	return h->cap ? slot64(h->slots, h->cap, key)->value : NULL;
}

static int grow64(struct htab64 *h)
{
	size_t cap = next_cap(h->cap, sizeof(*h->slots)), i;
	struct htab64_slot *slots;

	if (!cap || !(slots = calloc(cap, sizeof(*slots))))
		return -ENOMEM;
	for (i = 0; i < h->cap; i++)
		if (h->slots[i].value)
			*slot64(slots, cap, h->slots[i].key) = h->slots[i];
	free(h->slots);
	h->slots = slots;
	h->cap = cap;
	return 0;
}

int htab64__set(struct htab64 *h, uint64_t key, void *value)
{
	struct htab64_slot *s;

	if (full(h->n, h->cap) && grow64(h))
		return -ENOMEM;
	s = slot64(h->slots, h->cap, key);
	if (!s->value)
		h->n++;
	s->key = key;
	s->value = value;
	return 0;
}

void htab64__free(struct htab64 *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->n = 0;
}
