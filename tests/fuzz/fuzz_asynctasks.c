// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for dump --tasks' reader (asynctasks.c): the
 * .AsyncioDebug section, then the walk it directs through a fake address
 * space (fakemem.h): each thread's task list and the interpreter's, each
 * task's name, state, coroutine chain and awaiters.
 *
 * Input layout (little endian), as fuzz_dump's: byte 0 picks the minor
 * (only 3.14 and 3.15 walk; the others parse the section and stop), then
 * the addresses of _PyRuntime and of the code, str and bytes type objects
 * (8 bytes each), then the section's 104 bytes, then segments: an address
 * (8 bytes), a length (4 bytes) and its bytes, to the end of the input.
 * The input is a heap block of exactly its size, so ASan catches a read
 * past it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "asynctasks.h"
#include "offsets.h"
#include "layout.h"
#include "fakemem.h"

#define HDR_LEN		(33 + OFFSETS_ASYNC_SECTION_LEN)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct async_task chain[4];
	struct py_async_offsets ao;
	struct async_layout l;
	struct async_tasks t = { 0 };
	unsigned int seed = 1;
	bool cut;
	struct py_proc proc;
	char err[256];
	int minor, i;

	minor = fuzz_proc(data, size, HDR_LEN, &proc);
	if (minor < 0)
		return 0;
	if (offsets__async_from_section(data + 33, OFFSETS_ASYNC_SECTION_LEN,
					&ao, err, sizeof(err)))
		return 0;
	proc.runtime_addr = fuzz_le64(data + 1);
	fuzz_types(&proc, data + 9);
	fuzz_map_segments(data + HDR_LEN, size - HDR_LEN);
	/* what it read: each task once, found where it is; and each
	 * task's awaiters as --asyncio follows them from a sample */
	if (!asynctasks__layout(1, &proc, minor, &ao, &l, err, sizeof(err)) &&
	    !asynctasks__read(1, &proc, &l, &t)) {
		for (i = 0; i < t.n; i++) {
			if (asynctasks__find(&t, t.tasks[i].addr) != i)
				__builtin_trap();
			if (asynctasks__awaiters(1, &proc, &l, t.tasks[i].addr,
						 0, 0, chain, 4, &cut) > 4)
				__builtin_trap();
			/* as BPF read its name and awaiters, now stale */
			if (asynctasks__awaiters(1, &proc, &l, t.tasks[i].addr,
						 t.tasks[i].name_obj,
						 t.tasks[i].by, chain, 4,
						 &cut) > 4)
				__builtin_trap();
		}
		/* and a share of them, as the sweep reads many */
		asynctasks__free(&t);
		if (!asynctasks__sample(1, &proc, &l, 0.5, &seed, NULL, NULL, &t))
			for (i = 0; i < t.n; i++)
				if (asynctasks__find(&t, t.tasks[i].addr) != i)
					__builtin_trap();
	}
	asynctasks__free(&t);
	fuzz_nsegs = 0;
	return 0;
}
