/* SPDX-License-Identifier: GPL-2.0 */
/* What the harnesses that read code objects share: a minor's layout. */
#ifndef PYSIGHT_FUZZ_LAYOUT_H
#define PYSIGHT_FUZZ_LAYOUT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* A cleared proc with the layout of the minor that an input's byte 0
 * picks (3.8 to 3.15): the minor, or -1 when there is none or the input
 * is shorter than its header. */
static int fuzz_proc(const uint8_t *data, size_t size, size_t hdr_len,
		     struct py_proc *proc)
{
	int minor = size ? 8 + data[0] % 8 : 0;

	memset(proc, 0, sizeof(*proc));
	return size < hdr_len || fuzz_layout(minor, &proc->off) ? -1 : minor;
}

/* The code, str and bytes type objects' addresses, from 24 bytes at p. */
static void fuzz_types(struct py_proc *proc, const uint8_t *p)
{
	proc->code_type_addr = fuzz_le64(p);
	proc->unicode_type_addr = fuzz_le64(p + 8);
	proc->bytes_type_addr = fuzz_le64(p + 16);
}

#endif
