// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof and speedscope: a profile written and read back is the same
 * profile (as its folded text shows it, labels and causes included); the
 * pprof message keeps the id and string-table rules; bad files get one
 * line naming the byte, sample or index; --collapse and the choice of
 * format by extension.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "collapse.h"
#include "labels.h"
#include "pprof.h"
#include "reader.h"
#include "utf8.h"
#include "writer.h"

static char tmpdir[] = "/tmp/pysight-formats-XXXXXX";

static char *folded_text(struct profile *p)
{
	struct write_opts o = { .groups = { GROUP_PROCESS, GROUP_THREAD,
					    GROUP_CONTAINER },
				.ngroups = 3 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && !writer_folded.write(p, &o, f), "folded write");
	fclose(f);
	return buf;
}

/* A wall-clock profile with everything a writer must carry. */
static struct profile *rich_profile(void)
{
	struct profile *p = profile__new(UNIT_NANOSECONDS);
	const struct pframe *f[6];
	const struct pthread *t1, *t2;
	const struct pcgroup *cg;
	struct profile_meta *m = profile__meta(p);

	m->mode = MODE_WALL;
	m->rate_hz = 1000;
	snprintf(m->target, sizeof(m->target), "python3 app.py --port 80");
	t1 = profile__thread(p, 812, 0, 812, "python3", "MainThread");
	t2 = profile__thread(p, 812, 0, 815, "python3", "worker / pool 2");
	cg = profile__cgroup(p, 77, "/system.slice/docker-ab.scope",
			     "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
			     NULL);
	f[0] = profile__frame(p, "<module>", "/srv/app.py", 40, 1, PFRAME_PYTHON);
	f[1] = profile__frame(p, "Server.handle", "/srv/app.py", 22, 20, PFRAME_PYTHON);
	f[2] = profile__frame(p, "slow;score", "/srv/app.py", 9, 7, PFRAME_PYTHON);
	f[3] = profile__frame(p, "do_sys_poll", NULL, 0, 0, PFRAME_KERNEL);
	f[4] = profile__frame(p, "schedule", NULL, 0, 0, PFRAME_KERNEL);
	f[5] = profile__frame(p, "[truncated]", NULL, 0, 0, PFRAME_PSEUDO);
	CHECK(!profile__add(p, profile__stack(p, f, 3), t1, cg, KIND_CPU, 3,
			    3000000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 2), t1, cg, KIND_CPU, 1,
			    250000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 5), t2, cg, KIND_IO, 2,
			    7000000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 2), t2, NULL, KIND_SLEEP,
			    1, 50000000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 0), t2, NULL,
			    KIND_RUNQUEUE, 1, 1500000), "add");
	CHECK(!profile__add(p, profile__stack(p, &f[5], 1), NULL, NULL,
			    KIND_CPU, 1, 1000000), "add");
	/* asyncio tasks' own time: a sample type and a root of its own */
	f[0] = profile__frame(p, "[task main]", NULL, 0, 0, PFRAME_PSEUDO);
	f[1] = profile__frame(p, "main", "/srv/app.py", 30, 28, PFRAME_PYTHON);
	f[2] = profile__frame(p, "[task conn-7]", NULL, 0, 0, PFRAME_PSEUDO);
	f[3] = profile__frame(p, "Server.handle", "/srv/app.py", 22, 20,
			      PFRAME_PYTHON);
	CHECK(!profile__add(p, profile__stack(p, f, 2), t1, cg,
			    KIND_AWAIT_TASK, 2, 9000000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 4), t1, cg,
			    KIND_AWAIT_SLEEP, 3, 6000000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 4), t1, cg,
			    KIND_AWAIT_BUSY, 1, 3000000), "add");
	return p;
}

static struct profile *sampled_profile(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	const struct pframe *f[2];
	const struct pthread *t;

	profile__meta(p)->rate_hz = 250;
	t = profile__thread(p, 31, 0, 31, "py", "MainThread");
	f[0] = profile__frame(p, "main", "a.py", 3, 1, PFRAME_PYTHON);
	f[1] = profile__frame(p, "leaf", "b.py", 12, 10, PFRAME_PYTHON);
	CHECK(!profile__add(p, profile__stack(p, f, 2), t, NULL, KIND_CPU, 40,
			    40), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 1), t, NULL, KIND_CPU, 2,
			    2), "add");
	return p;
}

