// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The profile model.  Strings are interned once, so frames, threads and
 * cgroups compare by pointer, and stacks by their frame pointers.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "arena.h"
#include "hashfree.h"
#include "htab.h"
#include "profile.h"

struct str_entry {
	UT_hash_handle hh;
	char s[];
};

struct frame_key {
	const char *name, *file;
	int line, firstline, kind;
	int pad;
};

struct frame_entry {
	struct frame_key key;
	UT_hash_handle hh;
	struct pframe f;
};


struct thread_key {
	pid_t pid, ns_pid, tid;
	int pad;
	const char *process, *name;
};

struct thread_entry {
	struct thread_key key;
	UT_hash_handle hh;
	struct pthread t;
};

struct cgroup_key {
	uint64_t id;
	const char *path, *container, *pod;
};

struct cgroup_entry {
	struct cgroup_key key;
	UT_hash_handle hh;
	struct pcgroup c;
};


struct profile {
	enum profile_unit unit;
	struct profile_meta meta;
	struct str_entry *strs;
	struct frame_entry *frames;
	struct thread_entry *threads;
	struct cgroup_entry *cgroups;
	/* stacks and entries grow with the profile: arenas and flat sets */
	struct arena stack_mem, entry_mem;
	struct htab stacks, entries;
	unsigned int nframes, nthreads, ncgroups;
	uint64_t total, by_kind[KIND__MAX];
};

static uint64_t stack_hash(const void *item)
{
	const struct pstack *s = item;
	uint64_t h = s->n;
	unsigned int i;

	for (i = 0; i < s->n; i++)
		h = pysight_mix64(h ^ (uintptr_t)s->frames[i]);
	return h;
}

static uint64_t entry_hash(const void *item)
{
	const struct pentry *e = item;
	uint64_t h;

	h = pysight_mix64((uintptr_t)e->stack ^ (uint64_t)e->kind << 3);
	h = pysight_mix64(h ^ (uintptr_t)e->thread);
	return pysight_mix64(h ^ (uintptr_t)e->cgroup);
}

struct profile *profile__new(enum profile_unit unit)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->unit = unit;
	p->stacks.hash = stack_hash;
	p->entries.hash = entry_hash;
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	htab__free(&p->entries);
	htab__free(&p->stacks);
	arena__free(&p->entry_mem);
	arena__free(&p->stack_mem);
	HASH_FREE_ALL(p->frames);
	HASH_FREE_ALL(p->threads);
	HASH_FREE_ALL(p->cgroups);
	HASH_FREE_ALL(p->strs);
	free(p);
}

enum profile_unit profile__unit(const struct profile *p)
{
	return p->unit;
}

struct profile_meta *profile__meta(struct profile *p)
{
	return &p->meta;
}

/* The profile's copy of s (NULL stays NULL). */
static const char *intern(struct profile *p, const char *s)
{
	struct str_entry *e;
	size_t len;

	if (!s)
		return NULL;
	len = strlen(s);
	HASH_FIND(hh, p->strs, s, len, e);
	if (e)
		return e->s;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->s, s, len + 1);
	HASH_ADD_KEYPTR(hh, p->strs, e->s, len, e);
	return e->s;
}

const struct pframe *profile__frame(struct profile *p, const char *name,
				    const char *file, int line, int firstline,
				    int kind)
{
	struct frame_key key;
	struct frame_entry *e;

	memset(&key, 0, sizeof(key));
	key.name = intern(p, name ? name : "");
	key.file = intern(p, file);
	if (!key.name || (file && !key.file))
		return NULL;
	key.line = line;
	key.firstline = firstline;
	key.kind = kind;
	HASH_FIND(hh, p->frames, &key, sizeof(key), e);
	if (e)
		return &e->f;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key;
	e->f.name = key.name;
	e->f.file = key.file;
	e->f.line = line;
	e->f.firstline = firstline;
	e->f.kind = kind;
	e->f.id = p->nframes++;
	HASH_ADD(hh, p->frames, key, sizeof(key), e);
	return &e->f;
}

static struct frame_entry *frame_entry(struct profile *p,
				       const struct pframe *f)
{
	struct frame_key key;
	struct frame_entry *e;

	memset(&key, 0, sizeof(key));
	key.name = f->name;
	key.file = f->file;
	key.line = f->line;
	key.firstline = f->firstline;
	key.kind = f->kind;
	HASH_FIND(hh, p->frames, &key, sizeof(key), e);
	return e;
}

void profile__frame_origin(struct profile *p, const struct pframe *f,
			   int origin)
{
	struct frame_entry *e = frame_entry(p, f);

	if (e && e->f.origin == ORIGIN_UNKNOWN)
		e->f.origin = origin;
}

