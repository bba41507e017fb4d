// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The collector's event path without BPF or root: a real Python process
 * holds the code objects, the test writes the ring-buffer records BPF
 * would, and the profile must come out named, weighted and labelled.
 * Covers id-only samples before their frames, provisional stacks (a
 * frame that cannot be named, then its re-send), truncated and partial
 * stacks, thread names, and forgetting a process at exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "collector.h"
#include "htab.h"
#include "offsets.h"
#include "registry.h"
#include "symbols.h"
#include "writer.h"

static const char script[] =
	"import sys\n"			/* 1 */
	"def alpha():\n"		/* 2 */
	"    pass\n"			/* 3 */
	"class Beta:\n"			/* 4 */
	"    def work(self):\n"		/* 5 */
	"        pass\n"		/* 6 */
	"def gamma():\n"		/* 7 */
	"    pass\n"			/* 8 */
	"print(id(alpha.__code__), id(Beta.work.__code__),\n"
	"      id(gamma.__code__), flush=True)\n"
	"sys.stdin.read()\n";

struct child {
	pid_t pid;
	int in;			/* its stdin: closing it ends it */
	unsigned long long code[3];	/* alpha, Beta.work, gamma */
	char dir[64];
};

static const char *python(void)
{
	static const char *const cands[] = { "/usr/bin/python3.11",
					     "/usr/bin/python3" };
	size_t i;

	for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (!access(cands[i], X_OK))
			return cands[i];
	return NULL;
}

