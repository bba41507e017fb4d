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

#endif /* __PYSIGHT_UTF8_H */
