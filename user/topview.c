// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's rows.  Each interval goes through tally.c with a row per (frame,
 * process); the view keeps one record per (row text, pid) with the last
 * interval's weight and the sum since the start.  A row across processes
 * is the sum of its per-process records: an entry belongs to one thread,
 * so to one process, and both self and total add up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "tally.h"
#include "topview.h"

struct acc {
	char *key;		/* "PID:TEXT" */
	const char *text;	/* in key */
	pid_t pid;
	char process[32];	/* in place: shown rows point here */
	unsigned int gen;	/* self and total are of interval gen */
	uint64_t self, total, self_acc, total_acc;
	UT_hash_handle hh;
};

struct topview {
	struct acc *rows[2];	/* by function, by line */
	unsigned int gen;	/* intervals added */
	uint64_t interval_total;
};

struct topview *topview__new(void)
{
	return calloc(1, sizeof(struct topview));
}

void topview__free(struct topview *v)
{
	struct acc *a, *tmp;
	int i;

	if (!v)
		return;
	for (i = 0; i < 2; i++) {
		HASH_ITER(hh, v->rows[i], a, tmp) {
			HASH_DEL(v->rows[i], a);
			free(a->key);
			free(a);
		}
	}
	free(v);
}

static struct acc *acc_of(struct acc **table, const struct tally_row *r)
{
	struct acc *a;
	char *key;
	int len;

	len = asprintf(&key, "%d:%s", (int)r->pid, r->text);
	if (len < 0)
		return NULL;
	HASH_FIND(hh, *table, key, (unsigned int)len, a);
	if (a) {
		free(key);
		return a;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		free(key);
		return NULL;
	}
	a->key = key;
	a->text = strchr(key, ':') + 1;
	a->pid = r->pid;
	HASH_ADD_KEYPTR(hh, *table, a->key, (unsigned int)len, a);
	return a;
}

/* The process's latest name: a pid that execs keeps its rows. */
static void set_process(struct acc *a, const char *name)
{
	if (name)
		snprintf(a->process, sizeof(a->process), "%s", name);
}

static int add_tally(struct topview *v, struct acc **table,
		     const struct profile *p, int by)
{
	struct tally_opts o = { .by = by, .per_process = true };
	struct tally t;
	size_t i;
	int err;

	err = tally__build(p, &o, &t);
	if (err)
		return err;
	for (i = 0; i < t.n && !err; i++) {
		struct acc *a = acc_of(table, &t.rows[i]);

		if (!a) {
			err = -ENOMEM;
			break;
		}
		a->gen = v->gen;
		a->self = t.rows[i].self;
		a->total = t.rows[i].total;
		a->self_acc += a->self;
		a->total_acc += a->total;
		set_process(a, t.rows[i].process);
	}
	v->interval_total = t.total;
	tally__free(&t);
	return err;
}

int topview__add(struct topview *v, const struct profile *p)
{
	v->gen++;
	return add_tally(v, &v->rows[0], p, BY_FUNCTION) ?:
	       add_tally(v, &v->rows[1], p, BY_LINE);
}

uint64_t topview__interval_total(const struct topview *v)
{
	return v->interval_total;
}

unsigned int topview__intervals(const struct topview *v)
{
	return v->gen;
}

static uint64_t column(const struct topview_row *r, int sort)
{
	switch (sort) {
	case SORT_TOTAL:
		return r->total;
	case SORT_OWN_TIME:
		return r->self_acc;
	case SORT_TOTAL_TIME:
		return r->total_acc;
	default:
		return r->self;
	}
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;	/* larger first */
}

static int by_column(const void *pa, const void *pb, void *ctx)
{
	const struct topview_row *a = pa, *b = pb;
	const struct topview_opts *o = ctx;
	int c, i;

	if (o->by_process) {
		c = cmp_u64(a->group, b->group);
		if (c)
			return c;
		if (a->pid != b->pid)
			return a->pid < b->pid ? -1 : 1;
	}
	c = cmp_u64(column(a, o->sort), column(b, o->sort));
	for (i = 0; !c && i < SORT__MAX; i++)
		c = cmp_u64(column(a, i), column(b, i));
	return c ?: strcmp(a->text, b->text);
}

static int by_text(const void *pa, const void *pb)
{
	const struct topview_row *a = pa, *b = pb;
	int c = strcmp(a->text, b->text);

	if (c)
		return c;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

static int by_pid(const void *pa, const void *pb)
{
	const struct topview_row *a = pa, *b = pb;

	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* One row per text: the sums of its processes' rows. */
static size_t merge_processes(struct topview_row *r, size_t n)
{
	size_t i, out = 0;

	qsort(r, n, sizeof(*r), by_text);
	for (i = 0; i < n; i++) {
		struct topview_row *m = out ? &r[out - 1] : NULL;

		if (m && !strcmp(m->text, r[i].text)) {
			m->nprocs++;
			m->pid = 0;
			if (m->process && (!r[i].process ||
					   strcmp(m->process, r[i].process)))
				m->process = NULL;
			m->self += r[i].self;
			m->total += r[i].total;
			m->self_acc += r[i].self_acc;
			m->total_acc += r[i].total_acc;
			continue;
		}
		r[out++] = r[i];
	}
	return out;
}

/* Rows of one process together, the heaviest process first: heaviest by
 * its own weight in the interval, or since the start for columns 3, 4. */
static void weigh_processes(struct topview_row *r, size_t n, int sort)
{
	bool acc = sort == SORT_OWN_TIME || sort == SORT_TOTAL_TIME;
	size_t i, j, k;

	qsort(r, n, sizeof(*r), by_pid);
	for (i = 0; i < n; i = j) {
		uint64_t sum = 0;

		for (j = i; j < n && r[j].pid == r[i].pid; j++)
			sum += acc ? r[j].self_acc : r[j].self;
		for (k = i; k < j; k++)
			r[k].group = sum;
	}
}

int topview__rows(const struct topview *v, const struct topview_opts *o,
		  struct topview_row **rows, size_t *n)
{
	struct acc *table = v->rows[o->lines ? 1 : 0], *a, *tmp;
	struct topview_row *r;
	size_t i = 0;

	r = calloc(HASH_COUNT(table) + 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	HASH_ITER(hh, table, a, tmp) {
		bool now = a->gen == v->gen;

		if (!a->total_acc)
			continue;
		r[i].text = a->text;
		r[i].pid = a->pid;
		r[i].process = a->process[0] ? a->process : NULL;
		r[i].nprocs = 1;
		r[i].self = now ? a->self : 0;
		r[i].total = now ? a->total : 0;
		r[i].self_acc = a->self_acc;
		r[i].total_acc = a->total_acc;
		i++;
	}
	if (o->by_process)
		weigh_processes(r, i, o->sort);
	else
		i = merge_processes(r, i);
	qsort_r(r, i, sizeof(*r), by_column, (void *)o);
	*rows = r;
	*n = i;
	return 0;
}
