// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Entries as lines of frame texts, for the folded and SVG writers.  Each
 * frame's text is made once, by frame id, and each root label's once per
 * (key, thread or cgroup), so a profile of 100k stacks costs 100k lines
 * of 16 bytes and one text per distinct frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "flatten.h"
#include "labels.h"
#include "utf8.h"
#include "writer.h"

/* A root label's text, once per (key, thread or cgroup). */
struct root_text {
	struct {
		const void *owner;
		int key;
		int pad;
	} id;
	char *text;		/* NULL: the entry has no such label */
	UT_hash_handle hh;
};

/* 16 bytes a line: a profile of 100k stacks is 100k lines. */
struct line {
	const struct pentry *e;
	short nroots;
	short cause_at;		/* index of the cause frame, -1 for none */
	int depth;
};

struct flatten {
	char **frame_text;	/* by frame id */
	unsigned int nframes;
	struct root_text *roots;
	const struct write_opts *o;
	struct line *lines;
	size_t n;
};

/*
 * Folded output splits on ';' and the last ' ' before the count, and on
 * lines: ';' becomes ':', a line break a space, and anything else a
 * terminal or a reader would act on (other controls, bytes that are not
 * UTF-8) the visible escape a terminal gets (utf8.h).  Tabs are kept.
 */
static char *sanitized(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(UTF8_ESC_SIZE(len));
	size_t o = 0;
	int clen;

	if (!out)
		return NULL;
	for (; p < (const unsigned char *)s + len && *p; p += clen) {
		clen = 1;
		if (*p == ';' || *p == '\n' || *p == '\r')
			out[o++] = *p == ';' ? ':' : ' ';
		else if (*p == '\t')
			out[o++] = '\t';
		else
			o += utf8__escape_one(p, out + o, &clen);
	}
	out[o] = 0;
	return out;
}

static const char *frame_text(struct flatten *fl, const struct pframe *f)
{
	char buf[LABEL_MAX];

	if (!fl->frame_text[f->id])
		fl->frame_text[f->id] = sanitized(buf, labels__frame(f, buf,
								       sizeof(buf)));
	return fl->frame_text[f->id];
}

/* The label of group key for e, or NULL when e has none.  *err on ENOMEM. */
static const char *root_text(struct flatten *fl, int key,
			     const struct pentry *e, int *err)
{
	struct root_text probe, *r;
	char buf[LABEL_MAX];
	size_t len;

	memset(&probe.id, 0, sizeof(probe.id));
	probe.id.owner = key == GROUP_CGROUP || key == GROUP_CONTAINER ?
			 (const void *)e->cgroup : (const void *)e->thread;
	probe.id.key = key;
	HASH_FIND(hh, fl->roots, &probe.id, sizeof(probe.id), r);
	if (r)
		return r->text;
	r = calloc(1, sizeof(*r));
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	r->id = probe.id;
	len = labels__group(key, e, buf, sizeof(buf));
	if (len && !(r->text = sanitized(buf, len))) {
		free(r);
		*err = -ENOMEM;
		return NULL;
	}
	HASH_ADD(hh, fl->roots, id, sizeof(r->id), r);
	return r->text;
}

/* The i-th frame of a line, as text; every text exists by now. */
static const char *text_at(struct flatten *fl, const struct line *l, int i,
			   const struct pframe **frame, int *role)
{
	const struct pframe *f;
	const char *t;
	int g, err = 0;

	*frame = NULL;
	*role = FLAT_ROOT;
	if (i < l->nroots) {
		/* a task's time is its own: apart from every thread's */
		if (profile__kind_is_task(l->e->kind) && !i--)
			return PROFILE_TASKS_ROOT;
		for (g = 0; g < fl->o->ngroups; g++) {
			t = root_text(fl, fl->o->groups[g], l->e, &err);
			if (t && !i--)
				return t;
		}
		return "";
	}
	i -= l->nroots;
	if (l->cause_at >= 0) {
		if (i == l->cause_at) {
			*role = FLAT_CAUSE;
			return profile__kind_frame(l->e->kind);
		}
		if (i > l->cause_at)
			i--;
	}
	if (i >= (int)l->e->stack->n)
		return "";
	f = l->e->stack->frames[i];
	*frame = f;
	*role = FLAT_FRAME;
	return frame_text(fl, f);
}

