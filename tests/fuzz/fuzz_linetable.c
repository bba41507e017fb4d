// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for linetable__line().
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iuser \
 *         tests/fuzz/fuzz_linetable.c user/python/linetable.c -o /tmp/fuzz_lt
 *   mkdir -p /tmp/lt-corpus && /tmp/fuzz_lt -max_total_time=120 /tmp/lt-corpus
 *
 * Input layout: byte 0 picks the minor, bytes 1-4 the firstlineno,
 * bytes 5-8 lasti (both little endian), the rest is the table. The
 * table is copied into a heap block of exactly its size so that ASan
 * catches a read even one byte past the end.
 */
#include <stdlib.h>
#include <string.h>

#include "linetable.h"

#define HDR_LEN 9

static int32_t get_le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Cover every version's decoder plus a few invalid minors. */
static int pick_minor(uint8_t b)
{
	return (int)(b % (LINETABLE_MAX_MINOR + 4)) - 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int32_t probes[] = { 0, 1, 2, -1, 64, INT32_MAX };
	int minor, first, lasti, line;
	uint8_t *table = NULL;
	size_t len, i;

	/* Keep 16 * len well inside int for the checks below. */
	if (size < HDR_LEN || size > (1 << 20))
		return 0;
	minor = pick_minor(data[0]);
	first = get_le32(data + 1);
	lasti = get_le32(data + 5);
	len = size - HDR_LEN;
	if (len) {
		table = malloc(len);
		if (!table)
			return 0;
		memcpy(table, data + HDR_LEN, len);
	}

	line = linetable__line(minor, table, len, first, lasti);
	if (line < -1)
		abort();
	/* Fixed offsets too, so small tables get walked to their end. */
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		line = linetable__line(minor, table, len, first, probes[i]);
		if (line < -1)
			abort();
	}
	/*
	 * Each location entry covers at most 8 code units per table byte,
	 * each 3.10 pair at most 255 bytes: anything further cannot have a
	 * line, whatever the bytes say.
	 */
	if (minor >= 11 && minor <= LINETABLE_MAX_MINOR &&
	    linetable__line(minor, table, len, first, (int)(16 * len)) != -1)
		abort();
	if (minor == 10 &&
	    linetable__line(minor, table, len, first, (int)(128 * len)) != -1)
		abort();
	free(table);
	return 0;
}
