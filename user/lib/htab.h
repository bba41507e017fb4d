/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An open-addressing set of pointers, 8 bytes a slot: for the tables
 * that grow with the number of stacks, where a uthash handle (56 bytes
 * an item) would be most of the memory.  Items are never removed one by
 * one; the whole set is cleared.  The load stays under 3/4, where
 * linear probing stays short.
 */
#ifndef __PYSIGHT_HTAB_H
#define __PYSIGHT_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct htab {
	void **slots;
	size_t cap;		/* a power of 2, or 0 */
	size_t n;
	uint64_t (*hash)(const void *item);	/* for growing */
};

/* The item equal to key under eq, among those of this hash; or NULL. */
void *htab__find(const struct htab *h, uint64_t hash,
		 bool (*eq)(const void *item, const void *key),
		 const void *key);
/* Add an item not in the set; -ENOMEM. */
int htab__insert(struct htab *h, uint64_t hash, void *item);
void htab__clear(struct htab *h);
void htab__free(struct htab *h);

/*
 * The same probing, keyed by a 64-bit hash that is the identity itself
 * (BPF's hash of a stack): 16 bytes a slot and no comparison function.
 * A slot is empty when its value is NULL; walk slots[0..cap) to visit.
 */
struct htab64_slot {
	uint64_t key;
	void *value;
};

struct htab64 {
	struct htab64_slot *slots;
	size_t cap;		/* a power of 2, or 0 */
	size_t n;
};

/* key's value, or NULL. */
void *htab64__get(const struct htab64 *h, uint64_t key);
/* Set key to value (not NULL), replacing any; -ENOMEM. */
int htab64__set(struct htab64 *h, uint64_t key, void *value);
void htab64__free(struct htab64 *h);

#endif /* __PYSIGHT_HTAB_H */
