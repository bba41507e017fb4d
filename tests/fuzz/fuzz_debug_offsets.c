// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for offsets__from_debug(): the _Py_DebugOffsets a
 * 3.13+ interpreter carries at the start of _PyRuntime, read from a file
 * we do not trust.  Byte 0 picks the minor (13 and up, and some newer
 * ones, which take the newest layout on probation); the rest is the
 * section, copied to a heap block of exactly its size so ASan sees any
 * read past it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "offsets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_offsets off;
	char err[256];
	uint8_t *copy;

	if (size < 1)
		return 0;
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	offsets__from_debug(copy, size - 1, 13 + data[0] % 6, &off, err,
			    sizeof(err));
	free(copy);
	return 0;
}