static void round_trip(const struct writer *w, struct profile *p,
		       const char *name)
{
	char path[128], err[512] = "";
	struct profile *q = NULL;
	char *a, *b;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ret = writer__write_file(w, p, NULL, path);
	CHECK(!ret, "%s: write: %s", name, strerror(-ret));
	ret = reader__load(path, &q, err, sizeof(err));
	CHECK(!ret && q, "%s: read: %s", name, err);
	if (!q)
		return;
	a = folded_text(p);
	b = folded_text(q);
	CHECK(!strcmp(a, b), "%s: round trip\n--- wrote\n%s--- read\n%s", name,
	      a, b);
	CHECK(profile__unit(q) == profile__unit(p), "%s: unit", name);
	CHECK(profile__meta(q)->mode == profile__meta(p)->mode,
	      "%s: mode %d", name, profile__meta(q)->mode);
	CHECK(!strcmp(profile__meta(q)->target, profile__meta(p)->target),
	      "%s: target '%s'", name, profile__meta(q)->target);
	CHECK(profile__total(q) == profile__total(p), "%s: total %llu", name,
	      (unsigned long long)profile__total(q));
	free(a);
	free(b);
	profile__free(q);
}

/* Task time stays apart: out of the total, under its own root. */
static void test_task_entries(void)
{
	struct profile *p = rich_profile(), *q = NULL;
	char *text = folded_text(p), *line, *again, path[128], err[256];
	int tasks = 0;
	FILE *f;

	CHECK(profile__total(p) == 62750000, "total %llu: tasks left out",
	      (unsigned long long)profile__total(p));
	CHECK(profile__total_kind(p, KIND_AWAIT_SLEEP) == 6000000, "by kind");
	for (line = text; line && *line; line = strchr(line, '\n'),
	     line = line ? line + 1 : NULL)
		if (!strncmp(line, PROFILE_TASKS_ROOT ";", strlen(PROFILE_TASKS_ROOT) + 1))
			tasks++;
	CHECK(tasks == 3, "%d lines under " PROFILE_TASKS_ROOT ":\n%s", tasks,
	      text);
	CHECK(strstr(text, "[task conn-7];Server.handle (/srv/app.py:22);"
		      "[await: loop busy] 3000\n") != NULL, "%s", text);
	/* and read back from folded text, labels and roots and all */
	snprintf(path, sizeof(path), "%s/tasks.folded", tmpdir);
	f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && !fclose(f), "write %s", path);
	CHECK(!reader__load(path, &q, err, sizeof(err)) && q, "read: %s", err);
	if (q) {
		again = folded_text(q);
		CHECK(!strcmp(text, again), "folded round trip:\n%s---\n%s",
		      text, again);
		CHECK(profile__total(q) == profile__total(p), "total read");
		free(again);
		profile__free(q);
	}
	free(text);
	profile__free(p);
}

