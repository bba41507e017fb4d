// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The folded writer's output for one fixed profile, pinned byte for byte
 * in tests/fixtures/golden-*.folded.  The profile mixes what a recording
 * holds: several processes and threads, stacks that read alike from
 * different processes, pseudo-frames, frames without a line, and names
 * that need escaping.  Whatever the model becomes, these files must not
 * change.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "profile.h"
#include "writer.h"

static const char *fixtures;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

struct gstack {
	int pid;
	unsigned long long hash;
	const char *frames[6];	/* root first: "name|file|line" or "[pseudo]" */
};

static const struct gstack stacks[] = {
	{ 100, 0x1, { "<module>|app.py|40", "main|app.py|31", "Worker.run|app.py|20" } },
	{ 100, 0x2, { "<module>|app.py|40", "main|app.py|31", "Worker.run|app.py|21" } },
	{ 100, 0x3, { "<module>|app.py|40", "main|app.py|32", "slow_score|app.py|19" } },
	/* the same frames under another hash: one folded line */
	{ 100, 0x4, { "<module>|app.py|40", "main|app.py|32", "slow_score|app.py|19" } },
	/* another process with a stack that reads the same */
	{ 200, 0x1, { "<module>|app.py|40", "main|app.py|32", "slow_score|app.py|19" } },
	{ 200, 0x5, { "[truncated]", "recurse|deep.py|7", "recurse|deep.py|7", "leaf|deep.py|3" } },
	{ 200, 0x6, { "[partial stack]", "handler|srv.py|88" } },
	{ 200, 0x7, { "<module>|app.py|40", "[unknown]" } },
	{ 300, 0x8, { "run|threading.py|0", "wait|threading.py|320" } },
	{ 300, 0x9, { "weird;name\nx|a b.py|3" } },
	{ 300, 0xa, { "f|/srv/app/x.py|1", "g|/srv/app/x.py|2" } },
	{ 300, 0xb, { "f|/srv/app/x.py|1" } },
	{ 300, 0xc, { "f|/srv/app/x.py|10" } },
	{ 300, 0xd, { "f|/srv/app/x.py|1", "g|/srv/app/x.py|2", "h|/srv/app/x.py|3" } },
};

struct gsample {
	int pid, tid;
	unsigned long long hash;
	const char *comm;
	unsigned long long weight;
};

static const struct gsample samples[] = {
	{ 100, 100, 0x1, "python3", 5 },
	{ 100, 101, 0x1, "worker-1", 7 },
	{ 100, 102, 0x2, "worker-2", 3 },
	{ 100, 101, 0x3, "worker-1", 11 },
	{ 100, 101, 0x4, "worker-1", 2 },
	{ 100, 102, 0x4, "worker-2", 1 },
	{ 200, 200, 0x1, "python3", 13 },
	{ 200, 201, 0x5, "deep", 4 },
	{ 200, 200, 0x6, "python3", 1 },
	{ 200, 200, 0x7, "python3", 2 },
	{ 300, 301, 0x8, "Thread-1 (wait", 9 },
	{ 300, 300, 0x9, "py", 1 },
	{ 300, 300, 0xa, "py", 6 },
	{ 300, 300, 0xb, "py", 8 },
	{ 300, 300, 0xc, "py", 1 },
	{ 300, 300, 0xd, "py", 2 },
	{ 100, 101, 0x1, "renamed", 1 },	/* a thread keeps its first name */
};

static const struct pframe *gframe(struct profile *p, const char *spec)
{
	char buf[128], *name, *file, *line;

	if (spec[0] == '[')
		return profile__frame(p, spec, NULL, 0, 0, PFRAME_PSEUDO);
	snprintf(buf, sizeof(buf), "%s", spec);
	name = buf;
	file = strchr(name, '|');
	*file++ = 0;
	line = strchr(file, '|');
	*line++ = 0;
	return profile__frame(p, name, file, atoi(line), 0, PFRAME_PYTHON);
}

static const struct pstack *gstack(struct profile *p, int pid,
				   unsigned long long hash)
{
	const struct pframe *f[6];
	size_t i;
	int n;

	for (i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		if (stacks[i].pid != pid || stacks[i].hash != hash)
			continue;
		for (n = 0; n < 6 && stacks[i].frames[n]; n++)
			f[n] = gframe(p, stacks[i].frames[n]);
		return profile__stack(p, f, n);
	}
	return NULL;
}

/* A thread keeps the name it was first seen with, as the collector does. */
static const char *first_name(int tid)
{
	size_t i;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		if (samples[i].tid == tid)
			return samples[i].comm;
	return NULL;
}

static struct profile *golden_profile(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	size_t i;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		const struct gsample *s = &samples[i];
		const struct pstack *st = gstack(p, s->pid, s->hash);
		const struct pthread *t;

		t = profile__thread(p, s->pid, 0, s->tid, "python3",
				    first_name(s->tid));
		CHECK(st && t, "sample %zu", i);
		CHECK(!profile__add(p, st, t, NULL, KIND_CPU, s->weight,
				    s->weight), "sample %zu", i);
	}
	return p;
}

static void check_golden(bool threads, const char *name)
{
	char dir[] = "/tmp/pysight-unit-XXXXXX", out[128], want_path[4096];
	struct write_opts wo = { .groups = { GROUP_THREAD }, .ngroups = threads };
	struct profile *p = golden_profile();
	char *got, *want;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(out, sizeof(out), "%s/out.folded", dir);
	snprintf(want_path, sizeof(want_path), "%s/%s", fixtures, name);
	CHECK(!writer__write_file(&writer_folded, p, &wo, out), "write %s",
	      name);
	got = slurp(out);
	want = slurp(want_path);
	if (getenv("PYSIGHT_UPDATE_GOLDEN") && got) {
		FILE *f = fopen(want_path, "w");

		fputs(got, f);
		fclose(f);
	}
	CHECK(got && want && !strcmp(got, want),
	      "%s differs from the pinned output; got:\n%s", name, got);
	free(got);
	free(want);
	unlink(out);
	rmdir(dir);
	profile__free(p);
}

int main(int argc, char **argv)
{
	fixtures = argc > 1 ? argv[1] : "tests/fixtures";
	check_golden(false, "golden.folded");
	check_golden(true, "golden-threads.folded");
	return check_summary();
}
