// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for dump --tasks' reader (asynctasks.c): the
 * .AsyncioDebug section, then the walk it directs through a fake address
 * space (fakemem.h): each thread's task list and the interpreter's, each
 * task's name, state, coroutine chain and awaiters.
 *
 * Before 3.14 there is no section: the reader finds asyncio's objects
 * through sys.modules and the module asyncio.tasks, reads the task sets
 * and _current_tasks, rebuilds who awaits whom, and finds a sample's task
 * by its coroutine.
 *
 * Input layout (little endian), as fuzz_dump's: byte 0 picks the minor
 * (3.11 to 3.15 walk; 3.8-3.10 are refused), then the addresses of
 * _PyRuntime and of the code, str and bytes type objects (8 bytes each),
 * then 104 bytes: the section's (3.14+), or 13 coroutines' addresses, the
 * frames a sample may mark (3.11-3.13), then segments: an address (8
 * bytes), a length (4 bytes) and its bytes, to the end of the input.  The
 * input is a heap block of exactly its size, so ASan catches a read past
 * it.
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

/* What a read found, checked: each task once, found where it is, and
 * its awaiters followed up as from a sample (name_obj, by: as BPF read
 * them, now stale; 0: read them now). */
static void check_read(const struct py_proc *proc, struct async_layout *l,
		       const struct async_tasks *t)
{
	struct async_task chain[4];
	struct async_awaited by;
	bool cut;
	int i;

	/* dump --tasks's tree: every edge to a task read, once */
	if (!asynctasks__awaited(t, &by) &&
	    by.first[t->n] > t->n * ASYNC_MAX_AWAITERS)
		__builtin_trap();
	asynctasks__awaited_free(&by);
	for (i = 0; i < t->n; i++) {
		if (asynctasks__find(t, t->tasks[i].addr) != i)
			__builtin_trap();
		if (asynctasks__awaiters(1, proc, l, t->tasks[i].addr, 0, 0,
					 chain, 4, &cut) > 4 ||
		    asynctasks__awaiters(1, proc, l, t->tasks[i].addr,
					 t->tasks[i].name_obj, t->tasks[i].by,
					 chain, 4, &cut) > 4)
			__builtin_trap();
	}
}

/* 3.11-3.13: the layout from the target's modules, a read of every task
 * and of a share, then the tasks of the frames a sample could mark. */
static void legacy(const struct py_proc *proc, int minor, const uint8_t *p)
{
	struct async_coro cur[PY_CURRENT_MAX];
	struct async_tasks t = { 0 };
	struct async_layout l;
	unsigned int seed = 1;
	char err[256];
	__u64 coro;
	int i, n;

	if (asynctasks__open(1, proc, minor, &l, err, sizeof(err)))
		return;
	if (!asynctasks__read(1, proc, &l, &t))
		check_read(proc, &l, &t);
	asynctasks__free(&t);
	if (!asynctasks__sample(1, proc, &l, 0.5, &seed, NULL, NULL, &t))
		check_read(proc, &l, &t);
	asynctasks__free(&t);
	n = asynctasks__current(1, proc, &l, cur, PY_CURRENT_MAX);
	if (n > PY_CURRENT_MAX)
		__builtin_trap();
	for (i = 0; i < 13; i++) {
		coro = fuzz_le64(p + 8 * i);
		asynctasks__known_frame(&l, coro + l.go.gen_iframe);
		asynctasks__running(1, proc, &l, coro + l.go.gen_iframe);
	}
	asynctasks__close(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_async_offsets ao;
	struct async_layout l;
	struct async_tasks t = { 0 };
	unsigned int seed = 1;
	struct py_proc proc;
	char err[256];
	int minor, i;

	minor = fuzz_proc(data, size, HDR_LEN, &proc);
	if (minor < 0)
		return 0;
	proc.runtime_addr = fuzz_le64(data + 1);
	fuzz_types(&proc, data + 9);
	if (minor < ASYNC_SECTION_MINOR) {
		fuzz_map_segments(data + HDR_LEN, size - HDR_LEN);
		legacy(&proc, minor, data + 33);
		fuzz_nsegs = 0;
		return 0;
	}
	if (offsets__async_from_section(data + 33, OFFSETS_ASYNC_SECTION_LEN,
					&ao, err, sizeof(err)))
		return 0;
	fuzz_map_segments(data + HDR_LEN, size - HDR_LEN);
	/* what it read: each task once, found where it is; and each
	 * task's awaiters as --asyncio follows them from a sample */
	if (!asynctasks__layout(1, &proc, minor, &ao, &l, err, sizeof(err)) &&
	    !asynctasks__read(1, &proc, &l, &t)) {
		check_read(&proc, &l, &t);
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
