/* SPDX-License-Identifier: GPL-2.0 */
/* What the harnesses that read code objects share: a minor's layout. */
#ifndef PYSIGHT_FUZZ_LAYOUT_H
#define PYSIGHT_FUZZ_LAYOUT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "offsets.h"
#include "le.h"

/*
 * A minor's layout: 3.8-3.12 from the generated table, 3.13 on from the
 * _Py_DebugOffsets of a real interpreter's _PyRuntime (tests/fixtures).
 */
static int fuzz_layout(int minor, struct py_offsets *off)
{
	static struct py_offsets debug[16];
	static int state[16];	/* 0 not read, 1 read, -1 none */
	char path[512], err[256];
	uint8_t runtime[4096];
	size_t n;
	FILE *f;

	if (minor < 13)
		return offsets__from_table(3, minor, off);
	if (!state[minor]) {
		state[minor] = -1;
		snprintf(path, sizeof(path), "%s/pyruntime-3.%d.bin", FIXTURES, minor);
		f = fopen(path, "rb");
		if (f) {
			n = fread(runtime, 1, sizeof(runtime), f);
			fclose(f);
			if (!offsets__from_debug(runtime, n, minor, &debug[minor],
						 err, sizeof(err)))
				state[minor] = 1;
		}
	}
	if (state[minor] < 0)
		return -ENOENT;
	*off = debug[minor];
	return 0;
}

#endif
