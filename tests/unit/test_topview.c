// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's rows without a screen: tally per process, intervals and what
 * accumulates across them, merging processes, grouping, the sort keys.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tally.h"
#include "topview.h"

struct world {
	struct profile *p;
	const struct pstack *main_a, *main_b, *sleep;
	const struct pthread *t1, *t2;
};

/* main (app.py:3) calls a (app.py:10) or b (app.py:20); two processes. */
static void build(struct world *w)
{
	const struct pframe *main3, *a10, *b20, *a11;
	const struct pframe *fa[2], *fb[2], *fs[2];

	w->p = profile__new(UNIT_SAMPLES);
	main3 = profile__frame(w->p, "main", "app.py", 3, 1, PFRAME_PYTHON);
	a10 = profile__frame(w->p, "a", "app.py", 10, 9, PFRAME_PYTHON);
	a11 = profile__frame(w->p, "a", "app.py", 11, 9, PFRAME_PYTHON);
	b20 = profile__frame(w->p, "b", "app.py", 20, 19, PFRAME_PYTHON);
	fa[0] = fb[0] = fs[0] = main3;
	fa[1] = a10;
	fb[1] = b20;
	fs[1] = a11;
	w->main_a = profile__stack(w->p, fa, 2);
	w->main_b = profile__stack(w->p, fb, 2);
	w->sleep = profile__stack(w->p, fs, 2);
	w->t1 = profile__thread(w->p, 100, 0, 100, "python3", "MainThread");
	w->t2 = profile__thread(w->p, 200, 0, 201, "worker", "w");
}

static const struct topview_row *find(const struct topview_row *r, size_t n,
				      const char *text, pid_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(r[i].text, text) && r[i].pid == pid)
			return &r[i];
	return NULL;
}

static void test_tally_per_process(void)
{
	struct tally_opts o = { .by = BY_FUNCTION, .per_process = true };
	struct world w;
	struct tally t;
	size_t i, mains = 0;

	build(&w);
	profile__add(w.p, w.main_a, w.t1, NULL, KIND_CPU, 6, 6);
	profile__add(w.p, w.main_a, w.t2, NULL, KIND_CPU, 3, 3);
	profile__add(w.p, w.main_b, w.t2, NULL, KIND_CPU, 1, 1);
	profile__add(w.p, w.sleep, w.t2, NULL, KIND_SLEEP, 2, 2);
	CHECK(!tally__build(w.p, &o, &t), "tally");
	CHECK(t.total == 12, "total %llu", (unsigned long long)t.total);
	for (i = 0; i < t.n; i++) {
		if (!strcmp(t.rows[i].text, "main (app.py)")) {
			mains++;
			CHECK(t.rows[i].total == (t.rows[i].pid == 100 ? 6 : 6),
			      "main of %d: %llu", t.rows[i].pid,
			      (unsigned long long)t.rows[i].total);
		}
		if (!strcmp(t.rows[i].text, "[off-cpu: sleep]"))
			CHECK(t.rows[i].pid == 200 && t.rows[i].self == 2 &&
			      !strcmp(t.rows[i].process, "worker"),
			      "cause row %d", t.rows[i].pid);
	}
	CHECK(mains == 2, "a main row per process: %zu", mains);
	CHECK(!strcmp(t.rows[0].text, "a (app.py)") && t.rows[0].pid == 100 &&
	      !strcmp(t.rows[0].process, "python3"), "top %s %d",
	      t.rows[0].text, t.rows[0].pid);
	tally__free(&t);

	/* without per_process, as before: one row per frame, no pid */
	o.per_process = false;
	CHECK(!tally__build(w.p, &o, &t), "tally");
	CHECK(t.n == 4 && !strcmp(t.rows[0].text, "a (app.py)") &&
	      t.rows[0].self == 9 && t.rows[0].pid == 0 && !t.rows[0].process,
	      "%zu rows, top %s %llu", t.n, t.rows[0].text,
	      (unsigned long long)t.rows[0].self);
	tally__free(&t);
	profile__free(w.p);
}