static int start_child(struct child *ch)
{
	int in[2], out[2];
	char path[128];
	FILE *f;

	snprintf(ch->dir, sizeof(ch->dir), "/tmp/pysight-unit-XXXXXX");
	if (!mkdtemp(ch->dir) || pipe(in) || pipe(out))
		return -errno;
	snprintf(path, sizeof(path), "%s/app.py", ch->dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(script, f);
	fclose(f);
	ch->pid = fork();
	if (ch->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (chdir(ch->dir))
			_exit(127);
		execl(python(), "python3", "app.py", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ch->in = in[1];
	f = fdopen(out[0], "r");
	if (!f || fscanf(f, "%llu %llu %llu", &ch->code[0], &ch->code[1],
			 &ch->code[2]) != 3)
		return -EIO;
	fclose(f);
	return 0;
}

static void stop_child(struct child *ch)
{
	char path[128];

	close(ch->in);
	waitpid(ch->pid, NULL, 0);
	snprintf(path, sizeof(path), "%s/app.py", ch->dir);
	unlink(path);
	rmdir(ch->dir);
}

/* A sample record as BPF writes it: header, then frames leaf first. */
struct rec {
	struct sample_event ev;
	struct py_frame frames[4];
};

static size_t sample(struct rec *r, pid_t pid, pid_t tid, const char *comm,
		     __u64 hash, int status, const struct py_frame *leaf_first,
		     int n)
{
	memset(r, 0, sizeof(*r));
	r->ev.hdr.kind = EV_SAMPLE;
	r->ev.hdr.pid = pid;
	r->ev.hdr.tid = tid;
	r->ev.stack_hash = hash;
	r->ev.status = status;
	r->ev.nframes = n;
	r->ev.cgroup_id = 1;
	snprintf(r->ev.comm, sizeof(r->ev.comm), "%s", comm);
	if (!leaf_first)
		return sizeof(r->ev);
	r->ev.has_frames = 1;
	memcpy(r->frames, leaf_first, n * sizeof(*leaf_first));
	return sizeof(r->ev) + n * sizeof(*leaf_first);
}

static char *folded(struct profile *p, bool threads)
{
	struct write_opts wo = { .groups = { GROUP_THREAD },
				 .ngroups = threads };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && !writer_folded.write(p, &wo, f), "write folded");
	fclose(f);
	return buf;
}

static void feed(struct collector *c, struct rec *r, size_t size)
{
	CHECK(!collector__handle(c, r, size), "handle");
}

static void test_events(struct child *ch)
{
	struct collector_opts o = { .rate_hz = 100, .mode = MODE_CPU };
	struct collector *c = collector__new_offline(&o);
	const struct pyproc *pp;
	struct collector_stats st;
	struct event_header exit_ev = { .kind = EV_EXIT };
	struct py_frame f[3];
	uint32_t check[3];
	char err[256], *out;
	struct rec r;
	int i, ret;

	CHECK(c, "offline collector");
	ret = collector__add_pid(c, ch->pid, err, sizeof(err));
	CHECK(!ret, "add pid %d: %s", ch->pid, err);
	if (ret) {
		collector__free(c);
		return;
	}
	pp = collector__process(c, ch->pid);
	CHECK(pp && !strcmp(pp->comm, strrchr(python(), '/') + 1),
	      "process name %s", pp ? pp->comm : "?");
	if (!pp) {
		collector__free(c);
		return;
	}
	/* the checks BPF would compute, from the child's memory */
	for (i = 0; i < 3; i++)
		CHECK(!symbols__code_check(ch->pid, &pp->proc, ch->code[i],
					   &check[i]), "check of code %d", i);

	/* an id before its frames: counted as unknown, not guessed */
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x111,
			   ST_COMPLETE, NULL, 2));
	/* alpha -> Beta.work, leaf first, lasti -1: the first line */
	f[0] = (struct py_frame){ ch->code[1], -1, check[1] };
	f[1] = (struct py_frame){ ch->code[0], -1, check[0] };
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x111,
			   ST_COMPLETE, f, 2));
	feed(c, &r, sample(&r, ch->pid, ch->pid, "renamed", 0x111,
			   ST_COMPLETE, NULL, 2));
	feed(c, &r, sample(&r, ch->pid, ch->pid + 1, "worker", 0x111,
			   ST_COMPLETE, NULL, 2));

	/* a frame that does not check: [unknown], provisional, re-asked */
	f[0] = (struct py_frame){ ch->code[2], -1, check[2] ^ 1 };
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x333,
			   ST_COMPLETE, f, 1));
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x333,
			   ST_COMPLETE, NULL, 1));
	collector__stats(c, &st);
	CHECK(st.forgotten_stacks == 1, "BPF asked to resend: %llu",
	      (unsigned long long)st.forgotten_stacks);
	CHECK(st.unknown_frames == 1 && st.unknown_stacks == 1,
	      "unknown frames %llu, stacks %llu",
	      (unsigned long long)st.unknown_frames,
	      (unsigned long long)st.unknown_stacks);
	/* the re-send names it; from then on the named stack counts */
	f[0].check = check[2];
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x333,
			   ST_COMPLETE, f, 1));
	for (i = 0; i < 3; i++)
		feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x333,
				   ST_COMPLETE, NULL, 1));

	/* truncated and partial stacks are marked at the root */
	f[0] = (struct py_frame){ ch->code[0], -1, check[0] };
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x444,
			   ST_TRUNCATED, f, 1));
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x555,
			   ST_ERR_READ_FRAME, f, 1));
	/* an instruction the line table gives no line (here: past its end,
	 * -1 from 3.10 on) is at the code's first line, as one not yet run */
	f[0] = (struct py_frame){ ch->code[2], 1 << 20, check[2] };
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x666,
			   ST_COMPLETE, f, 1));
	/* an interval's frames alone (EV_STACK: the tracer sends them as
	 * it leaves the CPU) count nothing; its weight, sent later by hash
	 * alone, counts once */
	f[0] = (struct py_frame){ ch->code[0], -1, check[0] };
	sample(&r, ch->pid, ch->pid, "python3", 0x777, ST_COMPLETE, f, 1);
	r.ev.hdr.kind = EV_STACK;
	feed(c, &r, sizeof(r.ev) + sizeof(f[0]));
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x777,
			   ST_COMPLETE, NULL, 1));
	/* garbage is refused, not read past its end */
	feed(c, &r, 3);
	r.ev.nframes = PYSIGHT_MAX_FRAMES + 1;
	feed(c, &r, sizeof(r));

	out = folded(collector__profile(c), false);
	CHECK(out && !strcmp(out,
		"[partial stack];alpha (app.py:2) 1\n"
		"[truncated];alpha (app.py:2) 1\n"
		"[unknown] 2\n"
		"alpha (app.py:2) 1\n"
		"alpha (app.py:2);Beta.work (app.py:5) 3\n"
		"gamma (app.py:7) 5\n"), "profile:\n%s", out);
	free(out);
	out = folded(collector__profile(c), true);
	CHECK(out && strstr(out, "thread ") &&
	      strstr(out, ";alpha (app.py:2);Beta.work (app.py:5) 2\n") &&
	      strstr(out, " (worker);alpha (app.py:2);Beta.work (app.py:5) 1\n") &&
	      !strstr(out, "renamed"), "threads keep their first name:\n%s",
	      out);
	free(out);

	/* exit: the process's stacks are forgotten with it */
	exit_ev.pid = ch->pid;
	exit_ev.tid = ch->pid;
	CHECK(!collector__handle(c, &exit_ev, sizeof(exit_ev)), "exit");
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x111,
			   ST_COMPLETE, NULL, 2));
	CHECK(profile__total(collector__profile(c)) == 13, "total %llu",
	      (unsigned long long)profile__total(collector__profile(c)));
	collector__free(c);
}

/*
 * A rebase: a profile with entries is refused; after a cut, the new
 * profile holds the named stacks of live processes and nothing of the
 * threads that came and went, and a stack BPF named before the rebase
 * (and will not send again) is still named after it.
 */