void profile__frame_native(struct profile *p, const struct pframe *f,
			   const char *binary, const char *build_id,
			   uint64_t addr)
{
	struct frame_entry *e = frame_entry(p, f);

	if (!e || e->f.binary || !binary)
		return;
	e->f.binary = intern(p, binary);
	e->f.build_id = intern(p, build_id ? build_id : "");
	e->f.addr = addr;
	if (!e->f.build_id)
		e->f.binary = NULL;	/* out of memory: said by no one */
}

const struct pframe *profile__copy_frame(struct profile *p,
					 const struct pframe *f)
{
	const struct pframe *g = profile__frame(p, f->name, f->file, f->line,
						f->firstline, f->kind);

	if (g) {
		profile__frame_origin(p, g, f->origin);
		profile__frame_native(p, g, f->binary, f->build_id, f->addr);
	}
	return g;
}

struct stack_probe {
	const struct pframe *const *frames;
	unsigned int n;
};

static bool stack_eq(const void *item, const void *key)
{
	const struct pstack *s = item;
	const struct stack_probe *k = key;

	return s->n == k->n &&
	       !memcmp(s->frames, k->frames, k->n * sizeof(k->frames[0]));
}

const struct pstack *profile__stack(struct profile *p,
				    const struct pframe *const *frames,
				    unsigned int n)
{
	struct stack_probe key = { frames, n };
	struct pstack probe = { .n = n };
	uint64_t hash;
	struct pstack *s;
	unsigned int i;

	hash = probe.n;
	for (i = 0; i < n; i++)
		hash = pysight_mix64(hash ^ (uintptr_t)frames[i]);
	s = htab__find(&p->stacks, hash, stack_eq, &key);
	if (s)
		return s;
	s = arena__alloc(&p->stack_mem, sizeof(*s) + n * sizeof(frames[0]));
	if (!s)
		return NULL;
	s->id = p->stacks.n;
	s->n = n;
	if (n)
		memcpy(s->frames, frames, n * sizeof(frames[0]));
	return htab__insert(&p->stacks, hash, s) ? NULL : s;
}

const struct pthread *profile__thread(struct profile *p, pid_t pid,
				      pid_t ns_pid, pid_t tid,
				      const char *process, const char *name)
{
	struct thread_key key;
	struct thread_entry *e;

	memset(&key, 0, sizeof(key));
	key.pid = pid;
	key.ns_pid = ns_pid;
	key.tid = tid;
	key.process = intern(p, process);
	key.name = intern(p, name);
	if ((process && !key.process) || (name && !key.name))
		return NULL;
	HASH_FIND(hh, p->threads, &key, sizeof(key), e);
	if (e)
		return &e->t;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key;
	e->t.pid = pid;
	e->t.ns_pid = ns_pid;
	e->t.tid = tid;
	e->t.process = key.process;
	e->t.name = key.name;
	e->t.id = p->nthreads++;
	HASH_ADD(hh, p->threads, key, sizeof(key), e);
	return &e->t;
}

int profile__rename_thread(struct profile *p, const struct pthread *t,
			   const char *name)
{
	struct thread_entry *e, *other;
	struct thread_key key;

	e = (struct thread_entry *)((char *)t - offsetof(struct thread_entry, t));
	key = e->key;
	key.name = intern(p, name);
	if (!key.name)
		return -ENOMEM;
	HASH_FIND(hh, p->threads, &key, sizeof(key), other);
	if (other)
		return other == e ? 0 : -EEXIST;
	HASH_DEL(p->threads, e);
	e->key = key;
	e->t.name = key.name;
	HASH_ADD(hh, p->threads, key, sizeof(key), e);
	return 0;
}

const struct pcgroup *profile__cgroup(struct profile *p, uint64_t id,
				      const char *path, const char *container,
				      const char *pod)
{
	struct cgroup_key key;
	struct cgroup_entry *e;

	memset(&key, 0, sizeof(key));
	key.id = id;
	key.path = intern(p, path);
	key.container = intern(p, container);
	key.pod = intern(p, pod);
	if ((path && !key.path) || (container && !key.container) ||
	    (pod && !key.pod))
		return NULL;
	HASH_FIND(hh, p->cgroups, &key, sizeof(key), e);
	if (e)
		return &e->c;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key;
	e->c.id = id;
	e->c.path = key.path;
	e->c.container = key.container;
	e->c.pod = key.pod;
	e->c.num = p->ncgroups++;
	HASH_ADD(hh, p->cgroups, key, sizeof(key), e);
	return &e->c;
}

