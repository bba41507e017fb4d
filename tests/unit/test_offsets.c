// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for user/python/offsets.c: the 3.8-3.12 table and the _Py_DebugOffsets
 * parser, against .PyRuntime bytes of real interpreters and mutations of
 * them.  Run from the top of the tree:
 *
 *   cc -Wall -Wextra -Werror -Ibpf -Iuser tests/unit/test_offsets.c \
 *      user/python/offsets.c user/python/offsets_table.c -o /tmp/t && /tmp/t
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offsets.h"
#include "testkit.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif
#define FIXTURE_MAX 4096

static int passed, failed;

#define CHECK(cond, ...)						\
	do {								\
		if (cond) {						\
			passed++;					\
		} else {						\
			failed++;					\
			printf("FAIL %s:%d: ", __FILE__, __LINE__);	\
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	} while (0)

struct fixture {
	const char *file;
	int minor;
	__u32 version_hex;	/* PY_VERSION_HEX of the binary it came from */
	unsigned char buf[FIXTURE_MAX];
	size_t len;
};

/* Debian trixie 3.13.5, pyenv 3.13.0, Debian sid 3.14.10 and 3.15.2. */
static struct fixture fixtures[] = {
	{ "pyruntime-3.13.bin", 13, 0x030d05f0, {0}, 0 },
	{ "pyruntime-3.13.0.bin", 13, 0x030d00f0, {0}, 0 },
	{ "pyruntime-3.14.bin", 14, 0x030e0af0, {0}, 0 },
	{ "pyruntime-3.15.bin", 15, 0x030f02f0, {0}, 0 },
};
#define NFIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

static int load(struct fixture *f)
{
	return testkit_load(FIXTURE_DIR, f->file, f->buf, sizeof(f->buf),
			    &f->len);
}

static const struct offsets_debug_layout *layout_of(int minor)
{
	unsigned int i;

	for (i = 0; i < offsets_debug_layouts_len; i++)
		if (offsets_debug_layouts[i].minor == minor)
			return &offsets_debug_layouts[i];
	return NULL;
}

static const struct py_offsets *header_facts(int minor)
{
	unsigned int i;

	for (i = 0; i < offsets_header_facts_len; i++)
		if (((offsets_header_facts[i].version_hex >> 16) & 0xff) ==
		    (unsigned int)minor)
			return &offsets_header_facts[i];
	return NULL;
}

static void put64(unsigned char *p, size_t pos, __u64 v)
{
	memcpy(p + pos, &v, sizeof(v));
}

/* Every __u16 field of py_offsets, to compare or bound them all. */
#define U16_FIELDS(X)							\
	X(runtime_interpreters_head) X(interp_next) X(interp_threads_head) \
	X(tstate_prev) X(tstate_next) X(tstate_thread_id)		\
	X(tstate_native_thread_id) X(object_type) X(unicode_length)	\
	X(interp_gil_ptr) X(gil_size) X(gil_locked) X(gil_last_holder)	\
	X(tstate_frame) X(cframe_current_frame) X(frame_previous)	\
	X(frame_code) X(frame_instr) X(frame_owner) X(code_filename)	\
	X(code_name) X(code_qualname) X(code_firstlineno)		\
	X(code_linetable) X(code_code_adaptive) X(unicode_hash)		\
	X(unicode_state) X(unicode_ascii_data) X(unicode_compact_data)	\
	X(bytes_size) X(bytes_data) X(frame_localsplus) X(code_varnames)	\
	X(code_localskinds) X(tuple_items)

/* Positions of every value the parser reads, to corrupt each in turn. */
#define LAYOUT_FIELDS(X)						\
	X(runtime_size) X(runtime_interpreters_head) X(interp_size)	\
	X(interp_next) X(interp_threads_head) X(tstate_size)		\
	X(tstate_prev) X(tstate_next) X(tstate_thread_id) X(tstate_native_thread_id)	\
	X(tstate_current_frame) X(frame_size) X(frame_previous)		\
	X(frame_executable) X(frame_instr_ptr) X(frame_owner)		\
	X(code_size) X(code_filename) X(code_name) X(code_qualname)	\
	X(code_linetable) X(code_firstlineno) X(code_adaptive)		\
	X(bytes_size) X(bytes_ob_size) X(bytes_ob_sval) X(unicode_size)	\
	X(unicode_state) X(unicode_length) X(unicode_ascii_size)	\
	X(interp_ceval_gil) X(interp_gil_state) X(interp_gil_locked)	\
	X(interp_gil_holder) X(interp_modules)

/* ---- 3.8-3.12 table ---- */

/* A frame is read up to its last field the walkers use, no further. */
static void check_frame_read_len(const char *what, const struct py_offsets *o)
{
	unsigned int end = o->frame_previous + 8u;

	if (o->frame_code + 8u > end)
		end = o->frame_code + 8u;
	if (o->frame_instr + 8u > end)
		end = o->frame_instr + 8u;
	if (o->frame_owner != PY_OFF_NONE && o->frame_owner + 1u > end)
		end = o->frame_owner + 1;
	CHECK(o->frame_read_len == end && end <= PYSIGHT_FRAME_WINDOW,
	      "%s frame_read_len %u, fields end at %u", what,
	      o->frame_read_len, end);
}

static void check_table_entry(int minor, const struct py_offsets *o)
{
	bool old = minor <= 10;

	check_frame_read_len("table", o);

	CHECK(o->version_hex == (__u32)(0x03000000 | minor << 16),
	      "3.%d version_hex %#x", minor, o->version_hex);
	CHECK(o->match == (old ? PY_MATCH_PTHREAD : PY_MATCH_NATIVE_TID),
	      "3.%d match", minor);
	CHECK(o->frame_model == (old ? PY_FRAMES_OBJECT : PY_FRAMES_CFRAME),
	      "3.%d frame_model", minor);
	CHECK(o->instr_kind == (minor <= 9 ? PY_INSTR_LASTI_BYTES :
				minor == 10 ? PY_INSTR_LASTI_UNITS :
				PY_INSTR_POINTER), "3.%d instr_kind", minor);
	CHECK(o->owner_cstack == (minor == 12 ? 3 : 0), "3.%d owner_cstack",
	      minor);
	CHECK(o->code_tag_mask == ~0ULL, "3.%d code_tag_mask", minor);

	/* Present exactly in the versions that have the field. */
	CHECK((o->tstate_native_thread_id == PY_OFF_NONE) == old,
	      "3.%d native_thread_id", minor);
	CHECK((o->cframe_current_frame == PY_OFF_NONE) == old,
	      "3.%d cframe", minor);
	CHECK((o->frame_owner == PY_OFF_NONE) == old, "3.%d owner", minor);
	CHECK((o->code_qualname == PY_OFF_NONE) == old, "3.%d qualname",
	      minor);
	CHECK((o->code_code_adaptive == PY_OFF_NONE) == old,
	      "3.%d co_code_adaptive", minor);

	/* Everything present is a small offset inside a small struct. */
#define SMALL(f)							\
	CHECK(o->f == PY_OFF_NONE || o->f < 512, "3.%d " #f " = %u",	\
	      minor, o->f);
	U16_FIELDS(SMALL)
#undef SMALL
	/* sys.modules sits past the interpreter's first 512 bytes */
	CHECK(o->interp_modules >= 8 && o->interp_modules < 16384 &&
	      o->interp_modules % 8 == 0, "3.%d interp_modules = %u", minor,
	      o->interp_modules);

	/* Cross-checked by hand against the headers. */
	CHECK(o->unicode_ascii_data == (minor <= 11 ? 48 : 40),
	      "3.%d ascii data %u", minor, o->unicode_ascii_data);
	CHECK(o->unicode_compact_data == o->unicode_ascii_data + 24 ||
	      o->unicode_compact_data == o->unicode_ascii_data + 16,
	      "3.%d compact data %u", minor, o->unicode_compact_data);
	CHECK(o->unicode_hash == 24 && o->unicode_state == 32,
	      "3.%d str hash/state", minor);
	CHECK(o->bytes_size == 16 && o->bytes_data == 32, "3.%d bytes",
	      minor);
	CHECK(o->tstate_next == 8, "3.%d tstate next", minor);
	CHECK(o->interp_next == 0, "3.%d interp next", minor);
}

static void test_table(void)
{
	static const int absent[][2] = {
		{ 3, 7 }, { 3, 13 }, { 3, 14 }, { 2, 7 }, { 4, 0 }, { 3, -1 },
	};
	struct py_offsets o;
	unsigned int i;
	int minor;

	for (minor = 8; minor <= 12; minor++) {
		memset(&o, 0xa5, sizeof(o));
		CHECK(offsets__from_table(3, minor, &o) == 0, "3.%d in table",
		      minor);
		check_table_entry(minor, &o);
	}
	for (i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		CHECK(offsets__from_table(absent[i][0], absent[i][1], &o) ==
		      -ENOENT, "%d.%d not in table", absent[i][0],
		      absent[i][1]);

	/* Spot values, read off the pyenv headers. */
	offsets__from_table(3, 8, &o);
	CHECK(o.tstate_thread_id == 176 && o.tstate_frame == 24 &&
	      o.frame_previous == 24 && o.frame_code == 32 &&
	      o.frame_instr == 104 && o.code_linetable == 120,
	      "3.8 spot values");
	offsets__from_table(3, 11, &o);
	CHECK(o.runtime_interpreters_head == 40 &&
	      o.interp_threads_head == 16 && o.tstate_native_thread_id == 160 &&
	      o.tstate_frame == 56 && o.cframe_current_frame == 8 &&
	      o.frame_previous == 48 && o.frame_code == 32 &&
	      o.frame_instr == 56 && o.frame_owner == 69 &&
	      o.code_code_adaptive == 184, "3.11 spot values");
	offsets__from_table(3, 12, &o);
	CHECK(o.interp_threads_head == 72 && o.cframe_current_frame == 0 &&
	      o.frame_code == 0 && o.frame_previous == 8 &&
	      o.frame_owner == 70 && o.code_code_adaptive == 192,
	      "3.12 spot values");
}

/* ---- _Py_DebugOffsets ---- */

static int parse(const unsigned char *buf, size_t len, int minor,
		 struct py_offsets *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	err[0] = '\0';
	return offsets__from_debug(buf, len, minor, o, err, errlen);
}

/* The parser must agree with offsetof() on the real structs. */
static void test_fixture(const struct fixture *f)
{
	const struct py_offsets *h = header_facts(f->minor);
	struct py_offsets o;
	char err[256];
	int ret;

	ret = parse(f->buf, f->len, f->minor, &o, err, sizeof(err));
	CHECK(ret == 0, "%s: %d %s", f->file, ret, err);
	if (ret || !h)
		return;
	CHECK(o.version_hex == f->version_hex, "%s version %#x", f->file,
	      o.version_hex);
	CHECK(o.match == h->match && o.frame_model == h->frame_model &&
	      o.instr_kind == h->instr_kind, "%s kinds", f->file);
	CHECK(o.owner_cstack == h->owner_cstack && o.owner_cstack == 3,
	      "%s owner_cstack %u", f->file, o.owner_cstack);
	CHECK(o.code_tag_mask == h->code_tag_mask, "%s tag mask", f->file);
	CHECK(o.code_tag_mask == (f->minor >= 14 ? ~3ULL : ~0ULL),
	      "%s tag mask %#llx", f->file,
	      (unsigned long long)o.code_tag_mask);
#define SAME(fld)							\
	CHECK(o.fld == h->fld, "%s " #fld " parsed %u, headers %u",	\
	      f->file, o.fld, h->fld);
	U16_FIELDS(SAME)
	SAME(interp_modules)
	check_frame_read_len(f->file, &o);
	SAME(code_nlocals)	/* absent from 3.11: co_localspluskinds says */
#undef SAME
	/* And a few numbers checked by eye against the headers. */
	CHECK(o.unicode_ascii_data == 40 && o.unicode_compact_data == 56,
	      "%s str data", f->file);
	CHECK(o.frame_code == 0 && o.frame_previous == 8 &&
	      o.frame_instr == 56 && o.tstate_frame == 72, "%s frame",
	      f->file);
	CHECK(o.tstate_native_thread_id == (f->minor >= 15 ? 184 : 160),
	      "%s native_thread_id %u", f->file, o.tstate_native_thread_id);
}

static void expect_reject(const unsigned char *buf, size_t len, int minor,
			  int want, const char *what)
{
	struct py_offsets o;
	char err[256];
	int ret;

	ret = parse(buf, len, minor, &o, err, sizeof(err));
	CHECK(ret == want, "%s: got %d want %d (%s)", what, ret, want, err);
	CHECK(err[0] && !strchr(err, '\n'), "%s: one-line reason '%s'",
	      what, err);
}

static void test_rejects(const struct fixture *f)
{
	const struct offsets_debug_layout *l = layout_of(f->minor);
	unsigned char buf[FIXTURE_MAX];
	char what[128];

	if (!l)
		return;
	memcpy(buf, f->buf, f->len);
	buf[0] ^= 0x20;
	expect_reject(buf, f->len, f->minor, -EINVAL, "bad cookie");

	expect_reject(f->buf, 0, f->minor, -EINVAL, "empty");
	expect_reject(NULL, 4096, f->minor, -EINVAL, "NULL");
	expect_reject(f->buf, 7, f->minor, -EINVAL, "7 bytes");
	expect_reject(f->buf, 23, f->minor, -EINVAL, "23 bytes");
	expect_reject(f->buf, l->struct_size - 1, f->minor, -EINVAL,
		      "one byte short");
	expect_reject(f->buf, f->len, f->minor - 1, -EINVAL,
		      "version mismatch down");
	expect_reject(f->buf, f->len, 12, -EINVAL, "3.12 has none");

	memcpy(buf, f->buf, f->len);
	put64(buf, l->version, 0x02070000 | f->minor << 16);
	expect_reject(buf, f->len, f->minor, -EINVAL, "major 2");

	memcpy(buf, f->buf, f->len);
	put64(buf, l->free_threaded, 1);
	expect_reject(buf, f->len, f->minor, -EPROTONOSUPPORT,
		      "free-threaded");
	{
		struct py_offsets o;
		char err[256];

		parse(buf, f->len, f->minor, &o, err, sizeof(err));
		CHECK(strstr(err, "free-threaded") != NULL,
		      "free-threaded message '%s'", err);
	}
	put64(buf, l->free_threaded, 2);
	expect_reject(buf, f->len, f->minor, -EINVAL, "free_threaded = 2");

	/* Each value the parser reads, made garbage in turn. */
#define GARBAGE(fld)							\
	memcpy(buf, f->buf, f->len);					\
	put64(buf, l->fld, 0x4141414141414141ULL);			\
	snprintf(what, sizeof(what), "%s " #fld " garbage", f->file);	\
	expect_reject(buf, f->len, f->minor, -EINVAL, what);		\
	memcpy(buf, f->buf, f->len);					\
	put64(buf, l->fld, 0xffff);					\
	snprintf(what, sizeof(what), "%s " #fld " 0xffff", f->file);	\
	expect_reject(buf, f->len, f->minor, -EINVAL, what);
	LAYOUT_FIELDS(GARBAGE)
	if (l->unicode_compact_size) {
		GARBAGE(unicode_compact_size)
	}
#undef GARBAGE

	/* Plausible-looking but wrong: a field moved onto another. */
	memcpy(buf, f->buf, f->len);
	put64(buf, l->frame_executable, 8);
	expect_reject(buf, f->len, f->minor, -EINVAL, "executable == previous");
	memcpy(buf, f->buf, f->len);
	put64(buf, l->unicode_ascii_size, 48);
	put64(buf, l->unicode_state, 40);
	expect_reject(buf, f->len, f->minor, -EINVAL, "no room for hash");
}

/* 3.16+: the newest layout is tried, and kept only if it validates. */
static void test_future(const struct fixture *f15)
{
	const struct offsets_debug_layout *l = layout_of(15);
	unsigned char buf[FIXTURE_MAX];
	struct py_offsets o, ref;
	char err[256];
	int ret;

	if (!l)
		return;
	parse(f15->buf, f15->len, 15, &ref, err, sizeof(err));

	memcpy(buf, f15->buf, f15->len);
	put64(buf, l->version, 0x031000a1);
	ret = parse(buf, f15->len, 16, &o, err, sizeof(err));
	CHECK(ret == 0, "3.16 with a 3.15 layout: %d %s", ret, err);
	CHECK(o.version_hex == 0x031000a1, "3.16 version %#x", o.version_hex);
	CHECK(o.tstate_native_thread_id == ref.tstate_native_thread_id &&
	      o.frame_code == ref.frame_code, "3.16 values");

	put64(buf, l->tstate_native_thread_id, 1 << 20);
	expect_reject(buf, f15->len, 16, -ENOTSUP, "3.16 not validating");
	parse(buf, f15->len, 16, &o, err, sizeof(err));
	CHECK(strstr(err, "Python 3.16: _Py_DebugOffsets layout unknown "
		     "and values do not validate"), "3.16 message '%s'", err);
	put64(buf, l->tstate_native_thread_id, ref.tstate_native_thread_id);
	expect_reject(buf, l->struct_size - 1, 16, -ENOTSUP, "3.16 short");

	/* A 3.14 runtime read by a caller that believes it is 3.16. */
	expect_reject(fixtures[2].buf, fixtures[2].len, 16, -EINVAL,
		      "3.14 bytes as 3.16");
}

/*
 * Whatever the parser accepts must be safe to hand to BPF.  Returns why
 * not, or NULL.
 */
static const char *unsafe(const struct py_offsets *o, int minor)
{
	if (((o->version_hex >> 16) & 0xff) != (unsigned int)minor ||
	    o->version_hex >> 24 != 3)
		return "version";
	if (o->frame_model != PY_FRAMES_DIRECT ||
	    o->match != PY_MATCH_NATIVE_TID ||
	    o->instr_kind != PY_INSTR_POINTER)
		return "kinds";
	if (o->cframe_current_frame != PY_OFF_NONE)
		return "cframe";
#define PRESENT(fld)							\
	if (&o->fld != &o->cframe_current_frame && o->fld == PY_OFF_NONE) \
		return #fld " absent";
	U16_FIELDS(PRESENT)
	PRESENT(interp_modules)
#undef PRESENT
	if (o->unicode_ascii_data < 32 || o->unicode_ascii_data > 64 ||
	    o->unicode_compact_data <= o->unicode_ascii_data)
		return "str data";
	if (o->frame_owner >= 1024 || o->frame_previous >= 1024 ||
	    o->frame_code >= 1024 || o->frame_instr >= 1024)
		return "frame offsets";
	return NULL;
}

static void mutate(unsigned char *buf, size_t span)
{
	unsigned int n = 1 + rnd() % 4, i;

	for (i = 0; i < n; i++) {
		size_t pos = rnd() % span;

		switch (rnd() % 4) {
		case 0:		/* flip a bit */
			buf[pos] ^= 1 << (rnd() % 8);
			break;
		case 1:		/* random byte */
			buf[pos] = rnd();
			break;
		case 2:		/* random aligned word */
			put64(buf, (pos & ~7UL) % (span - 7), rnd());
			break;
		default:	/* small aligned word, the dangerous kind */
			put64(buf, (pos & ~7UL) % (span - 7), rnd() % 4096);
			break;
		}
	}
}

static void test_fuzz(void)
{
	unsigned char buf[FIXTURE_MAX];
	unsigned int iter, accepted = 0;
	int fails_before = failed;

	for (iter = 0; iter < 50000; iter++) {
		const struct fixture *f = &fixtures[rnd() % NFIXTURES];
		const struct offsets_debug_layout *l = layout_of(f->minor);
		struct py_offsets o;
		char err[64];
		size_t len = f->len;
		int minor = f->minor, ret;

		if (!l || !f->len)
			continue;
		memcpy(buf, f->buf, f->len);
		mutate(buf, l->struct_size);
		if (rnd() % 8 == 0)
			len = rnd() % (l->struct_size + 16);
		if (rnd() % 16 == 0)
			minor += 1 + rnd() % 3;	/* future-minor path */
		ret = offsets__from_debug(buf, len, minor, &o, err,
					  sizeof(err));
		if (ret == 0) {
			const char *why = unsafe(&o, minor);

			accepted++;
			if (why)
				CHECK(0, "fuzz %u: accepted unsafe: %s", iter,
				      why);
		} else if (ret != -EINVAL && ret != -ENOTSUP &&
			   ret != -EPROTONOSUPPORT) {
			CHECK(0, "fuzz %u: unexpected error %d", iter, ret);
		}
		if (failed - fails_before > 20)
			break;	/* one broken invariant, not thousands */
	}
	CHECK(failed == fails_before, "fuzz: %u iterations", iter);
	CHECK(accepted > 0 && accepted < iter, "fuzz: accepted %u of %u",
	      accepted, iter);
}

int main(void)
{
	unsigned int i;

	test_table();
	for (i = 0; i < NFIXTURES; i++) {
		if (load(&fixtures[i])) {
			CHECK(0, "cannot read %s/%s", FIXTURE_DIR,
			      fixtures[i].file);
			continue;
		}
		test_fixture(&fixtures[i]);
		test_rejects(&fixtures[i]);
	}
	test_future(&fixtures[3]);
	test_fuzz();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
