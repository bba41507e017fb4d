// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What dump reads from a target, built in our own memory and read back
 * with process_vm_readv: a 3.10 thread's frames (stackread) and a frame's
 * locals (pylocals), with the values a hostile target may write.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "offsets.h"
#include "pylocals.h"
#include "stackread.h"

#define ADDR(p) ((uint64_t)(uintptr_t)(p))
#define WORDS 64	/* every object here: 512 bytes, all readable */

static void put64(uint64_t *obj, unsigned int off, uint64_t v)
{
	memcpy((char *)obj + off, &v, sizeof(v));
}

/*
 * f_lasti is an int of code units on 3.10: a target's 0x7fffffff times 2
 * overflowed a signed multiply.  The walk wraps it as BPF's 32-bit
 * multiply does, so dump and the sampler agree on the frame.
 */
static void test_lasti_max(void)
{
	static uint64_t runtime[WORDS], interp[WORDS], tstate[WORDS];
	static uint64_t frame[WORDS], code[WORDS], code_type[WORDS];
	struct py_proc proc = {};
	struct stackread *out;
	const uint64_t key = 0x1234;

	CHECK(!offsets__from_table(3, 10, &proc.off), "3.10 offsets");
	proc.runtime_addr = ADDR(runtime);
	proc.code_type_addr = ADDR(code_type);
	put64(runtime, proc.off.runtime_interpreters_head, ADDR(interp));
	put64(interp, proc.off.interp_threads_head, ADDR(tstate));
	put64(tstate, proc.off.tstate_thread_id, key);
	put64(tstate, proc.off.tstate_frame, ADDR(frame));
	put64(code, 0, 1);				/* refcount */
	put64(code, proc.off.object_type, ADDR(code_type));
	put64(frame, 0, 1);
	put64(frame, proc.off.frame_code, ADDR(code));
	put64(frame, proc.off.frame_instr, 0x7fffffff);

	out = calloc(1, sizeof(*out));
	if (!out)
		return;
	stackread__thread(getpid(), &proc, key, out);
	CHECK(out->status == ST_COMPLETE && out->n == 1, "status %d, %d frames",
	      out->status, out->n);
	CHECK(out->frames[0].lasti == -2, "lasti %d", out->frames[0].lasti);
	free(out);
}

/*
 * An int's ob_size is its signed digit count to 3.11: INT64_MIN could not
 * be negated.  Such an int is no int we can print: it is shown by type.
 */
static void test_int_min(void)
{
	static uint64_t code[WORDS], names[WORDS], frame[WORDS];
	static uint64_t value[WORDS], int_type[WORDS];
	static char int_name[64] = "int";
	struct py_proc proc = {};
	struct pylocal loc[2];
	char want[64];
	int n;

	CHECK(!offsets__from_table(3, 10, &proc.off), "3.10 offsets");
	put64(code, proc.off.code_varnames, ADDR(names));
	put64(code, proc.off.code_nlocals, 1);
	put64(names, 16, 1);				/* ob_size */
	put64(frame, proc.off.frame_localsplus, ADDR(value));
	put64(value, 0, 1);
	put64(value, 8, ADDR(int_type));
	put64(value, 16, (uint64_t)INT64_MIN);
	put64(int_type, 24, ADDR(int_name));

	n = pylocals__read(getpid(), &proc, ADDR(frame), ADDR(code), loc, 2);
	snprintf(want, sizeof(want), "<int at 0x%" PRIx64 ">", ADDR(value));
	CHECK(n == 1 && !strcmp(loc[0].value, want), "%d locals, %s", n,
	      n > 0 ? loc[0].value : "");
}

int main(void)
{
	test_lasti_max();
	test_int_min();
	return check_summary();
}
