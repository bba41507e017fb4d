// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for what the symboliser decodes from a target's
 * memory: code objects, str and bytes objects, then the line table they
 * lead to.  The input is a fake address space (fakemem.h): the bytes
 * after the header, mapped at MEM_BASE.
 *
 * Input layout: byte 0 picks the minor (3.8 to 3.15: 3.13 on need
 * FIXTURES, the tests' _PyRuntime copies), bytes 1-4 the code
 * object's offset in the blob, 5-8 a str's, 9-12 a bytes object's, 13-16
 * lasti (little endian); the rest is the memory.  The type objects'
 * addresses are fixed (below MEM_BASE), so an input that wants to pass a
 * type check writes them into its objects.  The memory is a heap block of
 * exactly its size: ASan catches a read one byte past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"
#include "offsets.h"
#include "symbols.h"
#include "layout.h"
#include "fakemem.h"

#define HDR_LEN		17
#define MEM_BASE	0x7f0000100000ULL
#define CODE_TYPE	0x7f00000c0000ULL
#define UNICODE_TYPE	0x7f00000d0000ULL
#define BYTES_TYPE	0x7f00000e0000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_proc proc;
	const struct pysym *sym;
	struct symcache *sc;
	uint8_t *copy, *bytes = NULL;
	uint32_t check;
	size_t blen = 0;
	char *s;
	int minor;

	minor = fuzz_proc(data, size, HDR_LEN, &proc);
	if (minor < 0)
		return 0;
	proc.code_type_addr = CODE_TYPE;
	proc.unicode_type_addr = UNICODE_TYPE;
	proc.bytes_type_addr = BYTES_TYPE;
	copy = malloc(size - HDR_LEN ? size - HDR_LEN : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + HDR_LEN, size - HDR_LEN);
	fuzz_segs[0] = (struct fuzz_segment){ MEM_BASE, size - HDR_LEN, copy };
	fuzz_nsegs = 1;

	s = symbols__read_str(1, &proc, MEM_BASE + fuzz_le32(data + 5));
	free(s);
	if (!symbols__read_bytes(1, &proc, MEM_BASE + fuzz_le32(data + 9), &bytes, &blen))
		free(bytes);
	sc = symcache__new();
	if (sc && !symbols__code_check(1, &proc, MEM_BASE + fuzz_le32(data + 1), &check)) {
		sym = symcache__lookup(sc, 1, &proc, MEM_BASE + fuzz_le32(data + 1), check);
		if (sym)
			(void)linetable__line(minor, sym->linetable, sym->linetable_len,
					      sym->firstlineno, (int)fuzz_le32(data + 13));
	}
	symcache__free(sc);
	free(copy);
	fuzz_nsegs = 0;
	return 0;
}