/* Work out the line's shape, and make every text it needs now, so the
 * sort never meets an allocation failure. */
static int setup_line(struct flatten *fl, struct line *l,
		      const struct pentry *e)
{
	unsigned int i;
	int g, err = 0;

	memset(l, 0, sizeof(*l));
	l->e = e;
	l->nroots = profile__kind_is_task(e->kind);
	for (g = 0; g < fl->o->ngroups; g++)
		if (root_text(fl, fl->o->groups[g], e, &err))
			l->nroots++;
	if (err)
		return err;
	for (i = 0; i < e->stack->n; i++)
		if (!frame_text(fl, e->stack->frames[i]))
			return -ENOMEM;
	/* under the Python frames, above the kernel's */
	l->cause_at = (short)pentry__cause_at(e);
	l->depth = l->nroots + (int)e->stack->n + (l->cause_at >= 0);
	return 0;
}

/* Order of the lines: text by text, a prefix first.  *common: how many
 * frames they share. */
static int cmp_common(struct flatten *fl, const struct line *a,
		      const struct line *b, int *common)
{
	const struct pframe *f;
	int i, c, role;

	for (i = 0; i < a->depth && i < b->depth; i++) {
		const char *ta = text_at(fl, a, i, &f, &role);
		const char *tb = text_at(fl, b, i, &f, &role);

		if (ta != tb && (c = strcmp(ta, tb))) {
			*common = i;
			return c;
		}
	}
	*common = i;
	return a->depth - b->depth;
}

static int cmp_lines(const void *pa, const void *pb, void *ctx)
{
	int common;

	return cmp_common(ctx, pa, pb, &common);
}

void flatten__free(struct flatten *fl)
{
	struct root_text *r, *tmp;
	unsigned int i;

	if (!fl)
		return;
	HASH_ITER(hh, fl->roots, r, tmp) {
		HASH_DEL(fl->roots, r);
		free(r->text);
		free(r);
	}
	for (i = 0; fl->frame_text && i < fl->nframes; i++)
		free(fl->frame_text[i]);
	free(fl->frame_text);
	free(fl->lines);
	free(fl);
}

int flatten__new(const struct profile *p, const struct write_opts *o,
		 struct flatten **out)
{
	static const struct write_opts none;
	const struct pentry **entries;
	struct flatten *fl;
	size_t i;
	int err;

	*out = NULL;
	fl = calloc(1, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	fl->nframes = profile__nframes(p);
	fl->o = o ? o : &none;
	err = profile__entries(p, &entries, &fl->n);
	if (err) {
		free(fl);
		return err;
	}
	fl->frame_text = calloc(fl->nframes ? fl->nframes : 1, sizeof(char *));
	fl->lines = calloc(fl->n ? fl->n : 1, sizeof(*fl->lines));
	if (!fl->frame_text || !fl->lines)
		err = -ENOMEM;
	for (i = 0; i < fl->n && !err; i++)
		err = setup_line(fl, &fl->lines[i], entries[i]);
	free(entries);
	if (err) {
		flatten__free(fl);
		return err;
	}
	qsort_r(fl->lines, fl->n, sizeof(*fl->lines), cmp_lines, fl);
	*out = fl;
	return 0;
}

size_t flatten__nlines(const struct flatten *fl)
{
	return fl->n;
}

const struct pentry *flatten__entry(const struct flatten *fl, size_t i)
{
	return fl->lines[i].e;
}

int flatten__depth(const struct flatten *fl, size_t i)
{
	return fl->lines[i].depth;
}

const char *flatten__text(struct flatten *fl, size_t i, int d,
			  const struct pframe **frame, int *role)
{
	const struct pframe *f;
	int r;

	return text_at(fl, &fl->lines[i], d,
		       frame ? frame : &f, role ? role : &r);
}

int flatten__common(struct flatten *fl, size_t i, size_t j)
{
	int common;

	cmp_common(fl, &fl->lines[i], &fl->lines[j], &common);
	return common;
}

bool flatten__same(struct flatten *fl, size_t i, size_t j)
{
	int common;

	return !cmp_common(fl, &fl->lines[i], &fl->lines[j],
			   &common);
}
