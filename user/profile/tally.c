// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "labels.h"
#include "tally.h"

struct row_key {
	const char *name, *file;
	int line, kind;		/* an off-CPU cause: -1 - its sample kind */
	pid_t pid;		/* with per_process, else 0 */
	int zero;		/* no padding: keys are hashed as bytes */
};

struct row {
	struct row_key key;
	struct tally_row r;
	size_t seen;		/* 1 + the entry it was last counted in */
	UT_hash_handle hh;
};

struct builder {
	struct row *rows;	/* frames and the off-CPU pseudo-frames */
	int by;
	bool per_process;
};

static struct row_key key_of(const struct pframe *f, int by)
{
	struct row_key k;

	memset(&k, 0, sizeof(k));
	k.kind = f->kind;
	k.file = f->file;
	if (by == BY_FILE && f->file)
		return k;
	k.name = f->name;
	if (by == BY_LINE)
		k.line = f->line;
	return k;
}

static char *row_text(const struct pframe *f, int by)
{
	struct pframe shown = *f;
	char buf[LABEL_MAX];

	if (by == BY_FILE && f->file)
		return strdup(f->file);
	if (by != BY_LINE)
		shown.line = 0;
	labels__frame(&shown, buf, sizeof(buf));
	return strdup(buf);
}

/* The row of key k; a new one reads as text (which it then owns). */
static struct row *find_or_add(struct builder *b, const struct row_key *k,
			       const struct pentry *e, char *text)
{
	struct row *r;

	HASH_FIND(hh, b->rows, k, sizeof(*k), r);
	if (r) {
		free(text);
		return r;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !text) {
		free(r);
		free(text);
		return NULL;
	}
	r->key = *k;
	r->r.text = text;
	if (b->per_process && e->thread) {
		r->r.pid = e->thread->pid;
		r->r.process = e->thread->process;
	}
	HASH_ADD(hh, b->rows, key, sizeof(*k), r);
	return r;
}

static pid_t pid_key(const struct builder *b, const struct pentry *e)
{
	return b->per_process && e->thread ? e->thread->pid : 0;
}

static struct row *row_of(struct builder *b, const struct pframe *f,
			  const struct pentry *e)
{
	struct row_key k = key_of(f, b->by);
	struct row *r;

	k.pid = pid_key(b, e);
	HASH_FIND(hh, b->rows, &k, sizeof(k), r);
	if (r)
		return r;
	r = find_or_add(b, &k, e, row_text(f, b->by));
	if (r)
		r->r.frame = f;
	return r;
}

/* The cause of off-CPU time is a row of its own, as in a flame graph. */
static struct row *cause_row(struct builder *b, const struct pentry *e)
{
	struct row_key k;
	struct row *r;

	memset(&k, 0, sizeof(k));
	k.kind = -1 - e->kind;
	k.pid = pid_key(b, e);
	HASH_FIND(hh, b->rows, &k, sizeof(k), r);
	if (r)
		return r;
	return find_or_add(b, &k, e, strdup(profile__kind_frame(e->kind)));
}

static void count(struct row *r, const struct pentry *e, size_t idx,
		  bool leaf)
{
	if (r->seen != idx + 1) {	/* recursion counts once */
		r->seen = idx + 1;
		r->r.total += e->weight;
	}
	if (leaf)
		r->r.self += e->weight;
}

static int add_entry(struct builder *b, const struct pentry *e, size_t idx)
{
	const struct pstack *s = e->stack;
	int at = pentry__cause_at(e);
	unsigned int i, py = at < 0 ? s->n : (unsigned int)at;
	struct row *cause = NULL;

	if (at >= 0) {
		cause = cause_row(b, e);
		if (!cause)
			return -ENOMEM;
	}
	for (i = 0; i < s->n; i++) {
		struct row *r = row_of(b, s->frames[i], e);
		bool leaf = i + 1 == s->n && (!cause || py < s->n);

		if (!r)
			return -ENOMEM;
		count(r, e, idx, leaf);
	}
	if (cause)
		count(cause, e, idx, py == s->n);
	return 0;
}

static bool wanted(const struct pentry *e, const struct tally_opts *o)
{
	if (profile__kind_is_task(e->kind) != o->tasks)
		return false;
	if (o->pid && (!e->thread || e->thread->pid != o->pid))
		return false;
	if (o->tid && (!e->thread || e->thread->tid != o->tid))
		return false;
	if (o->process && (!e->thread || !e->thread->process ||
			   strcmp(e->thread->process, o->process)))
		return false;
	if (o->thread && (!e->thread || !e->thread->name ||
			  strcmp(e->thread->name, o->thread)))
		return false;
	return true;
}

static int by_self(const void *pa, const void *pb)
{
	const struct tally_row *a = pa, *b = pb;

	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return strcmp(a->text, b->text);
}

static int collect(struct builder *b, struct tally *t)
{
	struct row *r, *tmp;
	size_t n = HASH_COUNT(b->rows);

	t->rows = calloc(n ? n : 1, sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	HASH_ITER(hh, b->rows, r, tmp) {
		t->rows[t->n++] = r->r;
		r->r.text = NULL;
	}
	qsort(t->rows, t->n, sizeof(*t->rows), by_self);
	return 0;
}

static void builder_free(struct builder *b)
{
	struct row *r, *tmp;

	HASH_ITER(hh, b->rows, r, tmp) {
		HASH_DEL(b->rows, r);
		free(r->r.text);
		free(r);
	}
}

int tally__build(const struct profile *p, const struct tally_opts *o,
		 struct tally *t)
{
	struct builder b = { .by = o->by, .per_process = o->per_process };
	const struct pentry **entries;
	size_t n, i;
	int err;

	memset(t, 0, sizeof(*t));
	t->tasks = o->tasks;
	err = profile__entries(p, &entries, &n);
	if (err)
		return err;
	for (i = 0; i < n && !err; i++) {
		if (!wanted(entries[i], o))
			continue;
		t->total += entries[i]->weight;
		t->by_kind[entries[i]->kind] += entries[i]->weight;
		err = add_entry(&b, entries[i], i);
	}
	if (!err)
		err = collect(&b, t);
	builder_free(&b);
	free(entries);
	if (err)
		tally__free(t);
	return err;
}

void tally__free(struct tally *t)
{
	size_t i;

	for (i = 0; t->rows && i < t->n; i++)
		free(t->rows[i].text);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

int tally__parse_by(const char *s, int *by)
{
	static const char *const names[] = {
		[BY_LINE] = "line", [BY_FUNCTION] = "function", [BY_FILE] = "file",
	};
	int i;

	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
		if (!strcmp(s, names[i])) {
			*by = i;
			return 0;
		}
	}
	return -EINVAL;
}

int tally__parse_label(const char *s, pid_t *id, const char **name)
{
	char *end;
	long v;

	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (!*end && !errno && v > 0 && v < (1L << 30)) {
		*id = (pid_t)v;
		return 0;
	}
	*name = s;
	return 0;
}
