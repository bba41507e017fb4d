// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for what dump decodes from a target: the walk from
 * _PyRuntime to a thread state and down its frames (stackread), the GIL's
 * holder, each frame's code object named (symbols, linetable) and its
 * locals (pylocals).  The input is a sparse fake address space: segments
 * copied at their real addresses from a real interpreter's memory by
 * tools/fuzz-seeds, so no pointer needs moving (fakemem.h serves them).
 *
 * Input layout (little endian): byte 0 picks the minor (3.8 to 3.15: 3.13
 * on need FIXTURES), then the addresses of _PyRuntime, of the code, str
 * and bytes type objects, and the thread's key (8 bytes each); then
 * segments, each an address (8 bytes), a length (4 bytes) and its bytes,
 * to the end of the input.  A segment cut short by the end is its bytes
 * up to the end: the input is a heap block of exactly its size, so ASan
 * catches a read past it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"
#include "offsets.h"
#include "pylocals.h"
#include "stackread.h"
#include "symbols.h"
#include "layout.h"
#include "fakemem.h"

#define HDR_LEN		41
#define MAX_LOCALS	16

/* What dump shows of each frame: its name, line and locals. */
static void read_frames(const struct py_proc *proc, int minor,
			const struct stackread *sr)
{
	struct pylocal locals[MAX_LOCALS];
	const struct pysym *sym;
	struct symcache *sc;
	int i;

	sc = symcache__new();
	for (i = 0; sc && i < sr->n; i++) {
		sym = symcache__lookup(sc, 1, proc, sr->frames[i].code,
				       sr->frames[i].check);
		if (sym)
			(void)linetable__line(minor, sym->linetable,
					      sym->linetable_len, sym->firstlineno,
					      sr->frames[i].lasti);
		(void)pylocals__read(1, proc, sr->addr[i], sr->frames[i].code,
				     locals, MAX_LOCALS);
	}
	symcache__free(sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct stackread out, scratch;
	struct py_proc proc;
	__u64 holder;
	int minor;

	minor = fuzz_proc(data, size, HDR_LEN, &proc);
	if (minor < 0)
		return 0;
	proc.runtime_addr = fuzz_le64(data + 1);
	fuzz_types(&proc, data + 9);
	fuzz_map_segments(data + HDR_LEN, size - HDR_LEN);

	(void)stackread__gil_holder(1, &proc, &holder);
	(void)stackread__stable(1, &proc, fuzz_le64(data + 33), &out, &scratch, 1);
	read_frames(&proc, minor, &out);
	fuzz_nsegs = 0;
	return 0;
}
