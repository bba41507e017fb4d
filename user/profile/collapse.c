// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collapse.h"
#include "labels.h"
#include "usage.h"

/*
 * The event loop's own frames, in the modules that run callbacks and
 * tasks, and the selector it waits in.  What the loop runs, the user's
 * coroutines and callbacks, stays.
 */
static const char *const asyncio_floor[] = {
	"\\([^()]*asyncio/(base_events|events|runners|selector_events|"
	"unix_events|windows_events|proactor_events|tasks|futures)\\.py(:[0-9]+)?\\)$",
	"\\([^()]*/selectors\\.py(:[0-9]+)?\\)$",
};

int collapse__add(struct collapse *c, const char *regex, char *err,
		  size_t errlen)
{
	int ret;

	if (c->n == COLLAPSE_MAX) {
		snprintf(err, errlen, "at most %d --collapse patterns",
			 COLLAPSE_MAX);
		return -E2BIG;
	}
	ret = regcomp(&c->re[c->n], regex, REG_EXTENDED | REG_NOSUB);
	if (ret) {
		regerror(ret, &c->re[c->n], err, errlen);
		return -EINVAL;
	}
	c->n++;
	return 0;
}

int collapse__add_asyncio(struct collapse *c)
{
	char err[128];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(asyncio_floor) / sizeof(asyncio_floor[0]); i++) {
		ret = collapse__add(c, asyncio_floor[i], err, sizeof(err));
		if (ret)
			return ret;
	}
	return 0;
}

void collapse__free(struct collapse *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		regfree(&c->re[i]);
	c->n = 0;
}

static bool matches(const struct collapse *c, const struct pframe *f)
{
	char text[LABEL_MAX];
	int i;

	labels__frame(f, text, sizeof(text));
	for (i = 0; i < c->n; i++)
		if (!regexec(&c->re[i], text, 0, NULL, 0))
			return true;
	return false;
}

/* The copy of a frame in q, or NULL when it is collapsed. */
static int copy_frame(const struct collapse *c, struct profile *q,
		      const struct pframe *f, const struct pframe **map,
		      signed char *state)
{
	if (!state[f->id]) {
		state[f->id] = matches(c, f) ? -1 : 1;
		if (state[f->id] > 0) {
			map[f->id] = profile__copy_frame(q, f);
			if (!map[f->id])
				return -ENOMEM;
		}
	}
	return 0;
}

static int copy_entry(const struct collapse *c, struct profile *q,
		      const struct pentry *e, const struct pframe **map,
		      signed char *state, const struct pframe **frames)
{
	unsigned int i, n = 0;
	int err;

	for (i = 0; i < e->stack->n; i++) {
		const struct pframe *f = e->stack->frames[i];

		err = copy_frame(c, q, f, map, state);
		if (err)
			return err;
		if (state[f->id] > 0)
			frames[n++] = map[f->id];
	}
	if (!n && e->stack->n && e->kind == KIND_CPU) {
		frames[n] = profile__frame(q, "[collapsed]", NULL, 0, 0,
					   PFRAME_PSEUDO);
		if (!frames[n++])
			return -ENOMEM;
	}
	return profile__add_from(q, profile__stack(q, frames, n), e);
}

int collapse__apply(const struct collapse *c, struct profile *p,
		    struct profile **out)
{
	unsigned int nframes = profile__nframes(p) + 1;
	const struct pframe **map = NULL, **frames = NULL;
	const struct pentry **entries = NULL;
	signed char *state = NULL;
	struct profile *q;
	size_t n = 0, i, depth = 1;
	int err;

	if (!c || !c->n) {
		*out = p;
		return 0;
	}
	q = profile__new(profile__unit(p));
	err = q ? profile__entries(p, &entries, &n) : -ENOMEM;
	for (i = 0; !err && i < n; i++)
		if (entries[i]->stack->n + 1 > depth)
			depth = entries[i]->stack->n + 1;
	if (!err) {
		*profile__meta(q) = *profile__meta(p);
		map = calloc(nframes, sizeof(*map));
		state = calloc(nframes, 1);
		frames = calloc(depth, sizeof(*frames));
		if (!map || !state || !frames)
			err = -ENOMEM;
	}
	for (i = 0; !err && i < n; i++)
		err = copy_entry(c, q, entries[i], map, state, frames);
	free(entries);
	free(map);
	free(state);
	free(frames);
	if (err) {
		profile__free(q);
		return err;
	}
	*out = q;
	return 0;
}

enum { OPT_COLLAPSE = 0x300, OPT_COLLAPSE_ASYNCIO };

static const struct argp_option collapse_options[] = {
	{ "collapse", OPT_COLLAPSE, "REGEX", 0, "Hide frames that match REGEX (extended, against \"name (file:line)\"); their children join the nearest kept frame (repeatable)", 0 },
	{ "collapse-asyncio", OPT_COLLAPSE_ASYNCIO, NULL, 0, "Hide asyncio's event loop, handles, tasks and selector", 0 },
	{},
};

static error_t collapse_parse(int key, char *arg, struct argp_state *state)
{
	struct collapse *c = state->input;
	char err[256];

	switch (key) {
	case OPT_COLLAPSE:
		if (collapse__add(c, arg, err, sizeof(err)))
			bad_value("--collapse", arg, err);
		return 0;
	case OPT_COLLAPSE_ASYNCIO:
		if (collapse__add_asyncio(c))
			usage_error("--collapse-asyncio: too many --collapse patterns");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

const struct argp collapse__argp = { collapse_options, collapse_parse, NULL,
				     NULL, NULL, NULL, NULL };
