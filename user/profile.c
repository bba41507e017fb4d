// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "profile.h"

struct frame_entry {
	struct pframe f;
	char *key;		/* kind \x1f name \x1f file \x1f line */
	UT_hash_handle hh;
};

struct stack_key {
	pid_t pid;
	uint32_t pad;
	uint64_t hash;
};

struct stack_entry {
	struct stack_key key;
	const struct pframe **frames;
	int n;
	UT_hash_handle hh;
};

struct sample_key {
	struct stack_key stack;
	pid_t tid;
	uint32_t pad;
};

struct sample_entry {
	struct sample_key key;
	struct stack_entry *stack;
	uint64_t weight;
	UT_hash_handle hh;
};

struct id_entry {
	pid_t id;
	char comm[16];
	UT_hash_handle hh;
};

struct profile {
	bool threads;
	struct frame_entry *frames;
	struct stack_entry *stacks;
	struct sample_entry *samples;
	struct id_entry *tids, *pids;
	uint64_t total;
};

static void frame_entry_free(struct frame_entry *e);

struct profile *profile__new(bool threads)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (p)
		p->threads = threads;
	return p;
}

void profile__free(struct profile *p)
{
	struct frame_entry *f, *ft;
	struct stack_entry *s, *st;
	struct sample_entry *e, *et;
	struct id_entry *i, *it;

	if (!p)
		return;
	HASH_ITER(hh, p->samples, e, et) {
		HASH_DEL(p->samples, e);
		free(e);
	}
	HASH_ITER(hh, p->stacks, s, st) {
		HASH_DEL(p->stacks, s);
		free(s->frames);
		free(s);
	}
	HASH_ITER(hh, p->frames, f, ft) {
		HASH_DEL(p->frames, f);
		frame_entry_free(f);
	}
	HASH_ITER(hh, p->tids, i, it) {
		HASH_DEL(p->tids, i);
		free(i);
	}
	HASH_ITER(hh, p->pids, i, it) {
		HASH_DEL(p->pids, i);
		free(i);
	}
	free(p);
}

/* Folded output splits on ';' and the last ' ' before the count. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if (*s == ';' || *s == '\n' || *s == '\r')
			*s = *s == ';' ? ':' : ' ';
}

static char *make_label(const char *name, const char *file, int line, int kind)
{
	char *s = NULL;
	int r;

	if (kind != PFRAME_PYTHON || !file)
		r = asprintf(&s, "%s", name);
	else if (line > 0)
		r = asprintf(&s, "%s (%s:%d)", name, file, line);
	else
		r = asprintf(&s, "%s (%s)", name, file);
	if (r < 0)
		return NULL;
	sanitize(s);
	return s;
}

static void frame_entry_free(struct frame_entry *e)
{
	free(e->key);
	free((char *)e->f.name);
	free((char *)e->f.file);
	free((char *)e->f.label);
	free(e);
}

const struct pframe *profile__frame(struct profile *p, const char *name,
				    const char *file, int line, int kind)
{
	struct frame_entry *e;
	char *key;

	if (asprintf(&key, "%d\x1f%s\x1f%s\x1f%d", kind, name,
		     file ? file : "", line) < 0)
		return NULL;
	HASH_FIND_STR(p->frames, key, e);
	if (e) {
		free(key);
		return &e->f;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		free(key);
		return NULL;
	}
	e->key = key;
	e->f.name = strdup(name);
	e->f.file = file ? strdup(file) : NULL;
	e->f.line = line;
	e->f.kind = kind;
	e->f.label = make_label(name, file, line, kind);
	if (!e->f.name || (file && !e->f.file) || !e->f.label) {
		frame_entry_free(e);
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, p->frames, e->key, strlen(e->key), e);
	return &e->f;
}

static struct stack_entry *find_stack(struct profile *p, pid_t pid,
				      uint64_t hash)
{
	struct stack_key key;
	struct stack_entry *s;

	memset(&key, 0, sizeof(key));
	key.pid = pid;
	key.hash = hash;
	HASH_FIND(hh, p->stacks, &key, sizeof(key), s);
	return s;
}

bool profile__has_stack(struct profile *p, pid_t pid, uint64_t hash)
{
	return find_stack(p, pid, hash) != NULL;
}

int profile__add_stack(struct profile *p, pid_t pid, uint64_t hash,
		       const struct pframe **frames, int n)
{
	struct stack_entry *s = find_stack(p, pid, hash);

	if (s)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->frames = calloc(n ? n : 1, sizeof(*frames));
	if (!s->frames) {
		free(s);
		return -ENOMEM;
	}
	memcpy(s->frames, frames, n * sizeof(*frames));
	s->n = n;
	s->key.pid = pid;
	s->key.hash = hash;
	HASH_ADD(hh, p->stacks, key, sizeof(s->key), s);
	return 0;
}

static void note_id(struct id_entry **set, pid_t id, const char *comm)
{
	struct id_entry *e;

	HASH_FIND_INT(*set, &id, e);
	if (e)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->id = id;
	snprintf(e->comm, sizeof(e->comm), "%s", comm ? comm : "");
	HASH_ADD_INT(*set, id, e);
}

int profile__add_sample(struct profile *p, pid_t pid, uint64_t hash,
			pid_t tid, const char *comm, uint64_t weight)
{
	struct stack_entry *s = find_stack(p, pid, hash);
	struct sample_key key;
	struct sample_entry *e;

	if (!s)
		return -ENOENT;
	memset(&key, 0, sizeof(key));
	key.stack = s->key;
	key.tid = p->threads ? tid : 0;
	HASH_FIND(hh, p->samples, &key, sizeof(key), e);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->key = key;
		e->stack = s;
		HASH_ADD(hh, p->samples, key, sizeof(e->key), e);
	}
	e->weight += weight;
	p->total += weight;
	note_id(&p->tids, tid, comm);
	note_id(&p->pids, pid, NULL);
	return 0;
}

static const struct pframe *thread_frame(struct profile *p, pid_t tid)
{
	struct id_entry *e;
	char name[64];

	HASH_FIND_INT(p->tids, &tid, e);
	snprintf(name, sizeof(name), "thread %d (%s)", tid, e ? e->comm : "?");
	return profile__frame(p, name, NULL, 0, PFRAME_THREAD);
}

int profile__samples(struct profile *p, struct psample **out, size_t *n)
{
	struct sample_entry *e, *tmp;
	struct psample *arr;
	size_t i = 0;

	*n = HASH_COUNT(p->samples);
	arr = calloc(*n ? *n : 1, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	HASH_ITER(hh, p->samples, e, tmp) {
		arr[i].thread = p->threads ? thread_frame(p, e->key.tid) : NULL;
		if (p->threads && !arr[i].thread) {
			free(arr);
			return -ENOMEM;
		}
		arr[i].frames = e->stack->frames;
		arr[i].nframes = e->stack->n;
		arr[i].weight = e->weight;
		i++;
	}
	*out = arr;
	return 0;
}

uint64_t profile__total(const struct profile *p)
{
	return p->total;
}

unsigned int profile__nstacks(const struct profile *p)
{
	return HASH_COUNT(p->stacks);
}

unsigned int profile__nthreads(const struct profile *p)
{
	return HASH_COUNT(p->tids);
}

unsigned int profile__nprocs(const struct profile *p)
{
	return HASH_COUNT(p->pids);
}
