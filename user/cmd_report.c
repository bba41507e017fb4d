// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pysight report: the top frames of a profile, by self and total. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "reader.h"
#include "tally.h"
#include "usage.h"

struct report_opts {
	int top;
	const char *path;
};

static const struct argp_option options[] = {
	{ "top", 'n', "N", 0, "Show the N hottest frames (default 20)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report_opts *r = state->input;
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

/* What the total is: "77 samples", or time with its split by cause. */
static void print_total(const struct profile *p, const struct tally *t)
{
	int k;

	if (profile__unit(p) == UNIT_SAMPLES) {
		printf("(%" PRIu64 " samples)\n", t->total);
		return;
	}
	printf("(%.3f s of time:", t->total / 1e9);
	for (k = 0; k < KIND__MAX; k++)
		if (t->by_kind[k])
			printf(" %s %.1f%%", profile__kind_name(k),
			       100.0 * t->by_kind[k] / t->total);
	printf(")\n");
}

static void print_table(const struct profile *p, const struct tally *t,
			int top)
{
	size_t i;

	printf("%7s %7s  %s\n", "self%", "total%", "frame");
	for (i = 0; i < t->n && i < (size_t)top; i++)
		printf("%6.1f%% %6.1f%%  %s\n",
		       100.0 * t->rows[i].self / t->total,
		       100.0 * t->rows[i].total / t->total, t->rows[i].text);
	print_total(p, t);
}

int cmd_report(int argc, char **argv)
{
	const struct argp argp = { options, parse_opt, "PROFILE",
				   "Show the hottest frames of a profile.",
				   NULL, NULL, NULL };
	struct report_opts r = { .top = 20 };
	struct tally_opts to = { .by = BY_LINE };
	struct profile *p = NULL;
	struct tally t;
	char err[512] = "";
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &r))
		return 2;
	ret = reader__load(r.path, &p, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "pysight: %s\n", err);
		return 1;
	}
	ret = tally__build(p, &to, &t);
	if (ret) {
		fprintf(stderr, "pysight: failed to read %s: %s\n", r.path,
			strerror(-ret));
		profile__free(p);
		return 1;
	}
	if (!t.total)
		printf("%s: no samples\n", r.path);
	else
		print_table(p, &t, r.top);
	tally__free(&t);
	profile__free(p);
	return 0;
}
