// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks, as Brendan Gregg's stackcollapse tools write them:
 * "root;...;leaf COUNT", which flamegraph.pl, inferno and speedscope read.
 * A line is the --group-by roots, the stack, and for off-CPU time the
 * pseudo-frame of its cause (above the kernel frames, if any).  Lines are
 * sorted by their text, so lines that read alike (processes share
 * stacks) are neighbours and merge, and the same profile always writes
 * the same file.  Time is written in whole microseconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "labels.h"
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

/* Each frame's text once, by frame id; each root label's once. */
struct folded {
	char **frame_text;
	unsigned int nframes;
	struct root_text *roots;
	const struct write_opts *o;
};

/* 16 bytes a line: a profile of 100k stacks is written in 100k lines. */
struct line {
	const struct pentry *e;
	short nroots;
	short cause_at;		/* index of the cause frame, -1 for none */
	int depth;
};

/* Folded output splits on ';' and the last ' ' before the count. */
static char *sanitized(const char *s, size_t len)
{
	char *out = malloc(len + 1), *c;

	if (!out)
		return NULL;
	memcpy(out, s, len);
	out[len] = 0;
	for (c = out; *c; c++)
		if (*c == ';' || *c == '\n' || *c == '\r')
			*c = *c == ';' ? ':' : ' ';
	return out;
}

static const char *frame_text(struct folded *fd, const struct pframe *f)
{
	char buf[LABEL_MAX];

	if (!fd->frame_text[f->id])
		fd->frame_text[f->id] = sanitized(buf, labels__frame(f, buf,
								       sizeof(buf)));
	return fd->frame_text[f->id];
}

/* The label of group key for e, or NULL when e has none.  *err on ENOMEM. */
static const char *root_text(struct folded *fd, int key,
			     const struct pentry *e, int *err)
{
	struct root_text probe, *r;
	char buf[LABEL_MAX];
	size_t len;

	memset(&probe.id, 0, sizeof(probe.id));
	probe.id.owner = key == GROUP_CGROUP || key == GROUP_CONTAINER ?
			 (const void *)e->cgroup : (const void *)e->thread;
	probe.id.key = key;
	HASH_FIND(hh, fd->roots, &probe.id, sizeof(probe.id), r);
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
	HASH_ADD(hh, fd->roots, id, sizeof(r->id), r);
	return r->text;
}

/* The i-th frame of a line, as text. */
static const char *text_at(struct folded *fd, const struct line *l, int i)
{
	const char *t;
	int g, err = 0;

	if (i < l->nroots) {
		for (g = 0; g < fd->o->ngroups; g++) {
			t = root_text(fd, fd->o->groups[g], l->e, &err);
			if (t && !i--)
				return t;
		}
		return "";
	}
	i -= l->nroots;
	if (l->cause_at >= 0) {
		if (i == l->cause_at)
			return profile__kind_frame(l->e->kind);
		if (i > l->cause_at)
			i--;
	}
	return i < (int)l->e->stack->n ?
		       frame_text(fd, l->e->stack->frames[i]) : "";
}

/* Work out the line's shape, and make every text it needs now, so the
 * sort never meets an allocation failure. */
static int setup_line(struct folded *fd, struct line *l,
		      const struct pentry *e)
{
	unsigned int i;
	int g, err = 0;

	memset(l, 0, sizeof(*l));
	l->e = e;
	for (g = 0; g < fd->o->ngroups; g++)
		if (root_text(fd, fd->o->groups[g], e, &err))
			l->nroots++;
	if (err)
		return err;
	for (i = 0; i < e->stack->n; i++)
		if (!frame_text(fd, e->stack->frames[i]))
			return -ENOMEM;
	l->cause_at = -1;
	if (profile__kind_frame(e->kind)) {
		/* under the Python frames, above the kernel's */
		for (i = 0; i < e->stack->n; i++)
			if (e->stack->frames[i]->kind == PFRAME_KERNEL)
				break;
		l->cause_at = (short)i;
	}
	l->depth = l->nroots + (int)e->stack->n + (l->cause_at >= 0);
	return 0;
}

/* Order of the folded lines: text by text, a prefix first. */
static int cmp_lines(const void *pa, const void *pb, void *ctx)
{
	const struct line *a = pa, *b = pb;
	int i, c;

	for (i = 0; i < a->depth && i < b->depth; i++) {
		const char *ta = text_at(ctx, a, i);
		const char *tb = text_at(ctx, b, i);

		if (ta != tb && (c = strcmp(ta, tb)))
			return c;
	}
	return a->depth - b->depth;
}

/* Microseconds for time, rounded; samples as they are. */
static uint64_t scaled(const struct profile *p, uint64_t w)
{
	if (profile__unit(p) == UNIT_NANOSECONDS)
		return (w + 500) / 1000;
	return w;
}

static int write_line(struct folded *fd, FILE *f, const struct line *l,
		      uint64_t weight)
{
	int i;

	for (i = 0; i < l->depth; i++)
		if (fputs(text_at(fd, l, i), f) < 0 ||
		    (i + 1 < l->depth && fputc(';', f) < 0))
			return -EIO;
	return fprintf(f, " %" PRIu64 "\n", weight) < 0 ? -EIO : 0;
}

static int write_lines(struct profile *p, struct folded *fd, FILE *f,
		       struct line *lines, size_t n)
{
	uint64_t weight;
	size_t i;
	int err = 0;

	qsort_r(lines, n, sizeof(*lines), cmp_lines, fd);
	for (i = 0; i < n && !err; i++) {
		weight = lines[i].e->weight;
		while (i + 1 < n && !cmp_lines(&lines[i], &lines[i + 1], fd))
			weight += lines[++i].e->weight;
		if (lines[i].depth && scaled(p, weight))
			err = write_line(fd, f, &lines[i], scaled(p, weight));
	}
	return err;
}

static void folded_free(struct folded *fd)
{
	struct root_text *r, *tmp;
	unsigned int i;

	HASH_ITER(hh, fd->roots, r, tmp) {
		HASH_DEL(fd->roots, r);
		free(r->text);
		free(r);
	}
	for (i = 0; fd->frame_text && i < fd->nframes; i++)
		free(fd->frame_text[i]);
	free(fd->frame_text);
}

static int write_folded(struct profile *p, const struct write_opts *o,
			FILE *f)
{
	static const struct write_opts none;
	struct folded fd = { .nframes = profile__nframes(p), .o = o ? o : &none };
	const struct pentry **entries;
	struct line *lines = NULL;
	size_t n, i;
	int err;

	err = profile__entries(p, &entries, &n);
	if (err)
		return err;
	fd.frame_text = calloc(fd.nframes ? fd.nframes : 1, sizeof(char *));
	lines = calloc(n ? n : 1, sizeof(*lines));
	if (!fd.frame_text || !lines)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++)
		err = setup_line(&fd, &lines[i], entries[i]);
	free(entries);
	if (!err)
		err = write_lines(p, &fd, f, lines, n);
	folded_free(&fd);
	free(lines);
	return err;
}

const struct writer writer_folded = {
	.name = "folded",
	.exts = { "folded", "txt" },
	.write = write_folded,
};
