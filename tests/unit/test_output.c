// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Aggregation, the folded writer, atomic file writes, short file names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "filename.h"
#include "profile.h"
#include "writer.h"

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static const struct pframe *py(struct profile *p, const char *name, int line)
{
	return profile__frame(p, name, "app.py", line, 1, PFRAME_PYTHON);
}

static void add(struct profile *p, const struct pframe **f, int n, pid_t pid,
		pid_t tid, const char *comm, uint64_t weight)
{
	const struct pstack *s = profile__stack(p, f, n);
	const struct pthread *t = profile__thread(p, pid, 0, tid, "python3",
						  comm);

	CHECK(s && t, "intern");
	CHECK(!profile__add(p, s, t, NULL, KIND_CPU, 1, weight), "add");
}

static struct profile *sample_profile(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	const struct pframe *s1[2], *s2[2], *s3[1];

	s1[0] = py(p, "main", 10);
	s1[1] = py(p, "Worker.run", 20);
	s2[0] = py(p, "main", 10);
	s2[1] = py(p, "Worker.run", 20);
	s3[0] = profile__frame(p, "weird;name\nx", "a b.py", 3, 1,
			       PFRAME_PYTHON);
	CHECK(s1[0] == s2[0] && s1[1] == s2[1], "frames are interned");
	CHECK(profile__stack(p, s1, 2) == profile__stack(p, s2, 2),
	      "stacks are interned");
	add(p, s1, 2, 100, 101, "worker", 3);
	add(p, s2, 2, 100, 102, "main", 2);
	add(p, s3, 1, 200, 200, "py", 1);
	return p;
}

static void test_folded(void)
{
	char dir[] = "/tmp/pysight-unit-XXXXXX", path[128];
	struct write_opts threads = { .groups = { GROUP_THREAD }, .ngroups = 1 };
	struct profile *p = sample_profile();
	const char *out;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/out.folded", dir);
	CHECK(!writer__write_file(&writer_folded, p, NULL, path), "write");
	out = slurp(path);
	CHECK(out && !strcmp(out,
		"main (app.py:10);Worker.run (app.py:20) 5\n"
		"weird:name x (a b.py:3) 1\n"), "folded:\n%s", out);
	CHECK(profile__total(p) == 6, "total");
	CHECK(profile__nprocs(p) == 2 && profile__nthreads(p) == 3, "counts");

	CHECK(!writer__write_file(&writer_folded, p, &threads, path),
	      "write threads");
	out = slurp(path);
	CHECK(out && !strcmp(out,
		"thread 101 (worker);main (app.py:10);Worker.run (app.py:20) 3\n"
		"thread 102 (main);main (app.py:10);Worker.run (app.py:20) 2\n"
		"thread 200 (py);weird:name x (a b.py:3) 1\n"),
	      "folded --threads:\n%s", out);
	profile__free(p);
	unlink(path);
	rmdir(dir);
}

static int failing_write(struct profile *p, const struct write_opts *o,
			 FILE *f)
{
	(void)p;
	(void)o;
	fputs("half", f);
	return -EIO;
}

static void test_atomic(void)
{
	const struct writer bad = { "bad", { "bad" }, failing_write };
	char dir[] = "/tmp/pysight-unit-XXXXXX", path[128], cmd[160];
	struct profile *p = profile__new(UNIT_SAMPLES);
	const char *out;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/prof.folded", dir);
	CHECK(writer__write_file(&bad, p, NULL, path) == -EIO, "error passed on");
	CHECK(access(path, F_OK) && errno == ENOENT, "no half-written file");
	CHECK(!writer__write_file(&writer_folded, p, NULL, path), "empty profile");
	out = slurp(path);
	CHECK(out && !out[0], "empty profile writes an empty file");
	CHECK(writer__write_file(&bad, p, NULL, path) == -EIO, "error again");
	out = slurp(path);
	CHECK(out && !out[0], "old file survives a failed write");
	snprintf(cmd, sizeof(cmd), "test $(ls %s | wc -l) = 1", dir);
	CHECK(system(cmd) == 0, "no temporary files left behind");
	CHECK(writer__write_file(&writer_folded, p, NULL, "/nonexistent/x.folded") < 0,
	      "unwritable directory");
	CHECK(writer__check_path(dir) == -EISDIR, "a directory is refused");
	CHECK(!writer__check_path("-") && !writer__check_path(path) &&
	      !writer__check_path("/dev/stdout"), "files, new names and stdout");
	CHECK(!strcmp(writer__path_name("-"), "stdout"), "- is named stdout");
	/* the agent's own files: a FIFO at the name is refused, not opened
	 * (which would wait for a reader) nor replaced */
	unlink(path);
	CHECK(!mkfifo(path, 0600), "mkfifo");
	CHECK(writer__write_own_file(&writer_folded, p, NULL, path) == -EEXIST,
	      "the agent does not write into a FIFO");
	CHECK(!access(path, F_OK), "the FIFO is still there");
	unlink(path);
	rmdir(dir);
	profile__free(p);
}

static void test_writer_lookup(void)
{
	CHECK(writer__find("folded") == &writer_folded, "find folded");
	CHECK(writer__find("nope") == NULL, "unknown format");
	CHECK(writer__for_path("x.folded") == &writer_folded, "by extension");
	CHECK(writer__for_path("noext") == &writer_folded, "default");
}

static void test_shorten(void)
{
	static const struct {
		const char *path, *cwd, *want;
	} cases[] = {
		{ "/usr/lib/python3.11/threading.py", NULL, "threading.py" },
		{ "/root/.pyenv/versions/3.8.18/lib/python3.8/json/decoder.py",
		  NULL, "json/decoder.py" },
		{ "/usr/lib/python3/dist-packages/requests/api.py", NULL,
		  "requests/api.py" },
		{ "/app/venv/lib/python3.12/site-packages/flask/app.py", NULL,
		  "flask/app.py" },
		{ "/srv/app/handlers.py", "/srv/app", "handlers.py" },
		{ "/srv/application.py", "/srv/app", "/srv/application.py" },
		{ "/tmp/x/ratio.py", "/", "/tmp/x/ratio.py" },
		{ "<frozen importlib._bootstrap>", NULL,
		  "<frozen importlib._bootstrap>" },
		{ "/home/me/python3.11-notes/x.py", NULL,
		  "/home/me/python3.11-notes/x.py" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = filename__shorten(cases[i].path, cases[i].cwd);

		CHECK(!strcmp(got, cases[i].want), "%s -> %s, want %s",
		      cases[i].path, got, cases[i].want);
	}
}

int main(void)
{
	test_folded();
	test_atomic();
	test_writer_lookup();
	test_shorten();
	return check_summary();
}
