// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded profiles read back into the model: round trips through the
 * writer, labels and causes as fields, the report's tally, and the
 * errors a bad file gets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "reader.h"
#include "tally.h"
#include "writer.h"

static const char *fixtures;

static char *write_mem(struct profile *p, const struct write_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && !writer_folded.write(p, o, f), "write");
	fclose(f);
	return buf;
}

static struct profile *read_text(const char *text, int *ret, char *err,
				 size_t errlen)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct profile *p = NULL;

	err[0] = 0;
	*ret = read_folded(f, &p, err, errlen);
	fclose(f);
	return p;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &cap, 0, f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Read a golden file and write it again: the same bytes. */
static void test_round_trip(const char *name, bool threads)
{
	struct write_opts wo = { .groups = { GROUP_THREAD },
				 .ngroups = threads };
	char path[4096], err[256];
	struct profile *p = NULL;
	char *want, *got;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	want = slurp(path);
	ret = reader__load(path, &p, err, sizeof(err));
	CHECK(!ret && p, "load %s: %s", name, err);
	if (ret)
		return;
	CHECK(profile__unit(p) == UNIT_SAMPLES, "%s: samples", name);
	CHECK(profile__total(p) == 77, "%s: total %llu", name,
	      (unsigned long long)profile__total(p));
	got = write_mem(p, &wo);
	CHECK(want && got && !strcmp(want, got), "%s round trip:\n%s", name,
	      got);
	if (threads)
		CHECK(profile__nthreads(p) == 7, "threads %u",
		      profile__nthreads(p));
	free(want);
	free(got);
	profile__free(p);
}

static void test_labels(void)
{
	const char *text =
		"process python3 4711 (ns 12);thread 4712 (Thread-1 (work));"
		"main (app.py:3);time.sleep (<built-in>);[off-cpu: sleep];"
		"schedule_[k] 1500\n"
		"process python3 4711 (ns 12);thread 4711 (python3);"
		"main (app.py:3);burn (app.py:9) 500\n"
		"main (app.py:3);[runqueue] 2000\n";
	struct write_opts wo = { .groups = { GROUP_PROCESS, GROUP_THREAD },
				 .ngroups = 2 };
	const struct pentry **e;
	struct profile *p;
	char err[128], *out;
	size_t n, i;
	int ret, seen = 0;

	p = read_text(text, &ret, err, sizeof(err));
	CHECK(!ret && p, "read: %s", err);
	if (!p)
		return;
	CHECK(profile__unit(p) == UNIT_NANOSECONDS,
	      "causes named: the counts are microseconds");
	CHECK(profile__total(p) == 4000000, "total %llu ns",
	      (unsigned long long)profile__total(p));
	CHECK(profile__total_kind(p, KIND_SLEEP) == 1500000, "sleep");
	CHECK(profile__total_kind(p, KIND_RUNQUEUE) == 2000000, "runqueue");
	CHECK(!profile__entries(p, &e, &n), "entries");
	for (i = 0; i < n; i++) {
		const struct pthread *t = e[i]->thread;

		if (e[i]->kind != KIND_SLEEP)
			continue;
		seen++;
		CHECK(t && t->pid == 4711 && t->ns_pid == 12 && t->tid == 4712 &&
		      !strcmp(t->process, "python3") &&
		      !strcmp(t->name, "Thread-1 (work)"), "labels as fields");
		CHECK(e[i]->stack->n == 3 &&
		      e[i]->stack->frames[2]->kind == PFRAME_KERNEL &&
		      !strcmp(e[i]->stack->frames[2]->name, "schedule") &&
		      e[i]->stack->frames[1]->line == 0 &&
		      !strcmp(e[i]->stack->frames[1]->file, "<built-in>"),
		      "frames: python, then kernel");
	}
	CHECK(seen == 1, "one sleep entry");
	free(e);
	out = write_mem(p, &wo);
	CHECK(out && !strcmp(out,
		"main (app.py:3);[runqueue] 2000\n"
		"process python3 4711 (ns 12);thread 4711 (python3);"
		"main (app.py:3);burn (app.py:9) 500\n"
		"process python3 4711 (ns 12);thread 4712 (Thread-1 (work));"
		"main (app.py:3);time.sleep (<built-in>);[off-cpu: sleep];"
		"schedule_[k] 1500\n"), "written back:\n%s", out);
	free(out);
	profile__free(p);
}

