// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

struct slice {
	uint64_t start_ns, end_ns;
	struct pentry *e;		/* copies */
	size_t n;
};

struct history {
	uint64_t span_ns;
	struct slice *s;		/* oldest first */
	size_t n, cap;
};

struct history *history__new(double span_s)
{
	struct history *h = calloc(1, sizeof(*h));

	if (h)
		h->span_ns = (uint64_t)(span_s * 1e9);
	return h;
}

void history__free(struct history *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->n; i++)
		free(h->s[i].e);
	free(h->s);
	free(h);
}

static void expire(struct history *h, uint64_t now_ns)
{
	size_t k = 0, i;

	while (k < h->n && h->s[k].end_ns + h->span_ns < now_ns)
		free(h->s[k++].e);
	if (!k)
		return;
	for (i = k; i < h->n; i++)
		h->s[i - k] = h->s[i];
	h->n -= k;
}

int history__cut(struct history *h, struct profile *p, uint64_t start_ns,
		 uint64_t end_ns)
{
	const struct pentry **arr;
	struct slice sl = { start_ns, end_ns, NULL, 0 };
	size_t n, i;
	int err;

	expire(h, end_ns);
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct slice *s = realloc(h->s, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		h->s = s;
		h->cap = cap;
	}
	err = profile__entries(p, &arr, &n);
	if (err)
		return err;
	sl.e = malloc((n ? n : 1) * sizeof(*sl.e));
	if (!sl.e) {
		free(arr);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		sl.e[i] = *arr[i];
	sl.n = n;
	free(arr);
	h->s[h->n++] = sl;
	profile__reset(p);
	return 0;
}

static bool prefix(const char *want, const char *have)
{
	return have && !strncmp(have, want, strlen(want));
}

static bool wanted(const struct history_filter *f, const struct pentry *e)
{
	if (!f)
		return true;
	if (f->pid && (!e->thread || e->thread->pid != f->pid))
		return false;
	if (f->cgroup && (!e->cgroup || !prefix(f->cgroup, e->cgroup->path)))
		return false;
	if (f->container &&
	    (!e->cgroup || !prefix(f->container, e->cgroup->container)))
		return false;
	return true;
}

/* e's copy in q: the same frames, stack, thread and cgroup, interned
 * there. */
static int copy_into(struct profile *q, const struct pentry *e,
		     const struct pframe **frames)
{
	unsigned int i;

	for (i = 0; i < e->stack->n; i++) {
		const struct pframe *f = e->stack->frames[i];

		frames[i] = profile__frame(q, f->name, f->file, f->line,
					   f->firstline, f->kind);
		if (!frames[i])
			return -ENOMEM;
		profile__frame_origin(q, frames[i], f->origin);
	}
	return profile__add_from(q, profile__stack(q, frames, e->stack->n), e);
}

int history__collect(struct history *h, uint64_t since_ns, uint64_t until_ns,
		     const struct history_filter *f, struct profile *q,
		     uint64_t *first_ns, uint64_t *last_ns)
{
	const struct pframe **frames = NULL;
	unsigned int cap = 0;
	bool any = false;
	size_t i, j;
	int err = 0;

	*first_ns = *last_ns = 0;
	for (i = 0; i < h->n && !err; i++) {
		const struct slice *sl = &h->s[i];

		if (sl->end_ns <= since_ns || sl->end_ns > until_ns)
			continue;
		if (!any)
			*first_ns = sl->start_ns;
		any = true;
		*last_ns = sl->end_ns;
		for (j = 0; j < sl->n && !err; j++) {
			const struct pentry *e = &sl->e[j];

			if (!wanted(f, e))
				continue;
			if (e->stack->n > cap) {
				const struct pframe **fr;

				cap = e->stack->n * 2;
				fr = realloc(frames, cap * sizeof(*fr));
				if (!fr) {
					err = -ENOMEM;
					break;
				}
				frames = fr;
			}
			err = copy_into(q, e, frames);
		}
	}
	free(frames);
	return err;
}

void history__size(struct history *h, size_t *entries, size_t *bytes)
{
	size_t i;

	*entries = 0;
	for (i = 0; i < h->n; i++)
		*entries += h->s[i].n;
	*bytes = *entries * sizeof(struct pentry) + h->cap * sizeof(struct slice);
}
