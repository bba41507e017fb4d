// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks, as Brendan Gregg's stackcollapse tools write them:
 * "root;...;leaf COUNT", which flamegraph.pl, inferno and speedscope read.
 * Entries are sorted by their frames' labels, so lines that read alike
 * (processes share stacks) are neighbours and merge, and the same profile
 * always writes the same file.  Lines are streamed, never all held.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

static const struct pframe *frame_at(const struct psample *s, int i)
{
	if (s->thread)
		return i ? s->frames[i - 1] : s->thread;
	return s->frames[i];
}

static int depth(const struct psample *s)
{
	return s->nframes + (s->thread ? 1 : 0);
}

/* Order of the folded lines: label by label, a prefix first. */
static int cmp_samples(const void *pa, const void *pb)
{
	const struct psample *a = pa, *b = pb;
	int na = depth(a), nb = depth(b), i, c;

	for (i = 0; i < na && i < nb; i++) {
		const struct pframe *fa = frame_at(a, i), *fb = frame_at(b, i);

		if (fa == fb)
			continue;
		c = strcmp(fa->label, fb->label);
		if (c)
			return c;
	}
	return na - nb;
}

static int write_line(FILE *f, const struct psample *s, uint64_t weight)
{
	int i, n = depth(s);

	for (i = 0; i < n; i++)
		if (fputs(frame_at(s, i)->label, f) < 0 ||
		    (i + 1 < n && fputc(';', f) < 0))
			return -EIO;
	return fprintf(f, " %" PRIu64 "\n", weight) < 0 ? -EIO : 0;
}

static int write_folded(struct profile *p, FILE *f)
{
	struct psample *arr;
	uint64_t weight;
	size_t n, i;
	int err;

	err = profile__samples(p, &arr, &n);
	if (err)
		return err;
	qsort(arr, n, sizeof(*arr), cmp_samples);
	for (i = 0; i < n && !err; i++) {
		weight = arr[i].weight;
		while (i + 1 < n && !cmp_samples(&arr[i], &arr[i + 1]))
			weight += arr[++i].weight;
		if (depth(&arr[i]))
			err = write_line(f, &arr[i], weight);
	}
	free(arr);
	return err;
}

const struct writer writer_folded = {
	.name = "folded",
	.ext = "folded",
	.write = write_folded,
};
