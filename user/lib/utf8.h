/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UTF-8 as the formats want it.  Names come from targets (code objects,
 * comm, file paths, environments) and may hold any bytes; a protobuf
 * string that is not UTF-8 makes a strict receiver refuse the whole
 * message, and an SVG a whole page.
 */
#ifndef __PYSIGHT_UTF8_H
#define __PYSIGHT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One code point of s, or -1 for a byte that starts no valid UTF-8
 * (overlong, surrogate, past U+10FFFF, cut short).  *len: bytes used. */
static inline int utf8__next(const unsigned char *s, int *len)
{
	int n, cp, i;

	*len = 1;
	if (s[0] < 0x80)
		return s[0];
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return -1;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = n;
	return cp;
}

/* Whether the NUL-terminated s is all valid UTF-8. */
static inline bool utf8__valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int len;

	for (; *p; p += len)
		if (utf8__next(p, &len) < 0)
			return false;
	return true;
}

/* In place: each byte that starts no valid UTF-8 becomes '?', and so
 * does every control character (C0, DEL) if controls is set. */
static inline void utf8__fix(char *s, bool controls)
{
	unsigned char *p = (unsigned char *)s;
	int cp, len;

	for (; *p; p += len) {
		cp = utf8__next(p, &len);
		if (cp < 0 || (controls && (cp < 0x20 || cp == 0x7f)))
			*p = '?';
	}
}

/* A malloc'd copy of s with utf8__fix(copy, false) applied; NULL on
 * ENOMEM. */
static inline char *utf8__fixed_dup(const char *s)
{
	char *d = strdup(s);

	if (d)
		utf8__fix(d, false);
	return d;
}

/*
 * Text from a target, for a terminal: what could move the cursor, set a
 * title, clear the screen or reorder what is shown (C0 and C1 controls,
 * DEL, line and paragraph separators, bidirectional overrides) and bytes
 * that are not UTF-8 become visible escapes: \n, \t, \r, \x1b for a byte
 * or a C0 control, \u202e for a code point.  The rest is copied.  What
 * does not fit in out (UTF8_ESC_SIZE(strlen(in)) always does) is cut at
 * a whole character.  Returns out.
 */
#define UTF8_ESC_SIZE(n) (6 * (n) + 1)

static inline bool utf8__unsafe(int cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 ||
	       cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f ||
	       cp == 0x061c;
}

/* The character at p, escaped as below into piece: its length.  *clen:
 * the bytes of p it stands for. */
static inline size_t utf8__escape_one(const unsigned char *p, char piece[8],
				      int *clen)
{
	static const char hex[] = "0123456789abcdef";
	int cp = utf8__next(p, clen), i;
	unsigned int b;

	if (cp >= 0 && !utf8__unsafe(cp)) {
		memcpy(piece, p, (size_t)*clen);
		return (size_t)*clen;
	}
	piece[0] = '\\';
	if (cp == '\n' || cp == '\t' || cp == '\r') {
		piece[1] = cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r';
		return 2;
	}
	if (cp < 0x80) {		/* a C0 control, DEL, a bad byte */
		b = cp < 0 ? p[0] : (unsigned int)cp;
		piece[1] = 'x';
		piece[2] = hex[b >> 4];
		piece[3] = hex[b & 15];
		return 4;
	}
	piece[1] = 'u';
	for (i = 0; i < 4; i++)
		piece[2 + i] = hex[(cp >> (12 - 4 * i)) & 15];
	return 6;
}

/* in, escaped, into out (cut at a whole character): out. */
static inline char *utf8__escape(char *out, size_t len, const char *in)
{
	const unsigned char *p = (const unsigned char *)in;
	char piece[8];
	size_t o = 0, n;
	int clen;

	if (!len)
		return out;
	for (; *p; p += clen) {
		n = utf8__escape_one(p, piece, &clen);
		if (o + n >= len)
			break;
		memcpy(out + o, piece, n);
		o += n;
	}
	out[o] = 0;
	return out;
}

/* fputs(s, f), escaped: any length. */
static inline int utf8__fputs_escaped(const char *s, FILE *f)
{
	const unsigned char *p = (const unsigned char *)s;
	char piece[8];
	size_t n;
	int clen;

	for (; *p; p += clen) {
		n = utf8__escape_one(p, piece, &clen);
		if (fwrite(piece, 1, n, f) != n)
			return EOF;
	}
	return 0;
}

#endif /* __PYSIGHT_UTF8_H */
