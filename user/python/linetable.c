// SPDX-License-Identifier: GPL-2.0
/*
 * Decoders for the three CPython line table formats.
 *
 * Each walks the table from the start, keeping the running line and the
 * byte offset where the current entry ends, and stops at the entry that
 * covers @lasti. That mirrors how PyCode_Addr2Line() walks it, so the
 * answers match the interpreter's own f_lineno.
 *
 * Lines and offsets are kept in int64_t: a hostile table can push them
 * anywhere, and the conversion back to int is checked once, at the end.
 */
#include <limits.h>

#include "linetable.h"

/* Python 3.6 made the co_lnotab line delta signed (bpo-26107). */
#define LNOTAB_SIGNED_MINOR	6
#define PEP626_MINOR		10
#define LOCTABLE_MINOR		11

/* 3.10 co_linetable: a line delta of -128 marks bytecode with no line. */
#define PEP626_NO_LINE		(-128)

/* 3.11+ location table entry header: 1 cccc lll. */
#define LOC_HEADER_BIT		0x80
#define LOC_CODE(b)		(((b) >> 3) & 0xf)
#define LOC_UNITS(b)		(((b) & 0x7) + 1)
#define LOC_ONE_LINE0		10
#define LOC_ONE_LINE2		12
#define LOC_NO_COLUMNS		13
#define LOC_LONG		14
#define LOC_NONE		15
#define CODE_UNIT_BYTES		2

/* Varint chunks: 6 payload bits, 0x40 = more chunks follow. */
#define VARINT_BITS		6
#define VARINT_MASK		0x3f
#define VARINT_MORE		0x40
/* Five chunks hold 30 bits, far more than any real line delta needs. */
#define VARINT_MAX_SHIFT	24

static int line_result(int64_t line)
{
	/* A negative or oversized line only comes out of a corrupt table. */
	if (line < 0 || line > INT_MAX)
		return -1;
	return (int)line;
}

static int line_in_range(int64_t line)
{
	return line >= INT_MIN && line <= INT_MAX;
}

/*
 * co_lnotab (up to 3.9): (byte delta, line delta) pairs. The line delta
 * of a pair applies from the offset reached after its byte delta, so the
 * walk stops at the first pair that steps past @lasti. A trailing odd
 * byte is ignored, as CPython does.
 */
static int lnotab_line(int minor, const uint8_t *t, size_t len,
		       int firstlineno, int lasti)
{
	int64_t line = firstlineno;
	int64_t addr = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > lasti)
			break;
		if (minor >= LNOTAB_SIGNED_MINOR)
			line += (int8_t)t[i + 1];
		else
			line += t[i + 1];
	}
	return line_result(line);
}

/*
 * 3.10 co_linetable: (byte delta, line delta) pairs, each describing the
 * range [end, end + byte delta) with the line after applying the delta.
 * Zero-length pairs only carry line deltas too big for one byte; they
 * can never contain @lasti, so they fall through the loop naturally.
 */
static int pep626_line(const uint8_t *t, size_t len, int firstlineno,
		       int lasti)
{
	int64_t line = firstlineno;
	int64_t end = 0;
	size_t i;

	if (lasti < 0)
		return line_result(firstlineno);
	for (i = 0; i + 1 < len; i += 2) {
		int ldelta = (int8_t)t[i + 1];

		end += t[i];
		if (ldelta != PEP626_NO_LINE)
			line += ldelta;
		if (lasti < end)
			return ldelta == PEP626_NO_LINE ? -1 : line_result(line);
	}
	return -1;
}

/*
 * Unsigned varint from t[*pos..len). Fails on truncation, on running
 * into the next entry header (varint bytes never have bit 7 set) and on
 * encodings too long to fit.
 */
static int read_varint(const uint8_t *t, size_t len, size_t *pos,
		       uint32_t *out)
{
	uint32_t val = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > VARINT_MAX_SHIFT)
			return -1;
		b = t[(*pos)++];
		if (b & LOC_HEADER_BIT)
			return -1;
		val |= (uint32_t)(b & VARINT_MASK) << shift;
		shift += VARINT_BITS;
	} while (b & VARINT_MORE);
	*out = val;
	return 0;
}

/* Signed varint: sign in bit 0, magnitude above it. */
static int read_svarint(const uint8_t *t, size_t len, size_t pos,
			int64_t *out)
{
	uint32_t uval;

	if (read_varint(t, len, &pos, &uval))
		return -1;
	*out = (uval & 1) ? -(int64_t)(uval >> 1) : (int64_t)(uval >> 1);
	return 0;
}

/* Line delta of the location entry whose header is t[pos]. */
static int loc_line_delta(const uint8_t *t, size_t len, size_t pos,
			  int64_t *delta)
{
	int code = LOC_CODE(t[pos]);

	switch (code) {
	case LOC_NO_COLUMNS:
	case LOC_LONG:
		/* Both start with the line delta as a signed varint. */
		return read_svarint(t, len, pos + 1, delta);
	case LOC_ONE_LINE0 ... LOC_ONE_LINE2:
		*delta = code - LOC_ONE_LINE0;
		return 0;
	default:
		/* Short forms (0-9) and "no location" keep the line. */
		*delta = 0;
		return 0;
	}
}

/* Index of the next entry header after the one at @pos, or @len. */
static size_t loc_next_entry(const uint8_t *t, size_t len, size_t pos)
{
	do {
		pos++;
	} while (pos < len && !(t[pos] & LOC_HEADER_BIT));
	return pos;
}

/*
 * 3.11+ location table: each entry covers 1-8 code units and carries a
 * line delta relative to the previous entry's line. Entry bodies are
 * skipped by scanning for the next header byte, which is how CPython
 * steps through the table; only the line delta is decoded.
 */
static int loctable_line(const uint8_t *t, size_t len, int firstlineno,
			 int lasti)
{
	int64_t line = firstlineno;
	int64_t end = 0;
	size_t pos = 0;

	if (lasti < 0)
		return line_result(firstlineno);
	while (pos < len) {
		uint8_t header = t[pos];
		int64_t delta;

		/* Only the first byte can fail this; later ones are found
		 * by loc_next_entry(). */
		if (!(header & LOC_HEADER_BIT))
			return -1;
		if (loc_line_delta(t, len, pos, &delta))
			return -1;
		line += delta;
		if (!line_in_range(line))
			return -1;
		end += LOC_UNITS(header) * CODE_UNIT_BYTES;
		if (lasti < end) {
			if (LOC_CODE(header) == LOC_NONE)
				return -1;
			return line_result(line);
		}
		pos = loc_next_entry(t, len, pos);
	}
	return -1;
}

int linetable__line(int minor, const uint8_t *table, size_t len,
		    int firstlineno, int lasti)
{
	if (minor < 0 || minor > LINETABLE_MAX_MINOR)
		return -1;
	if (!table)
		len = 0;
	if (minor < PEP626_MINOR)
		return lnotab_line(minor, table, len, firstlineno, lasti);
	if (minor < LOCTABLE_MINOR)
		return pep626_line(table, len, firstlineno, lasti);
	return loctable_line(table, len, firstlineno, lasti);
}