/* --native's frames read back as native, and written back as they were;
 * texts that only look alike stay what they are */
static void test_native_frames(void)
{
	const char *text =
		"main (app.py:3);ffi_call [libffi.so.8];[libburn.so]+0x1a2b;"
		"geo::Grid<double>::fill [libshapes.so] 7\n"
		"main (app.py:3);[unknown native] 1\n";
	static const char *const native[] = {
		"burn_inner [libburn.so]", "[libx.so]+0x1f", "a::b<c> [lib.so]",
	};
	static const char *const other[] = {
		"[truncated]", "[libx.so]+0x", "[libx.so]+0xzz", "f [", "[lib]",
		"main (app.py:3)", " [lib.so]", "",
	};
	const struct pentry **e;
	struct profile *p;
	char err[128], *out;
	size_t n, i;
	int ret, k;

	for (i = 0; i < sizeof(native) / sizeof(native[0]); i++)
		CHECK(profile__native_name(native[i]), "native: %s", native[i]);
	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		CHECK(!profile__native_name(other[i]), "not native: '%s'", other[i]);
	p = read_text(text, &ret, err, sizeof(err));
	CHECK(!ret && p, "read: %s", err);
	if (!p)
		return;
	CHECK(!profile__entries(p, &e, &n), "entries");
	for (i = 0; i < n; i++) {
		const struct pstack *s = e[i]->stack;

		if (s->n != 4)
			continue;
		for (k = 1; k < 4; k++)
			CHECK(s->frames[k]->kind == PFRAME_NATIVE &&
			      !s->frames[k]->file, "%s native",
			      s->frames[k]->name);
		CHECK(s->frames[0]->kind == PFRAME_PYTHON, "main is Python");
	}
	free(e);
	out = write_mem(p, &(struct write_opts){ 0 });
	CHECK(out && strstr(out, "main (app.py:3);ffi_call [libffi.so.8];"
				 "[libburn.so]+0x1a2b;geo::Grid<double>::fill "
				 "[libshapes.so] 7\n"), "written back:\n%s", out);
	free(out);
	profile__free(p);
}

/* container and cgroup roots, both ways */
static void test_container_labels(void)
{
	const char *text =
		"container 4f1e9b2c0123 pod 6a1e5b4f-3c2d-4e8f-9a0b-1c2d3e4f5a6b;"
		"main (app.py:3) 5\n"
		"host;main (app.py:3) 2\n"
		"cgroup /system.slice/x.service;main (app.py:3) 1\n";
	struct write_opts wo = { .groups = { GROUP_CONTAINER }, .ngroups = 1 };
	struct profile *p;
	char err[128], *out;
	int ret;

	p = read_text(text, &ret, err, sizeof(err));
	CHECK(!ret && p, "read: %s", err);
	if (!p)
		return;
	out = write_mem(p, &wo);
	CHECK(out && !strcmp(out,
		"container 4f1e9b2c0123 pod 6a1e5b4f-3c2d-4e8f-9a0b-1c2d3e4f5a6b;"
		"main (app.py:3) 5\n"
		"host;main (app.py:3) 3\n"), "containers:\n%s", out);
	free(out);
	wo.groups[0] = GROUP_CGROUP;
	out = write_mem(p, &wo);
	CHECK(out && !strcmp(out,
		"cgroup /system.slice/x.service;main (app.py:3) 1\n"
		"main (app.py:3) 7\n"), "cgroups:\n%s", out);
	free(out);
	profile__free(p);
}

