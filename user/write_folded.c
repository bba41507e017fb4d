// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks, as Brendan Gregg's stackcollapse tools write them:
 * "root;...;leaf COUNT", which flamegraph.pl, inferno and speedscope read.
 * Lines are merged (processes may share stacks) and sorted, so the same
 * profile always writes the same file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "writer.h"

struct line {
	char *text;
	uint64_t weight;
	UT_hash_handle hh;
};

static int add_line(const struct pframe **frames, int n, uint64_t weight,
		    void *ctx)
{
	struct line **lines = ctx, *l;
	size_t len = 0, o = 0;
	char *text;
	int i;

	for (i = 0; i < n; i++)
		len += strlen(frames[i]->label) + 1;
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t l = strlen(frames[i]->label);

		if (i)
			text[o++] = ';';
		memcpy(text + o, frames[i]->label, l);
		o += l;
	}
	text[o] = 0;
	HASH_FIND_STR(*lines, text, l);
	if (l) {
		l->weight += weight;
		free(text);
		return 0;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		free(text);
		return -ENOMEM;
	}
	l->text = text;
	l->weight = weight;
	HASH_ADD_KEYPTR(hh, *lines, l->text, o, l);
	return 0;
}

static int by_text(struct line *a, struct line *b)
{
	return strcmp(a->text, b->text);
}

static int write_folded(struct profile *p, FILE *f)
{
	struct line *lines = NULL, *l, *tmp;
	int err;

	err = profile__foreach(p, add_line, &lines);
	HASH_SORT(lines, by_text);
	HASH_ITER(hh, lines, l, tmp) {
		if (!err && fprintf(f, "%s %" PRIu64 "\n", l->text, l->weight) < 0)
			err = -EIO;
		HASH_DEL(lines, l);
		free(l->text);
		free(l);
	}
	return err;
}

const struct writer writer_folded = {
	.name = "folded",
	.ext = "folded",
	.write = write_folded,
};
