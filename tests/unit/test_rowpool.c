// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/native/rowpool.c: extents of the rows array, against a model
 * that marks each row, over random churn; and back to one free extent
 * when everything is given back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rowpool.h"

#define CAP	4096
#define LIVE	64

int main(void)
{
	struct rowpool *p = rowpool__new(CAP);
	static unsigned char owner[CAP];	/* 0: free, else live slot + 1 */
	uint32_t first[LIVE], len[LIVE], f, used = 0;
	int i, step, bad = 0, full = 0;

	CHECK(p && rowpool__largest_free(p) == CAP, "one free extent");
	CHECK(rowpool__alloc(p, 0, &f) == -EINVAL, "n 0");
	CHECK(rowpool__alloc(p, CAP + 1, &f) == -EINVAL, "over the capacity");
	memset(len, 0, sizeof(len));
	srand(29);
	for (step = 0; step < 20000; step++) {
		i = rand() % LIVE;
		if (len[i]) {
			rowpool__put(p, first[i], len[i]);
			memset(owner + first[i], 0, len[i]);
			used -= len[i];
			len[i] = 0;
			continue;
		}
		len[i] = 1 + (uint32_t)(rand() % 300);
		if (rowpool__alloc(p, len[i], &first[i])) {
			full++;
			bad += rowpool__largest_free(p) >= len[i];
			len[i] = 0;
			continue;
		}
		for (f = first[i]; f < first[i] + len[i]; f++) {
			bad += f >= CAP || owner[f] != 0;
			if (f < CAP)
				owner[f] = (unsigned char)(i + 1);
		}
		used += len[i];
		bad += rowpool__used(p) != used;
	}
	CHECK(!bad, "%d extents overlapped, or were refused with room", bad);
	CHECK(full > 0, "the pool filled at times (%d)", full);
	for (i = 0; i < LIVE; i++)
		if (len[i])
			rowpool__put(p, first[i], len[i]);
	CHECK(rowpool__used(p) == 0 && rowpool__largest_free(p) == CAP,
	      "all back: %u used, largest free %u", rowpool__used(p),
	      rowpool__largest_free(p));
	rowpool__free(p);
	return check_summary();
}
