/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Line numbers from CPython line tables, decoded in user space.
 *
 * The table bytes are copied out of the profiled process, so nothing in
 * them is trusted: every read is bounds-checked against len and a
 * malformed table yields -1, never a crash.
 */
#ifndef PYSIGHT_LINETABLE_H
#define PYSIGHT_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Newest CPython 3.x minor whose table format has been checked. */
#define LINETABLE_MAX_MINOR 15

/*
 * Line number of the instruction at byte offset @lasti of a code object
 * of CPython 3.<minor>, whose line table is table[0..len) and whose
 * co_firstlineno is @firstlineno.
 *
 * @lasti is in bytes from the start of the bytecode; for 3.11+ that is
 * the byte offset into co_code_adaptive (2 * code-unit index).
 *
 * The table is:
 *   minor <= 9:  co_lnotab (byte delta, line delta pairs)
 *   minor == 10: co_linetable, PEP 626 pairs (-128 line delta = no line)
 *   minor >= 11: co_linetable, the location table (Objects/locations.md)
 *
 * Follows PyCode_Addr2Line() of that version: a negative @lasti gives
 * @firstlineno; an offset past the table's end gives the last line for
 * minor <= 9 and -1 from 3.10 on.
 *
 * Returns the line (>= 0), or -1 when the instruction has no line, the
 * offset is not covered, the minor is unknown, or the table is malformed
 * (including any computation that would give a negative line). Never
 * reads outside table[0..len).
 */
int linetable__line(int minor, const uint8_t *table, size_t len,
		    int firstlineno, int lasti);

#endif /* PYSIGHT_LINETABLE_H */