static void test_rebase(struct child *ch)
{
	struct collector_opts o = { .rate_hz = 100, .mode = MODE_CPU };
	struct collector *c = collector__new_offline(&o);
	const struct pyproc *pp;
	struct profile *old;
	struct py_frame f[2];
	uint32_t check[2];
	unsigned int before, after, i;
	char err[256], *out;
	struct rec r;

	CHECK(c && !collector__add_pid(c, ch->pid, err, sizeof(err)),
	      "collector for %d: %s", ch->pid, err);
	pp = c ? collector__process(c, ch->pid) : NULL;
	if (!pp) {
		collector__free(c);
		return;
	}
	for (i = 0; i < 2; i++)
		CHECK(!symbols__code_check(ch->pid, &pp->proc, ch->code[i],
					   &check[i]), "check of code %u", i);
	f[0] = (struct py_frame){ ch->code[1], -1, check[1] };
	f[1] = (struct py_frame){ ch->code[0], -1, check[0] };
	feed(c, &r, sample(&r, ch->pid, ch->pid, "python3", 0x111,
			   ST_COMPLETE, f, 2));
	/* 500 short threads, each with its own name */
	for (i = 1; i <= 500; i++) {
		char name[16];

		snprintf(name, sizeof(name), "t-%u", i);
		feed(c, &r, sample(&r, ch->pid, ch->pid + i, name, 0x111,
				   ST_COMPLETE, NULL, 2));
	}
	CHECK(!collector__rebase(c), "no rebase while the profile has entries");
	profile__reset(collector__profile(c));
	before = profile__ninterned(collector__profile(c));
	old = collector__rebase(c);
	CHECK(old && old != collector__profile(c), "rebased");
	after = profile__ninterned(collector__profile(c));
	/* left: the two frames' strings (qualnames, file) and the frames
	 * and stack */
	CHECK(before > 1000 && after < 10, "interned %u before, %u after",
	      before, after);
	profile__free(old);
	/* BPF sends 0x111's id alone now; it is still named, and the thread
	 * is found again */
	feed(c, &r, sample(&r, ch->pid, ch->pid + 7, "again", 0x111,
			   ST_COMPLETE, NULL, 2));
	out = folded(collector__profile(c), true);
	CHECK(out && strstr(out, " (again);alpha (app.py:2);Beta.work (app.py:5) 1\n") &&
	      profile__total(collector__profile(c)) == 1, "after the rebase:\n%s", out);
	free(out);
	collector__free(c);
}

/*
 * A str read from our own memory: a name is cut at 1024 characters, but
 * a length no object could have (a target that set it to 2^62) is no name.
 */
static void test_read_str(void)
{
	static uint64_t str_type[4];
	static uint64_t obj[(48 + 2048) / 8];
	struct py_proc proc = {};
	uint64_t addr = (uint64_t)(uintptr_t)obj;
	char *s;

	CHECK(!offsets__from_table(3, 11, &proc.off), "3.11 offsets");
	proc.unicode_type_addr = (uint64_t)(uintptr_t)str_type;
	obj[0] = 1;					/* refcount */
	obj[1] = proc.unicode_type_addr;
	obj[4] = 1 << 2 | 1 << 5 | 1 << 6;		/* kind 1, compact, ascii */
	memset((char *)obj + 48, 'a', 2048);
	obj[2] = 5;
	s = symbols__read_str(getpid(), &proc, addr);
	CHECK(s && !strcmp(s, "aaaaa"), "5 characters: %s", s ? s : "NULL");
	free(s);
	obj[2] = 2000;
	s = symbols__read_str(getpid(), &proc, addr);
	CHECK(s && strlen(s) == 1024, "cut at 1024: %zu", s ? strlen(s) : 0);
	free(s);
	obj[2] = 1ULL << 62;
	s = symbols__read_str(getpid(), &proc, addr);
	CHECK(!s, "a length of 2^62 gave a name of %zu bytes", s ? strlen(s) : 0);
	free(s);
}

/* The stacks' table by BPF hash: keys whose low bits all agree probe
 * from one slot, and survive every growth. */
static void test_htab64(void)
{
	static int v[3000];
	struct htab64 h = {};
	uint64_t i, bad = 0;

	for (i = 0; i < 3000; i++)
		CHECK(!htab64__set(&h, (i + 1) << 20, &v[i]), "set %lu", i);
	CHECK(h.n == 3000 && h.n * 4 <= h.cap * 3, "n %zu of cap %zu", h.n,
	      h.cap);
	for (i = 0; i < 3000; i++)
		bad += htab64__get(&h, (i + 1) << 20) != &v[i];
	CHECK(!bad, "%lu keys lost their value", bad);
	CHECK(!htab64__get(&h, 3001ULL << 20) && !htab64__get(&h, 0),
	      "a key never set has a value");
	CHECK(!htab64__set(&h, 1ULL << 20, &v[7]) && h.n == 3000 &&
		      htab64__get(&h, 1ULL << 20) == &v[7],
	      "setting a key again did not replace its value");
	htab64__free(&h);
	CHECK(!htab64__get(&h, 1ULL << 20) && !h.n, "freed, still found");
}

int main(void)
{
	struct child ch = {};
	int ret;

	test_read_str();
	test_htab64();

	if (!python()) {
		printf("SKIPPED: no /usr/bin/python3 to hold code objects\n");
		return check_summary();
	}
	ret = start_child(&ch);
	CHECK(!ret, "start python: %s", strerror(-ret));
	if (!ret) {
		test_events(&ch);
		test_rebase(&ch);
	}
	stop_child(&ch);
	return check_summary();
}
