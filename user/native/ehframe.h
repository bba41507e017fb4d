/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A binary's .eh_frame compiled into unwind rows (struct unwind_row,
 * bpf/pysight.h): one rule per address range, sorted by address, for
 * BPF to step from a native frame to its caller without frame pointers.
 * The section is hostile input: every length and pointer in it is
 * checked, and what is not understood becomes a gap (UNW_CFA_NONE), never
 * a wrong rule.  x86-64 only.
 */
#ifndef __PYSIGHT_EHFRAME_H
#define __PYSIGHT_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "pysight.h"

/* a section larger than this is refused: libxul's is 6 MiB */
#define EHFRAME_MAX_SIZE	(64u << 20)
/* rows kept at most (48 MiB): a hostile section of one-byte advances
 * would make one a byte; python3.11 makes 64,575 */
#define EHFRAME_MAX_ROWS	(4u << 20)

struct ehframe_table {
	struct unwind_row *rows;
	size_t n, cap;
	/* what was read: FDEs, those refused whole (a bad CIE or pointer,
	 * an address past 4 GiB), and rows whose rule is not kept (a CFA
	 * expression other than a PLT entry's, a CFA in another register,
	 * the return address elsewhere than CFA - 8) */
	unsigned int fdes, fdes_refused, rules_dropped;
	bool truncated;		/* EHFRAME_MAX_ROWS reached: FDEs left out */
	/* the largest FDE read, [largest_pc, + largest_len): in CPython,
	 * the eval loop, whatever its symbols say */
	uint32_t largest_pc, largest_len;
};

/*
 * The rows of .eh_frame's bytes sec[0, len), the section loaded at
 * virtual address sec_addr (pc-relative pointers count from there), into
 * t (empty, or freed first): 0, -EINVAL for a section too large or whose
 * first record is unreadable, -ENOMEM.  A record later in the section
 * that is cut short ends the reading there: the rows before it stand.
 */
int ehframe__parse(const void *sec, size_t len, uint64_t sec_addr,
		   struct ehframe_table *t);

/* The row that holds pc, NULL when none does (below the first). */
const struct unwind_row *ehframe__find(const struct ehframe_table *t,
				       uint64_t pc);

void ehframe__free(struct ehframe_table *t);

#endif /* __PYSIGHT_EHFRAME_H */
