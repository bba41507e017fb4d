/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the unit tests that read fixtures and mutate them share, whatever
 * harness they count with: a fixture file's bytes, and one reproducible
 * random sequence.
 */
#ifndef __PYSIGHT_TESTKIT_H
#define __PYSIGHT_TESTKIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The first cap bytes of dir/name into buf, their count in *len: 0, or
 * -1 when the file cannot be opened. */
static inline int testkit_load(const char *dir, const char *name, void *buf,
			       size_t cap, size_t *len)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "rb");
	if (!fp)
		return -1;
	*len = fread(buf, 1, cap, fp);
	fclose(fp);
	return 0;
}

/* xorshift64: reproducible, no libc state, the same run after run. */
static inline uint64_t rnd(void)
{
	static uint64_t state = 0x9e3779b97f4a7c15ULL;

	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

#endif /* __PYSIGHT_TESTKIT_H */
