// SPDX-License-Identifier: GPL-2.0
/*
 * Unit test for user/python/linetable.c.
 *
 *   cc -Wall -Wextra -Werror -Iuser tests/unit/test_linetable.c \
 *      user/python/linetable.c -o /tmp/t && /tmp/t tests/fixtures
 *
 * Checks every vector in <fixtures>/linetable-3.X.txt (written by
 * tools/gen-linetable-vectors.py from the real interpreters), hand-made
 * edge cases, and a random-mutation loop meant to run under
 * -fsanitize=address,undefined. Every table handed to the decoder sits
 * in a heap block of exactly its length so ASan sees any overread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"
#include "testkit.h"

#define FIRST_FIXTURE_MINOR	8
#define LAST_FIXTURE_MINOR	15
#define MAX_REPORTED		20
#define FUZZ_ITERATIONS		200000
#define MAX_SEEDS		1024

static unsigned int passed, failed;

static void result(int ok, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	if (failed <= MAX_REPORTED)
		printf("FAIL: %s\n", what);
}

static void expect_line(const char *name, int minor, const uint8_t *t,
			size_t len, int first, int lasti, int want)
{
	uint8_t *copy = NULL;
	char msg[256];
	int got;

	/* Exact-size heap copy: an overread is an ASan report. */
	if (len) {
		copy = malloc(len);
		if (!copy)
			abort();
		memcpy(copy, t, len);
	}
	got = linetable__line(minor, copy, len, first, lasti);
	free(copy);
	snprintf(msg, sizeof(msg), "%s: minor %d lasti %d: got %d want %d",
		 name, minor, lasti, got, want);
	result(got == want, msg);
}

/* ---- fixture vectors ------------------------------------------------ */

struct seed {
	int minor;
	int first;
	size_t len;
	uint8_t *bytes;
};

static struct seed seeds[MAX_SEEDS];
static size_t nseeds;