/* The raw pprof message of a file we wrote. */
static Perftools__Profiles__Profile *decode(const char *path)
{
	static uint8_t out[1 << 20];
	uint8_t in[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(in, 1, sizeof(in), f) : 0;
	uLongf outlen = sizeof(out);
	z_stream z = { .next_in = in, .avail_in = n, .next_out = out,
		       .avail_out = outlen };

	if (f)
		fclose(f);
	if (inflateInit2(&z, 16 + 15) || inflate(&z, Z_FINISH) != Z_STREAM_END)
		return NULL;
	inflateEnd(&z);
	return perftools__profiles__profile__unpack(NULL, z.total_out, out);
}

/* A count read from a file may be anything up to INT64_MAX: its CPU
 * time (count times the period) saturates, and a rate that came back
 * from a period as a double keeps that period exactly. */
static void test_pprof_huge_count(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	const struct pframe *f = profile__frame(p, "main", "a.py", 3, 1, PFRAME_PYTHON);
	Perftools__Profiles__Profile *pb;
	char path[128];

	profile__meta(p)->rate_hz = 1e9 / 111111111;	/* read back: 9.000000009 */
	CHECK(!profile__add(p, profile__stack(p, &f, 1), NULL, NULL, KIND_CPU,
			    1, 1ULL << 62), "add");
	snprintf(path, sizeof(path), "%s/huge.pb.gz", tmpdir);
	CHECK(!writer__write_file(&writer_pprof, p, NULL, path), "write");
	pb = decode(path);
	CHECK(pb && pb->period == 111111111, "period %lld",
	      pb ? (long long)pb->period : 0);
	CHECK(pb && pb->n_sample == 1 && pb->sample[0]->n_value == 2 &&
	      pb->sample[0]->value[0] == 1LL << 62 &&
	      pb->sample[0]->value[1] == INT64_MAX, "cpu saturates");
	perftools__profiles__profile__free_unpacked(pb, NULL);
	profile__free(p);
}

static void test_pprof_rules(void)
{
	struct profile *p = rich_profile();
	Perftools__Profiles__Profile *pb;
	char path[128];
	size_t i;
	bool ok = true;

	snprintf(path, sizeof(path), "%s/rules.pb.gz", tmpdir);
	CHECK(!writer__write_file(&writer_pprof, p, NULL, path), "write");
	pb = decode(path);
	CHECK(pb != NULL, "decodes as a Profile");
	if (!pb)
		goto out;
	CHECK(pb->n_string_table && !strcmp(pb->string_table[0], ""),
	      "string_table[0] is empty");
	for (i = 0; i < pb->n_mapping; i++)
		ok &= pb->mapping[i]->id == i + 1;
	for (i = 0; i < pb->n_location; i++)
		ok &= pb->location[i]->id == i + 1 &&
		      pb->location[i]->mapping_id == 1;
	for (i = 0; i < pb->n_function; i++)
		ok &= pb->function[i]->id == i + 1;
	CHECK(ok && pb->n_mapping == 1, "ids run 1..N");
	/* samples/count, cpu, wall, off_cpu, task_wall; wall the default */
	CHECK(pb->n_sample_type == 5, "%zu sample types", pb->n_sample_type);
	CHECK(!strcmp(pb->string_table[pb->default_sample_type], "wall"),
	      "default %s", pb->string_table[pb->default_sample_type]);
	CHECK(pb->n_sample_type == 5 &&
	      !strcmp(pb->string_table[pb->sample_type[4]->type],
		      PROFILE_TASK_TYPE), "the tasks' type last");
	/* a task's sample has its own type alone */
	for (i = 0; pb->n_sample_type == 5 && i < pb->n_sample; i++) {
		int64_t *v = pb->sample[i]->value;

		ok = !v[4] || (!v[0] && !v[1] && !v[2] && !v[3]);
		CHECK(ok, "sample %zu mixes task time with thread time", i);
	}
	/* one Function per code object: slow;score's at one line only */
	for (i = 0; i < pb->n_function; i++)
		if (!strcmp(pb->string_table[pb->function[i]->name], "slow;score"))
			CHECK(pb->function[i]->start_line == 7, "first line");
	/* label names Prometheus takes */
	for (i = 0; i < pb->n_sample; i++) {
		size_t j;

		for (j = 0; j < pb->sample[i]->n_label; j++) {
			const char *k = pb->string_table[pb->sample[i]->label[j]->key];

			CHECK(strspn(k, "abcdefghijklmnopqrstuvwxyz_") == strlen(k),
			      "label %s", k);
		}
	}
	perftools__profiles__profile__free_unpacked(pb, NULL);
out:
	profile__free(p);
}

/* Write bytes to a file and load it: the error. */
static int load_bytes(const char *name, const void *data, size_t len,
		      char *err, size_t errlen)
{
	struct profile *q = NULL;
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	fwrite(data, 1, len, f);
	fclose(f);
	err[0] = 0;
	ret = reader__load(path, &q, err, errlen);
	profile__free(q);
	CHECK(!strchr(err, '\n'), "one line: %s", err);
	CHECK(strstr(err, name) != NULL, "names the file: %s", err);
	return ret;
}

#define LOAD_STR(name, s) load_bytes(name, s, strlen(s), err, sizeof(err))

static void test_bad_speedscope(void)
{
	char err[512];

	CHECK(LOAD_STR("trunc.json", "{\"shared\": {\"frames\": [") &&
	      strstr(err, "byte 23: unexpected end"), "%s", err);
	CHECK(LOAD_STR("garbage.json", "{\"a\": nope}") && strstr(err, "byte"),
	      "%s", err);
	CHECK(LOAD_STR("other.json", "{\"a\": 1}") &&
	      strstr(err, "not speedscope"), "%s", err);
	CHECK(LOAD_STR("range.json",
		       "{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":"
		       "[{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0],[0,5]],"
		       "\"weights\":[1,1]}]}") &&
	      strstr(err, "profiles[0].samples[1]: frame 5 out of range"),
	      "%s", err);
	CHECK(LOAD_STR("weights.json",
		       "{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":"
		       "[{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],"
		       "\"weights\":[1,2]}]}") &&
	      strstr(err, "1 samples but 2 weights"), "%s", err);
	CHECK(LOAD_STR("neg.json",
		       "{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":"
		       "[{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],"
		       "\"weights\":[-1]}]}") &&
	      strstr(err, "weight out of range"), "%s", err);
	CHECK(LOAD_STR("evented.json",
		       "{\"shared\":{\"frames\":[]},\"profiles\":"
		       "[{\"type\":\"evented\",\"unit\":\"none\"}]}") &&
	      strstr(err, "evented profiles are not supported"), "%s", err);
	CHECK(LOAD_STR("unit.json",
		       "{\"shared\":{\"frames\":[]},\"profiles\":"
		       "[{\"type\":\"sampled\",\"unit\":\"parsecs\"}]}") &&
	      strstr(err, "unknown unit"), "%s", err);
	CHECK(LOAD_STR("empty.json", "") && strstr(err, "empty"), "%s", err);
	CHECK(LOAD_STR("deep.json",
		       "{\"shared\":{\"frames\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
		       "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]") &&
	      strstr(err, "byte"), "nesting: %s", err);
}

static void test_bad_pprof(void)
{
	struct profile *p = sampled_profile();
	char path[128], err[512];
	uint8_t buf[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/good.pb.gz", tmpdir);
	CHECK(!writer__write_file(&writer_pprof, p, NULL, path), "write");
	f = fopen(path, "r");
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	CHECK(load_bytes("half.pb.gz", buf, n / 2, err, sizeof(err)) &&
	      strstr(err, "truncated gzip"), "%s", err);
	buf[n / 2] ^= 0x55;
	CHECK(load_bytes("flipped.pb.gz", buf, n, err, sizeof(err)) &&
	      strstr(err, "byte"), "%s", err);
	{
		/* a gzip'd message that is not a Profile */
		uint8_t z[64];
		uLongf zl = sizeof(z);
		z_stream s = { .next_in = (uint8_t *)"\x0a\xff\xff\xff", .avail_in = 4,
			       .next_out = z, .avail_out = sizeof(z) };

		deflateInit2(&s, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY);
		deflate(&s, Z_FINISH);
		zl = s.total_out;
		deflateEnd(&s);
		CHECK(load_bytes("notprofile.pb.gz", z, zl, err, sizeof(err)) &&
		      strstr(err, "not a perftools.profiles.Profile"), "%s", err);
	}
	{
		/* a sample naming a location that does not exist */
		Perftools__Profiles__Profile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
		Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
		Perftools__Profiles__ValueType *vts[] = { &vt };
		Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT;
		Perftools__Profiles__Sample *ss[] = { &s };
		char *strs[] = { "", "samples", "count" };
		uint64_t loc = 99;
		int64_t val = 1;
		uint8_t raw[256];
		size_t rl;

		vt.type = 1;
		vt.unit = 2;
		pb.sample_type = vts;
		pb.n_sample_type = 1;
		pb.string_table = strs;
		pb.n_string_table = 3;
		s.location_id = &loc;
		s.n_location_id = 1;
		s.value = &val;
		s.n_value = 1;
		pb.sample = ss;
		pb.n_sample = 1;
		rl = perftools__profiles__profile__pack(&pb, raw);
		CHECK(load_bytes("badloc.pprof", raw, rl, err, sizeof(err)) &&
		      strstr(err, "sample 0: location id 99 not defined"), "%s", err);
		strs[0] = "x";
		rl = perftools__profiles__profile__pack(&pb, raw);
		CHECK(load_bytes("badstr.pprof", raw, rl, err, sizeof(err)) &&
		      strstr(err, "string_table[0]"), "%s", err);
	}
	profile__free(p);
}

static void test_titles(void)
{
	char s[] = "py / x 12 / worker / pool 2 815 [container abc123]";
	struct parsed_labels lab;

	CHECK(labels__parse_title(s, &lab) && lab.pid == 12 && lab.tid == 815 &&
	      !strcmp(lab.process, "py / x") &&
	      !strcmp(lab.thread, "worker / pool 2") &&
	      !strcmp(lab.container, "abc123"), "title with slashes");
	{
		char t[] = "all threads";

		CHECK(!labels__parse_title(t, &lab), "no thread");
	}
}

static void test_collapse(void)
{
	struct profile *p = rich_profile(), *q = NULL;
	struct collapse c = {};
	char err[128], *text;

	CHECK(collapse__add(&c, "^Server\\.handle ", err, sizeof(err)) == 0,
	      "%s", err);
	CHECK(collapse__add(&c, "([", err, sizeof(err)) == -EINVAL && err[0],
	      "bad regex: %s", err);
	CHECK(!collapse__apply(&c, p, &q) && q != p, "apply");
	text = folded_text(q);
	CHECK(strstr(text, "<module> (/srv/app.py:40);slow:score (/srv/app.py:9) 3000") &&
	      !strstr(text, "Server.handle"), "children join the ancestor:\n%s",
	      text);
	CHECK(profile__total(q) == profile__total(p), "total kept");
	free(text);
	profile__free(q);
	collapse__free(&c);
	CHECK(!collapse__apply(&c, p, &q) && q == p, "no regex: the same");
	profile__free(p);
}

static void test_extensions(void)
{
	CHECK(writer__for_path("a.pb.gz") == &writer_pprof, "pb.gz");
	CHECK(writer__for_path("a.pprof") == &writer_pprof, "pprof");
	CHECK(writer__for_path("dir.x/a.speedscope.json") == &writer_speedscope,
	      "speedscope.json");
	CHECK(writer__for_path("a.JSON") == &writer_speedscope, "JSON");
	CHECK(writer__for_path("a.svg") == &writer_svg, "svg");
	CHECK(writer__for_path("a.txt") == &writer_folded, "txt");
	CHECK(writer__for_path("a.gz") == NULL, "gz alone");
	CHECK(writer__for_path("a.bogus") == NULL, "unknown");
	CHECK(writer__for_path("d.x/noext") == &writer_folded, "no extension");
}

/* What a terminal is shown of a target's text (utf8.h), and what the
 * folded file keeps of it. */
static void test_terminal_escapes(void)
{
	static const char evil[] = "a\x1b]0;t\x07\n\t\r\x7f\xc2\x9b\xe2\x80\xae"
				   "\xff caf\xc3\xa9 \\";
	char buf[UTF8_ESC_SIZE(sizeof(evil))], small[8], *mem = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(!strcmp(utf8__escape(buf, sizeof(buf), evil),
		      "a\\x1b]0;t\\x07\\n\\t\\r\\x7f\\u009b\\u202e\\xff caf\xc3\xa9 \\"),
	      "controls, C1, a bidi override and a bad byte escaped: %s", buf);
	CHECK(!strcmp(utf8__escape(small, 7, "ab\x1b[2J"), "ab\\x1b"),
	      "cut at a whole escape: %s", small);
	CHECK(!strcmp(utf8__escape(small, 4, "x\xc3\xa9y"), "x\xc3\xa9"),
	      "cut at a whole character: %s", small);
	f = open_memstream(&mem, &len);
	CHECK(f && !utf8__fputs_escaped(evil, f) && !fclose(f) && mem &&
	      !strcmp(mem, buf), "fputs escapes alike");
	free(mem);
}

/* In memory, the bytes a file gets: what the agent's control socket
 * answers is what a file of that format holds. */
static void test_write_mem(void)
{
	struct profile *p = rich_profile();
	char path[128], *mem = NULL, *file = NULL;
	size_t len = 0, flen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mem.json", tmpdir);
	CHECK(!writer__write_file(&writer_speedscope, p, NULL, path), "write");
	f = fopen(path, "r");
	CHECK(f && getdelim(&file, &flen, 0, f) > 0, "read back");
	if (f)
		fclose(f);
	CHECK(!writer__write_mem(&writer_speedscope, p, NULL, &mem, &len) && mem,
	      "write_mem");
	CHECK(mem && file && len == strlen(file) && !memcmp(mem, file, len),
	      "the file's bytes: %zu", len);
	free(mem);
	free(file);
	profile__free(p);
}

int main(void)
{
	struct profile *p;
	char cmd[128];

	if (!mkdtemp(tmpdir))
		return 1;
	p = rich_profile();
	round_trip(&writer_pprof, p, "rich.pb.gz");
	round_trip(&writer_speedscope, p, "rich.json");
	profile__free(p);
	p = sampled_profile();
	round_trip(&writer_pprof, p, "sampled.pb.gz");
	round_trip(&writer_speedscope, p, "sampled.json");
	profile__free(p);
	test_task_entries();
	test_pprof_rules();
	test_pprof_huge_count();
	test_bad_speedscope();
	test_bad_pprof();
	test_titles();
	test_collapse();
	test_extensions();
	test_terminal_escapes();
	test_write_mem();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return check_summary();
}
