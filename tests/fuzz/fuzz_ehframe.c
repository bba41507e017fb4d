// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for ehframe__parse() and ehframe__find(): a
 * binary's .eh_frame is as hostile as the binary.
 *
 * Input layout: bytes 0-7 the section's virtual address (little endian),
 * the rest the section, copied into a heap block of exactly its size so
 * that ASan catches a read one byte past the end.  The rows must come out
 * in strictly rising pc order, each rule one BPF knows, and every lookup
 * must land on the row that holds its address.
 */
#include <stdlib.h>
#include <string.h>

#include "ehframe.h"
#include "le.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ehframe_table t = { 0 };
	const struct unwind_row *r;
	uint64_t addr, pc;
	uint8_t *sec;
	size_t len, i;

	if (size < 8 || size > (1 << 20))
		return 0;
	addr = fuzz_le64(data);
	len = size - 8;
	sec = malloc(len ? len : 1);
	if (!sec)
		return 0;
	memcpy(sec, data + 8, len);
	if (ehframe__parse(sec, len, addr, &t) == 0) {
		for (i = 0; i < t.n; i++) {
			r = &t.rows[i];
			if ((i && r->pc <= t.rows[i - 1].pc) ||
			    r->cfa > UNW_CFA_END || r->rbp > UNW_RBP_LOST ||
			    (r->cfa == UNW_CFA_NONE &&
			     (r->cfa_off || r->rbp || r->rbp_off)))
				abort();
			/* the last row at or below each of pc, pc + 1 */
			for (pc = r->pc; i < 256 && pc < (uint64_t)r->pc + 2;
			     pc++) {
				size_t j = i;

				while (j + 1 < t.n && t.rows[j + 1].pc <= pc)
					j++;
				if (ehframe__find(&t, pc) != &t.rows[j])
					abort();
			}
		}
		if (t.n && ehframe__find(&t, (uint64_t)t.rows[0].pc - 1) &&
		    t.rows[0].pc)
			abort();
	}
	ehframe__free(&t);
	free(sec);
	return 0;
}