static void test_tally(void)
{
	struct tally_opts o = { .by = BY_LINE };
	char path[4096], err[256];
	struct profile *p = NULL;
	struct tally t;

	snprintf(path, sizeof(path), "%s/golden-threads.folded", fixtures);
	CHECK(!reader__load(path, &p, err, sizeof(err)), "load: %s", err);
	if (!p)
		return;
	CHECK(!tally__build(p, &o, &t), "tally");
	CHECK(t.total == 77 && t.n > 3, "rows %zu", t.n);
	CHECK(!strcmp(t.rows[0].text, "slow_score (app.py:19)") &&
	      t.rows[0].self == 27 && t.rows[0].total == 27, "top row %s",
	      t.rows[0].text);
	/* labels are not frames: no thread row */
	CHECK(t.n == 19, "19 distinct frames: %zu", t.n);
	for (size_t i = 0; i < t.n; i++)
		CHECK(strncmp(t.rows[i].text, "thread ", 7), "label as a row: %s",
		      t.rows[i].text);
	tally__free(&t);

	/* recursion counts once in total; by function merges lines */
	o.by = BY_FUNCTION;
	CHECK(!tally__build(p, &o, &t), "tally by function");
	CHECK(!strcmp(t.rows[0].text, "slow_score (app.py)"), "%s",
	      t.rows[0].text);
	for (size_t i = 0; i < t.n; i++) {
		if (!strcmp(t.rows[i].text, "recurse (deep.py)"))
			CHECK(t.rows[i].total == 4, "recursion once: %llu",
			      (unsigned long long)t.rows[i].total);
		if (!strcmp(t.rows[i].text, "main (app.py)"))
			CHECK(t.rows[i].total == 43, "main merged: %llu",
			      (unsigned long long)t.rows[i].total);
	}
	tally__free(&t);

	/* one thread */
	o.by = BY_FILE;
	o.tid = 300;
	CHECK(!tally__build(p, &o, &t), "tally thread 300");
	CHECK(t.total == 18 && !strcmp(t.rows[0].text, "/srv/app/x.py"),
	      "thread 300: %llu, %s", (unsigned long long)t.total,
	      t.n ? t.rows[0].text : "-");
	tally__free(&t);
	profile__free(p);
}

static void test_errors(void)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{ "a;b 3\nnot a stack\n", "line 2: not 'frame;frame;... COUNT'" },
		{ "a;b x\n", "line 1: not" },
		{ "a;b -3\n", "line 1: not" },
		{ " 3\n", "line 1: not" },
		{ "a;b 99999999999999999999999\n", "line 1: not" },
		{ "\n# comment\nthread 5 (x) 3\n", "line 3: not" },
		{ "[off-cpu: io] 18446744073709551615\n", "line 1: count too large" },
	};
	char err[128], deep[4200 * 2 + 8];
	struct profile *p;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = read_text(cases[i].text, &ret, err, sizeof(err));
		CHECK(ret == -EINVAL && !p, "case %zu: %d", i, ret);
		CHECK(strstr(err, cases[i].why), "case %zu: '%s', want '%s'", i,
		      err, cases[i].why);
	}
	for (i = 0; i < 4200; i++)
		memcpy(deep + 2 * i, "a;", 2);
	strcpy(deep + 2 * 4200 - 1, " 1\n");
	p = read_text(deep, &ret, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "deeper than 4096"), "deep: %s",
	      err);

	/* binary data, with the NUL inside a line */
	{
		FILE *f = fmemopen("a;b 1\nx\0y 2\n", 12, "r");

		p = NULL;
		ret = read_folded(f, &p, err, sizeof(err));
		fclose(f);
		CHECK(ret == -EINVAL && strstr(err, "line 2: binary"), "%s", err);
	}
	p = read_text("", &ret, err, sizeof(err));
	CHECK(!ret && p && profile__total(p) == 0, "empty file: no samples");
	profile__free(p);

	ret = reader__load("/nonexistent.folded", &p, err, sizeof(err));
	CHECK(ret == -ENOENT && strstr(err, "/nonexistent.folded"), "%s", err);
	ret = reader__load("/tmp", &p, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "not a regular file"), "%s", err);
}

int main(int argc, char **argv)
{
	fixtures = argc > 1 ? argv[1] : "tests/fixtures";
	test_round_trip("golden.folded", false);
	test_round_trip("golden-threads.folded", true);
	test_labels();
	test_native_frames();
	test_container_labels();
	test_tally();
	test_errors();
	return check_summary();
}