static bool entry_eq(const void *item, const void *key)
{
	const struct pentry *a = item, *b = key;

	return a->stack == b->stack && a->thread == b->thread &&
	       a->cgroup == b->cgroup && a->kind == b->kind;
}

int profile__add(struct profile *p, const struct pstack *stack,
		 const struct pthread *thread, const struct pcgroup *cgroup,
		 int kind, uint64_t count, uint64_t weight)
{
	struct pentry key = { stack, thread, cgroup, kind, 0, 0 }, *e;
	uint64_t hash;

	if (kind < 0 || kind >= KIND__MAX)
		return -EINVAL;
	hash = entry_hash(&key);
	e = htab__find(&p->entries, hash, entry_eq, &key);
	if (!e) {
		e = arena__alloc(&p->entry_mem, sizeof(*e));
		if (!e)
			return -ENOMEM;
		*e = key;
		if (htab__insert(&p->entries, hash, e))
			return -ENOMEM;
	}
	e->count += count;
	e->weight += weight;
	if (!profile__kind_is_task(kind))
		p->total += weight;
	p->by_kind[kind] += weight;
	return 0;
}

void profile__reset(struct profile *p)
{
	htab__clear(&p->entries);
	arena__free(&p->entry_mem);
	p->total = 0;
	memset(p->by_kind, 0, sizeof(p->by_kind));
}

int profile__entries(const struct profile *p, const struct pentry ***out,
		     size_t *n)
{
	const struct pentry **arr;
	size_t i, k = 0;

	*n = p->entries.n;
	arr = calloc(*n ? *n : 1, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	for (i = 0; i < p->entries.cap; i++)
		if (p->entries.slots[i])
			arr[k++] = p->entries.slots[i];
	*out = arr;
	return 0;
}

uint64_t profile__total(const struct profile *p)
{
	return p->total;
}

uint64_t profile__total_kind(const struct profile *p, int kind)
{
	return kind >= 0 && kind < KIND__MAX ? p->by_kind[kind] : 0;
}

unsigned int profile__nframes(const struct profile *p)
{
	return p->nframes;
}

unsigned int profile__nstacks(const struct profile *p)
{
	return p->stacks.n;
}

unsigned int profile__nentries(const struct profile *p)
{
	return p->entries.n;
}

/* Distinct values of what key() gives over the entries with weight. */
static unsigned int count_distinct(const struct profile *p,
				   long (*key)(const struct pthread *t))
{
	struct seen {
		long k;
		UT_hash_handle hh;
	} *set = NULL, *s;
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < p->entries.cap; i++) {
		const struct pentry *e = p->entries.slots[i];
		long k;

		if (!e || !e->thread)
			continue;
		k = key(e->thread);
		HASH_FIND(hh, set, &k, sizeof(k), s);
		if (s)
			continue;
		s = calloc(1, sizeof(*s));
		if (!s)
			break;
		s->k = k;
		HASH_ADD(hh, set, k, sizeof(k), s);
		n++;
	}
	HASH_FREE_ALL(set);
	return n;
}

static long thread_key(const struct pthread *t)
{
	return (long)t->pid << 32 | (uint32_t)t->tid;
}

static long process_key(const struct pthread *t)
{
	return t->pid;
}

unsigned int profile__nthreads(const struct profile *p)
{
	return count_distinct(p, thread_key);
}

unsigned int profile__nprocs(const struct profile *p)
{
	return count_distinct(p, process_key);
}

static const char *const kind_names[KIND__MAX] = {
	[KIND_CPU] = "cpu",
	[KIND_SLEEP] = "sleep",
	[KIND_LOCK] = "lock",
	[KIND_IO] = "io",
	[KIND_GIL] = "gil",
	[KIND_RUNQUEUE] = "runqueue",
	[KIND_OTHER] = "other",
	[KIND_AWAIT_SLEEP] = "await sleep",
	[KIND_AWAIT_IO] = "await io",
	[KIND_AWAIT_LOCK] = "await lock",
	[KIND_AWAIT_TASK] = "await task",
	[KIND_AWAIT_EXECUTOR] = "await executor",
	[KIND_AWAIT_OTHER] = "await other",
	[KIND_AWAIT_BUSY] = "loop busy",
};

static const char *const kind_frames[KIND__MAX] = {
	[KIND_SLEEP] = "[off-cpu: sleep]",
	[KIND_LOCK] = "[off-cpu: lock]",
	[KIND_IO] = "[off-cpu: io]",
	[KIND_GIL] = "[off-cpu: gil]",
	[KIND_RUNQUEUE] = "[runqueue]",
	[KIND_OTHER] = "[off-cpu: other]",
	[KIND_AWAIT_SLEEP] = "[await: sleep]",
	[KIND_AWAIT_IO] = "[await: io]",
	[KIND_AWAIT_LOCK] = "[await: lock]",
	[KIND_AWAIT_TASK] = "[await: task]",
	[KIND_AWAIT_EXECUTOR] = "[await: executor]",
	[KIND_AWAIT_OTHER] = "[await: other]",
	[KIND_AWAIT_BUSY] = "[await: loop busy]",
};