struct vec {
	int minor;
	int first;
	size_t len;
	uint8_t *table;		/* exactly len bytes, NULL when empty */
	char name[128];
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int decode_hex(const char *hex, struct vec *v)
{
	size_t n = strlen(hex), i;

	v->table = NULL;
	v->len = 0;
	if (!strcmp(hex, "-"))
		return 0;
	if (n % 2)
		return -1;
	v->len = n / 2;
	v->table = malloc(v->len);
	if (!v->table)
		abort();
	for (i = 0; i < v->len; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		v->table[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static void keep_seed(const struct vec *v)
{
	struct seed *s;

	if (nseeds >= MAX_SEEDS || !v->len)
		return;
	s = &seeds[nseeds++];
	s->minor = v->minor;
	s->first = v->first;
	s->len = v->len;
	s->bytes = malloc(v->len);
	if (!s->bytes)
		abort();
	memcpy(s->bytes, v->table, v->len);
}

/* One "R start end line" line: every offset in the range must match. */
static void check_range(const struct vec *v, long start, long end,
			int want, const char *file)
{
	char msg[512];
	long off;

	for (off = start; off < end; off++) {
		int got = linetable__line(v->minor, v->table, v->len,
					  v->first, (int)off);

		if (got != want) {
			snprintf(msg, sizeof(msg),
				 "%.200s: %.100s offset %ld: got %d want %d",
				 file, v->name, off, got, want);
			result(0, msg);
			return;
		}
	}
	result(1, NULL);
}

static int parse_code_line(const char *line, struct vec *v)
{
	static char hex[1 << 20];

	if (sscanf(line, "C %d %d %1048575s %127s", &v->minor, &v->first,
		   hex, v->name) != 4)
		return -1;
	return decode_hex(hex, v);
}

static void run_fixture(const char *dir, int minor)
{
	char path[4096], msg[512];
	struct vec v = { .minor = -1 };
	char *line = NULL;
	size_t cap = 0;
	unsigned int nranges = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/linetable-3.%d.txt", dir, minor);
	f = fopen(path, "r");
	if (!f) {
		snprintf(msg, sizeof(msg), "cannot open %.200s", path);
		result(0, msg);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		long start, end;
		int want;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (line[0] == 'C') {
			free(v.table);
			if (parse_code_line(line, &v) || v.minor != minor) {
				snprintf(msg, sizeof(msg), "%.200s: bad line: %.80s",
					 path, line);
				result(0, msg);
				v.minor = -1;
				continue;
			}
			keep_seed(&v);
		} else if (sscanf(line, "R %ld %ld %d", &start, &end,
				  &want) == 3 && v.minor >= 0) {
			check_range(&v, start, end, want, path);
			nranges++;
		} else {
			snprintf(msg, sizeof(msg), "%.200s: bad line: %.80s",
				 path, line);
			result(0, msg);
		}
	}
	free(v.table);
	free(line);
	fclose(f);
	snprintf(msg, sizeof(msg), "%.200s: no vectors", path);
	result(nranges > 0, msg);
}

/* ---- hand-made edge cases ------------------------------------------- */

#define T(...) ((const uint8_t[]){ __VA_ARGS__ })
#define EXPECT(name, minor, first, lasti, want, ...)			\
	expect_line(name, minor, T(__VA_ARGS__),			\
		    sizeof(T(__VA_ARGS__)), first, lasti, want)

static void test_empty(void)
{
	int minor;

	for (minor = 6; minor <= LINETABLE_MAX_MINOR; minor++) {
		int want = minor <= 9 ? 7 : -1;

		expect_line("empty", minor, NULL, 0, 7, 0, want);
		expect_line("empty", minor, NULL, 0, 7, 100, want);
		/* CPython answers co_firstlineno for a negative offset. */
		expect_line("empty neg", minor, NULL, 0, 7, -2, 7);
	}
	result(linetable__line(11, NULL, 5, 3, 0) == -1, "NULL table");
}

static void test_bad_minor(void)
{
	EXPECT("minor -1", -1, 1, 0, -1, 0x80);
	EXPECT("minor 16", 16, 1, 0, -1, 0x80);
	EXPECT("minor huge", INT_MAX, 1, 0, -1, 0x80);
}

static void test_lnotab(void)
{
	/* +2 bytes: line 10 -> 11; +4: back to 9 (signed); +10: +100. */
	EXPECT("lnotab", 8, 10, 0, 10, 2, 1, 4, 0xfe, 10, 100);
	EXPECT("lnotab", 8, 10, 1, 10, 2, 1, 4, 0xfe, 10, 100);
	EXPECT("lnotab", 8, 10, 2, 11, 2, 1, 4, 0xfe, 10, 100);
	EXPECT("lnotab", 8, 10, 6, 9, 2, 1, 4, 0xfe, 10, 100);
	/* Past the end CPython <= 3.9 keeps the last line. */
	EXPECT("lnotab end", 9, 10, 10000, 109, 2, 1, 4, 0xfe, 10, 100);
	/* Before 3.6 the line delta was unsigned. */
	EXPECT("lnotab 3.5", 5, 10, 6, 265, 2, 1, 4, 0xfe);
	/* A trailing odd byte is ignored. */
	EXPECT("lnotab odd", 8, 10, 100, 11, 2, 1, 4);
	/* Lines pushed below zero or past INT_MAX are corrupt. */
	EXPECT("lnotab neg", 8, 1, 10, -1, 0, 0x80);
	EXPECT("lnotab ovf", 8, INT_MAX, 10, -1, 0, 1);
	EXPECT("lnotab neg first", 8, -5, 0, -1, 2, 1);
}

static void test_pep626(void)
{
	/* 4 bytes at +1, 2 bytes with no line, 0-length +127, 2 bytes +1. */
	EXPECT("pep626", 10, 5, 0, 6, 4, 1, 2, 0x80, 0, 127, 2, 1);
	EXPECT("pep626", 10, 5, 3, 6, 4, 1, 2, 0x80, 0, 127, 2, 1);
	EXPECT("pep626 noline", 10, 5, 4, -1, 4, 1, 2, 0x80, 0, 127, 2, 1);
	/* "No line" does not disturb the running line. */
	EXPECT("pep626", 10, 5, 6, 134, 4, 1, 2, 0x80, 0, 127, 2, 1);
	EXPECT("pep626 end", 10, 5, 8, -1, 4, 1, 2, 0x80, 0, 127, 2, 1);
	/* Trailing zero-length entries and an odd byte. */
	EXPECT("pep626 tail", 10, 5, 2, -1, 2, 0, 0, 127, 0, 127, 9);
	EXPECT("pep626 neg", 10, 1, 0, -1, 2, 0xfe);
	EXPECT("pep626 neg lasti", 10, 5, -4, 5, 2, 1);
}

/* Location table header: 1 cccc lll, lll = code units - 1. */
#define H(code, units) ((uint8_t)(0x80 | (code) << 3 | ((units) - 1)))

static void test_loctable_forms(void)
{
	/* Short form (code 0), then one-line forms 10, 11, 12. */
	EXPECT("short", 11, 20, 0, 20, H(0, 1), 0x00,
	       H(10, 2), 1, 2, H(11, 1), 1, 2, H(12, 1), 1, 2);
	EXPECT("one-line0", 11, 20, 2, 20, H(0, 1), 0x00,
	       H(10, 2), 1, 2, H(11, 1), 1, 2, H(12, 1), 1, 2);
	EXPECT("one-line0", 11, 20, 5, 20, H(0, 1), 0x00,
	       H(10, 2), 1, 2, H(11, 1), 1, 2, H(12, 1), 1, 2);
	EXPECT("one-line1", 11, 20, 6, 21, H(0, 1), 0x00,
	       H(10, 2), 1, 2, H(11, 1), 1, 2, H(12, 1), 1, 2);
	EXPECT("one-line2", 12, 20, 8, 23, H(0, 1), 0x00,
	       H(10, 2), 1, 2, H(11, 1), 1, 2, H(12, 1), 1, 2);
	EXPECT("past end", 13, 20, 10, -1, H(0, 1), 0x00,
	       H(10, 2), 1, 2, H(11, 1), 1, 2, H(12, 1), 1, 2);

	/* Code 13: svarint +300 (600 = 0x18 | 0x09 << 6); code 14: -3. */
	EXPECT("no-columns", 11, 1, 0, 301, H(13, 8), 0x58, 0x09,
	       H(14, 1), 0x07, 0, 1, 1);
	EXPECT("no-columns", 11, 1, 15, 301, H(13, 8), 0x58, 0x09,
	       H(14, 1), 0x07, 0, 1, 1);
	EXPECT("long", 14, 1, 16, 298, H(13, 8), 0x58, 0x09,
	       H(14, 1), 0x07, 0, 1, 1);
	/* Code 15 has no line and keeps the running line unchanged. */
	EXPECT("none", 15, 1, 0, -1, H(15, 1), H(11, 1), 0, 0);
	EXPECT("none", 15, 1, 2, 2, H(15, 1), H(11, 1), 0, 0);
	EXPECT("neg lasti", 11, 9, -1, 9, H(15, 1));
	/* Odd offsets belong to the code unit they fall in. */
	EXPECT("odd", 11, 9, 3, 10, H(0, 1), 0, H(11, 1), 0, 0);
}

static void test_loctable_malformed(void)
{
	/* Header only: the varint is missing / cut short. */
	EXPECT("no varint", 11, 1, 0, -1, H(13, 1));
	EXPECT("cut varint", 11, 1, 0, -1, H(13, 1), 0x41);
	EXPECT("cut long", 11, 1, 0, -1, H(14, 1), 0x7f, 0x7f);
	/* Continuation runs into the next header. */
	EXPECT("varint hdr", 11, 1, 0, -1, H(13, 1), 0x41, H(0, 1), 0);
	/* Too many chunks. */
	EXPECT("long varint", 11, 1, 0, -1, H(13, 1), 0x7f, 0x7f, 0x7f,
	       0x7f, 0x7f, 0x7f, 0x00);
	/* Five chunks is the most accepted: 2^29 - 1 lines up. */
	EXPECT("max varint", 11, 0, 0, (1 << 29) - 1, H(13, 1),
	       0x7e, 0x7f, 0x7f, 0x7f, 0x3f);
	/* Table must start with a header byte. */
	EXPECT("no header", 11, 1, 0, -1, 0x10, H(0, 1), 0);
	/* A malformed entry before lasti poisons it; after it, not. */
	EXPECT("bad later", 11, 1, 0, 1, H(0, 1), 0, H(13, 1));
	EXPECT("bad before", 11, 1, 2, -1, H(0, 1), 0, H(13, 1));
	/* Running line below zero or out of int range. */
	EXPECT("neg line", 11, 1, 0, -1, H(13, 1), 0x05);
	EXPECT("ovf line", 11, INT_MAX, 0, -1, H(13, 1), 0x02);
	EXPECT("ovf then back", 11, INT_MAX, 2, -1, H(13, 1), 0x02,
	       H(13, 1), 0x03);
	EXPECT("big lasti", 11, 1, INT_MAX, -1, H(0, 8), 0);
}

/* ---- random mutation loop ------------------------------------------- */

static size_t mutate(uint8_t *buf, size_t len, size_t cap)
{
	size_t i, n = 1 + rnd() % 4;

	while (n--) {
		switch (rnd() % 6) {
		case 0:		/* flip a bit */
			if (len)
				buf[rnd() % len] ^= 1u << (rnd() % 8);
			break;
		case 1:		/* random byte */
			if (len)
				buf[rnd() % len] = (uint8_t)rnd();
			break;
		case 2:		/* truncate */
			if (len)
				len = rnd() % len;
			break;
		case 3:		/* append random bytes */
			for (i = rnd() % 8; i && len < cap; i--)
				buf[len++] = (uint8_t)rnd();
			break;
		case 4:		/* header-ish or varint-ish byte */
			if (len)
				buf[rnd() % len] = (rnd() & 1) ? 0xff : 0x7f;
			break;
		default:	/* drop a byte from the middle */
			if (len) {
				i = rnd() % len;
				memmove(buf + i, buf + i + 1, len - i - 1);
				len--;
			}
			break;
		}
	}
	return len;
}

static int fuzz_lasti(size_t len)
{
	switch (rnd() % 4) {
	case 0:
		return (int)(rnd() % 64) - 8;
	case 1:
		return (int)(rnd() % (2 * len + 64));
	case 2:
		return (int)(rnd() % (16 * len + 64));
	default:
		return (int)(uint32_t)rnd();
	}
}

static void test_fuzz(void)
{
	static uint8_t work[1 << 16];
	unsigned int bad = 0, it;
	char msg[128];

	if (!nseeds) {
		result(0, "fuzz: no seeds from fixtures");
		return;
	}
	for (it = 0; it < FUZZ_ITERATIONS; it++) {
		const struct seed *s = &seeds[rnd() % nseeds];
		size_t len = s->len < sizeof(work) ? s->len : sizeof(work);
		int minor = (rnd() % 8) ? s->minor : (int)(rnd() % 20) - 2;
		uint8_t *copy = NULL;
		int k;

		memcpy(work, s->bytes, len);
		len = mutate(work, len, sizeof(work));
		if (len) {
			copy = malloc(len);
			if (!copy)
				abort();
			memcpy(copy, work, len);
		}
		for (k = 0; k < 4; k++) {
			int got = linetable__line(minor, copy, len, s->first,
						  fuzz_lasti(len));

			if (got < -1)
				bad++;
		}
		free(copy);
	}
	snprintf(msg, sizeof(msg), "fuzz: %u results below -1", bad);
	result(bad == 0, msg);
}

int main(int argc, char **argv)
{
	int minor;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FIXTURES_DIR\n", argv[0]);
		return 2;
	}
	for (minor = FIRST_FIXTURE_MINOR; minor <= LAST_FIXTURE_MINOR; minor++)
		run_fixture(argv[1], minor);
	test_empty();
	test_bad_minor();
	test_lnotab();
	test_pep626();
	test_loctable_forms();
	test_loctable_malformed();
	test_fuzz();
	while (nseeds)
		free(seeds[--nseeds].bytes);
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