static void test_intervals(void)
{
	struct topview_opts o = { .lines = false, .sort = SORT_OWN };
	struct topview *v = topview__new();
	const struct topview_row *r;
	struct topview_row *rows;
	struct world w;
	size_t n;

	build(&w);
	/* interval 1: a is hot */
	profile__add(w.p, w.main_a, w.t1, NULL, KIND_CPU, 8, 8);
	profile__add(w.p, w.main_b, w.t1, NULL, KIND_CPU, 2, 2);
	CHECK(!topview__add(v, w.p), "add");
	profile__reset(w.p);
	/* interval 2: b is hot, in two processes */
	profile__add(w.p, w.main_b, w.t1, NULL, KIND_CPU, 3, 3);
	profile__add(w.p, w.main_b, w.t2, NULL, KIND_CPU, 4, 4);
	profile__add(w.p, w.main_a, w.t2, NULL, KIND_CPU, 1, 1);
	CHECK(!topview__add(v, w.p), "add");
	CHECK(topview__intervals(v) == 2 && topview__interval_total(v) == 8,
	      "interval total %llu",
	      (unsigned long long)topview__interval_total(v));

	CHECK(!topview__rows(v, &o, &rows, &n), "rows");
	CHECK(n == 3 && !strcmp(rows[0].text, "b (app.py)") &&
	      rows[0].self == 7 && rows[0].self_acc == 9 &&
	      rows[0].nprocs == 2 && rows[0].pid == 0 && !rows[0].process,
	      "by own: %zu rows, top %s self %llu acc %llu procs %u", n,
	      n ? rows[0].text : "-", (unsigned long long)rows[0].self,
	      (unsigned long long)rows[0].self_acc, rows[0].nprocs);
	r = find(rows, n, "a (app.py)", 0);
	CHECK(r && r->self == 1 && r->self_acc == 9 && r->total_acc == 9,
	      "a merged");
	r = find(rows, n, "main (app.py)", 0);
	CHECK(r && r->total == 8 && r->total_acc == 18 && r->self == 0,
	      "main merged");
	free(rows);

	/* key 2: total share; key 3: own time since the start */
	o.sort = SORT_TOTAL;
	CHECK(!topview__rows(v, &o, &rows, &n), "rows");
	CHECK(n && !strcmp(rows[0].text, "main (app.py)"), "by total: %s",
	      rows[0].text);
	free(rows);
	o.sort = SORT_OWN_TIME;
	CHECK(!topview__rows(v, &o, &rows, &n), "rows");
	/* a and b tie at 9 own; b leads on the interval's columns */
	CHECK(n == 3 && !strcmp(rows[1].text, "a (app.py)"), "by own time: %s",
	      rows[1].text);
	free(rows);

	/* lines: a's line 10 */
	o.lines = true;
	o.sort = SORT_OWN_TIME;
	CHECK(!topview__rows(v, &o, &rows, &n), "rows");
	CHECK(find(rows, n, "a (app.py:10)", 0) != NULL, "line rows");
	free(rows);

	/* grouped: python3 100 (own 3 now) after worker 200 (own 5 now) */
	o.lines = false;
	o.by_process = true;
	o.sort = SORT_OWN;
	CHECK(!topview__rows(v, &o, &rows, &n), "rows");
	CHECK(n == 6 && rows[0].pid == 200 && !strcmp(rows[0].text, "b (app.py)") &&
	      rows[0].self == 4 && rows[1].pid == 200 && rows[2].pid == 200 &&
	      rows[3].pid == 100 && !strcmp(rows[3].process, "python3"),
	      "grouped: %zu rows, first %d %s", n, n ? rows[0].pid : 0,
	      n ? rows[0].text : "-");
	free(rows);
	/* since the start, python3 100 (own 13) leads */
	o.sort = SORT_OWN_TIME;
	CHECK(!topview__rows(v, &o, &rows, &n), "rows");
	CHECK(n == 6 && rows[0].pid == 100 && !strcmp(rows[0].text, "a (app.py)"),
	      "grouped by own time: first %d %s", rows[0].pid, rows[0].text);
	free(rows);

	topview__free(v);
	profile__free(w.p);
}

int main(void)
{
	test_tally_per_process();
	test_intervals();
	return check_summary();
}
