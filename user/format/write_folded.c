// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks, as Brendan Gregg's stackcollapse tools write them:
 * "root;...;leaf COUNT", which flamegraph.pl, inferno and speedscope read.
 * A line is the --group-by roots, the stack, and for off-CPU time the
 * pseudo-frame of its cause (above the kernel frames, if any): see
 * flatten.h.  Lines are sorted by their text, so lines that read alike
 * (processes share stacks) are neighbours and merge, and the same profile
 * always writes the same file.  Time is written in whole microseconds.
 */
#include <errno.h>
#include <inttypes.h>

#include "flatten.h"
#include "writer.h"

/* Microseconds for time, rounded; samples as they are. */
static uint64_t scaled(const struct profile *p, uint64_t w)
{
	if (profile__unit(p) == UNIT_NANOSECONDS)
		return (w + 500) / 1000;
	return w;
}

static int write_line(struct flatten *fl, FILE *f, size_t l, uint64_t weight)
{
	int i, depth = flatten__depth(fl, l);

	for (i = 0; i < depth; i++)
		if (fputs(flatten__text(fl, l, i, NULL, NULL), f) < 0 ||
		    (i + 1 < depth && fputc(';', f) < 0))
			return -EIO;
	return fprintf(f, " %" PRIu64 "\n", weight) < 0 ? -EIO : 0;
}

static int write_folded(struct profile *p, const struct write_opts *o,
			FILE *f)
{
	struct flatten *fl;
	uint64_t weight;
	size_t i, n;
	int err;

	err = flatten__new(p, o, &fl);
	if (err)
		return err;
	n = flatten__nlines(fl);
	for (i = 0; i < n && !err; i++) {
		weight = flatten__entry(fl, i)->weight;
		while (i + 1 < n && flatten__same(fl, i, i + 1))
			weight += flatten__entry(fl, ++i)->weight;
		if (flatten__depth(fl, i) && scaled(p, weight))
			err = write_line(fl, f, i, scaled(p, weight));
	}
	flatten__free(fl);
	return err;
}

const struct writer writer_folded = {
	.name = "folded",
	.exts = { "folded", "txt" },
	.write = write_folded,
};
