// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

struct slice {
	const struct profile *src;	/* what its entries point into */
	uint64_t start_ns, end_ns;
	double keep;			/* the share of the rate sampled */
	struct pentry *e;		/* copies */
	size_t n;
};

/* A profile the collector interned in before a rebase, freed once the
 * last slice that points into it has gone. */
struct retired {
	struct profile *p;
};

struct history {
	uint64_t span_ns;
	struct slice *s;		/* oldest first */
	size_t n, cap;
	struct retired old[HISTORY_MAX_RETIRED];
	int nold;
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
	for (i = 0; i < (size_t)h->nold; i++)
		profile__free(h->old[i].p);
	free(h->s);
	free(h);
}

static bool in_use(const struct history *h, const struct profile *p)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->s[i].src == p)
			return true;
	return false;
}

/* Free the retired profiles no slice points into any more (by pointer,
 * not by time: the wall clock may step back). */
static void free_retired(struct history *h)
{
	int i, k = 0;

	for (i = 0; i < h->nold; i++) {
		if (!in_use(h, h->old[i].p))
			profile__free(h->old[i].p);
		else
			h->old[k++] = h->old[i];
	}
	h->nold = k;
}

bool history__retire(struct history *h, struct profile *p)
{
	if (h->nold == HISTORY_MAX_RETIRED)
		return false;
	h->old[h->nold++] = (struct retired){ p };
	free_retired(h);
	return true;
}

int history__nretired(const struct history *h)
{
	return h->nold;
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
	free_retired(h);
}

int history__cut(struct history *h, struct profile *p, uint64_t start_ns,
		 uint64_t end_ns, double keep)
{
	const struct pentry **arr;
	struct slice sl = { p, start_ns, end_ns, keep, NULL, 0 };
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

/* have is the cgroup want, or under it: "/a" holds "/a/b", not "/ab". */
static bool under(const char *want, const char *have)
{
	size_t n = strlen(want);

	while (n > 1 && want[n - 1] == '/')
		n--;
	return have && !strncmp(have, want, n) &&
	       (have[n] == '/' || !have[n] || (n == 1 && want[0] == '/'));
}

static bool wanted(const struct history_filter *f, const struct pentry *e)
{
	if (!f)
		return true;
	if (f->pid && (!e->thread || e->thread->pid != f->pid))
		return false;
	if (f->cgroup && (!e->cgroup || !under(f->cgroup, e->cgroup->path)))
		return false;
	if (f->container &&
	    (!e->cgroup || !prefix(f->container, e->cgroup->container)))
		return false;
	return true;
}

int history__collect(struct history *h, uint64_t since_ns, uint64_t until_ns,
		     const struct history_filter *f, struct profile *q,
		     struct history_span *span)
{
	double kept = 0, len = 0;
	bool any = false;
	size_t i, j;
	int err = 0;

	span->first_ns = span->last_ns = 0;
	for (i = 0; i < h->n && !err; i++) {
		const struct slice *sl = &h->s[i];

		if (sl->end_ns <= since_ns || sl->end_ns > until_ns)
			continue;
		if (!any)
			span->first_ns = sl->start_ns;
		any = true;
		span->last_ns = sl->end_ns;
		len += (double)(sl->end_ns - sl->start_ns);
		kept += sl->keep * (double)(sl->end_ns - sl->start_ns);
		for (j = 0; j < sl->n && !err; j++) {
			const struct pentry *e = &sl->e[j];

			if (!wanted(f, e))
				continue;
			/* its copy: the same frames, stack, thread and
			 * cgroup, interned in q */
			err = profile__add_from(q, profile__copy_stack(q, e->stack),
						e);
		}
	}
	span->keep = len > 0 ? kept / len : 1.0;
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
