// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pysight report: the top frames of a folded profile, by self and total. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "commands.h"
#include "folded_read.h"
#include "usage.h"

struct frame_stat {
	char *name;
	uint64_t self, total;
	uint64_t seen;		/* last stack it was counted in, for total */
	UT_hash_handle hh;
};

struct report {
	struct frame_stat *frames;
	uint64_t total, stack_no;
	int top;
	const char *path;
};

static const struct argp_option options[] = {
	{ "top", 'n', "N", 0, "Show the N hottest frames (default 20)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report *r = state->input;
	char *end;
	long n;

	switch (key) {
	case 'n':
		n = strtol(arg, &end, 10);
		if (*end || n < 1 || n > 100000)
			bad_value("--top", arg, "expected an integer from 1 to 100000");
		r->top = (int)n;
		break;
	case ARGP_KEY_ARG:
		if (r->path)
			usage_error("one profile at a time");
		r->path = arg;
		break;
	case ARGP_KEY_END:
		if (!r->path)
			usage_error("which profile? (a folded file)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static struct frame_stat *stat_of(struct report *r, const char *name)
{
	struct frame_stat *s;

	HASH_FIND_STR(r->frames, name, s);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, r->frames, s->name, strlen(s->name), s);
	return s;
}

static int add_stack(char **frames, int n, uint64_t count, void *ctx)
{
	struct report *r = ctx;
	int i;

	r->stack_no++;
	r->total += count;
	for (i = 0; i < n; i++) {
		struct frame_stat *s = stat_of(r, frames[i]);

		if (!s)
			return -ENOMEM;
		if (s->seen != r->stack_no) {	/* recursion counts once */
			s->seen = r->stack_no;
			s->total += count;
		}
		if (i == n - 1)
			s->self += count;
	}
	return 0;
}

static int by_self(struct frame_stat *a, struct frame_stat *b)
{
	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

static void print_table(struct report *r)
{
	struct frame_stat *s, *tmp;
	int shown = 0;

	printf("%7s %7s  %s\n", "self%", "total%", "frame");
	HASH_SORT(r->frames, by_self);
	HASH_ITER(hh, r->frames, s, tmp) {
		if (shown++ < r->top)
			printf("%6.1f%% %6.1f%%  %s\n", 100.0 * s->self / r->total,
			       100.0 * s->total / r->total, s->name);
		HASH_DEL(r->frames, s);
		free(s->name);
		free(s);
	}
	printf("(%" PRIu64 " samples)\n", r->total);
}

int cmd_report(int argc, char **argv)
{
	const struct argp argp = { options, parse_opt, "PROFILE",
				   "Show the hottest frames of a folded profile.",
				   NULL, NULL, NULL };
	struct report r = { .top = 20 };
	char err[128] = "";
	FILE *f;
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &r))
		return 2;
	f = fopen(r.path, "r");
	if (!f) {
		fprintf(stderr, "pysight: cannot open %s: %s\n", r.path,
			strerror(errno));
		return 1;
	}
	ret = folded__read(f, add_stack, &r, err, sizeof(err));
	fclose(f);
	if (ret) {
		fprintf(stderr, "pysight: %s is not a folded profile: %s\n",
			r.path, err[0] ? err : strerror(-ret));
		return 1;
	}
	if (!r.total) {
		printf("%s: no samples\n", r.path);
		return 0;
	}
	print_table(&r);
	return 0;
}