const char *profile__kind_name(int kind)
{
	return kind >= 0 && kind < KIND__MAX ? kind_names[kind] : "?";
}

bool profile__kind_is_task(int kind)
{
	return kind >= KIND_AWAIT_FIRST && kind < KIND__MAX;
}

const char *profile__kind_frame(int kind)
{
	return kind > 0 && kind < KIND__MAX ? kind_frames[kind] : NULL;
}

int profile__add_from(struct profile *p, const struct pstack *s,
		      const struct pentry *e)
{
	const struct pthread *t = e->thread, *pt = NULL;
	const struct pcgroup *g = e->cgroup, *pg = NULL;

	if (t)
		pt = profile__thread(p, t->pid, t->ns_pid, t->tid, t->process,
				     t->name);
	if (g)
		pg = profile__cgroup(p, g->id, g->path, g->container, g->pod);
	if (!s || (t && !pt) || (g && !pg))
		return -ENOMEM;
	return profile__add(p, s, pt, pg, e->kind, e->count, e->weight);
}

const struct pstack *profile__copy_stack(struct profile *p,
					 const struct pstack *s)
{
	const struct pframe *small[128], **frames = small;
	const struct pstack *out = NULL;
	unsigned int i;

	if (s->n > sizeof(small) / sizeof(small[0])) {
		frames = malloc(s->n * sizeof(*frames));
		if (!frames)
			return NULL;
	}
	for (i = 0; i < s->n; i++) {
		const struct pframe *f = s->frames[i];

		frames[i] = profile__copy_frame(p, f);
		if (!frames[i])
			goto out;
	}
	out = profile__stack(p, frames, s->n);
out:
	if (frames != small)
		free(frames);
	return out;
}

/* splitmix64: a uniform double in [0, 1) */
static double uniform(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

int64_t profile__period_ns(double hz)
{
	double p = 1e9 / hz, r = nearbyint(p);

	return fabs(p - r) < 1e-6 ? (int64_t)r : (int64_t)p;
}

struct profile *profile__thin(const struct profile *p, double keep,
			      uint64_t *seed)
{
	struct profile *q = profile__new(p->unit);
	const struct pentry **arr = NULL;
	struct pentry e;
	size_t n, i;
	uint64_t k;

	if (!q || p->unit != UNIT_SAMPLES || profile__entries(p, &arr, &n))
		goto fail;
	q->meta = p->meta;
	q->meta.rate_hz = p->meta.rate_hz * keep;
	for (i = 0; i < n; i++) {
		e = *arr[i];
		for (k = 0; e.count > 0; e.count--)
			k += uniform(seed) < keep;
		if (!k)
			continue;
		e.count = e.weight = k;
		if (profile__add_from(q, profile__copy_stack(q, e.stack), &e))
			goto fail;
	}
	free(arr);
	return q;
fail:
	free(arr);
	profile__free(q);
	return NULL;
}

unsigned int profile__ninterned(const struct profile *p)
{
	return HASH_COUNT(p->strs) + p->nframes + p->stacks.n + p->nthreads +
	       p->ncgroups;
}

int pentry__cause_at(const struct pentry *e)
{
	unsigned int i;

	if (!profile__kind_frame(e->kind))
		return -1;
	for (i = 0; i < e->stack->n; i++)
		if (e->stack->frames[i]->kind == PFRAME_KERNEL)
			break;
	return (int)i;
}

bool profile__native_name(const char *text)
{
	size_t n = strlen(text);
	const char *at;

	if (!n)
		return false;
	if (text[0] == '[') {
		at = strstr(text, "]+0x");
		return at && at[4] && strspn(at + 4, "0123456789abcdef") ==
					      strlen(at + 4);
	}
	at = strrchr(text, '[');
	return text[n - 1] == ']' && at && at > text + 1 && at[-1] == ' ';
}

int profile__kind_of_frame(const char *text)
{
	int k;

	for (k = 1; k < KIND__MAX; k++)
		if (!strcmp(text, kind_frames[k]))
			return k;
	return -1;
}

const char *profile__mode_name(int mode)
{
	switch (mode) {
	case MODE_WALL:
		return "wall";
	case MODE_OFF:
		return "off";
	default:
		return "cpu";
	}
}
