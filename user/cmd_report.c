// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pysight report: the top frames of a profile, by self and total. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collapse.h"
#include "commands.h"
#include "log.h"
#include "reader.h"
#include "tally.h"
#include "usage.h"
#include "utf8.h"

struct report_opts {
	int top;
	const char *path;
	struct tally_opts tally;
	struct collapse collapse;
};

static const struct argp_option options[] = {
	{ "top", 'n', "N", 0, "Show the N hottest frames (default 20)", 0 },
	{ "by", 'b', "WHAT", 0, "What a row is: line (default), function or file", 0 },
	{ "process", 'p', "PID|NAME", 0, "Only this process", 0 },
	{ "thread", 't', "TID|NAME", 0, "Only this thread", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report_opts *r = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &r->collapse;
		break;
	case 'n':
		r->top = (int)parse_long("--top", arg, 1, 100000,
					 "expected an integer from 1 to 100000");
		break;
	case 'b':
		if (tally__parse_by(arg, &r->tally.by))
			bad_value("--by", arg, "expected line, function or file");
		break;
	case 'p':
	case 't':
		if (tally__parse_label(arg, key == 'p' ? &r->tally.pid :
				       &r->tally.tid, key == 'p' ?
				       &r->tally.process : &r->tally.thread))
			bad_value(key == 'p' ? "--process" : "--thread", arg,
				  "expected an id or a name");
		break;
	case ARGP_KEY_ARG:
		if (r->path)
			usage_error("one profile at a time");
		r->path = arg;
		break;
	case ARGP_KEY_END:
		if (!r->path)
			usage_error("which profile? (folded, speedscope or pprof)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Colour only for a person at a terminal that has it. */
static bool use_colour(void)
{
	const char *term = getenv("TERM");

	return isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && term &&
	       strcmp(term, "dumb");
}

/* What the profile is: "mode wall, time in ns, from a pprof file; TARGET". */
static void print_header(struct profile *p)
{
	const struct profile_meta *m = profile__meta(p);

	printf("mode %s, %s", profile__mode_name(m->mode),
	       profile__unit(p) == UNIT_SAMPLES ? "samples" : "time");
	if (m->rate_hz)
		printf(" at %.4g Hz", m->rate_hz);
	if (m->duration_s > 0)
		printf(" over %.1f s", m->duration_s);
	printf(", read from a %s file", m->format ? m->format : "profile");
	if (m->target[0]) {
		fputs("; ", stdout);
		utf8__fputs_escaped(m->target, stdout);
	}
	printf("\n");
}

/* What the total is: "77 samples", or time with its split by cause. */
static void print_total(const struct profile *p, const struct tally *t)
{
	int k;

	if (profile__unit(p) == UNIT_SAMPLES) {
		printf("(%" PRIu64 " samples)\n", t->total);
		return;
	}
	printf("(%.3f s of %stime:", t->total / 1e9,
	       t->tasks ? "asyncio tasks' " : "");
	for (k = 0; k < KIND__MAX; k++)
		if (t->by_kind[k])
			printf(" %s %.1f%%", profile__kind_name(k),
			       100.0 * t->by_kind[k] / t->total);
	printf(")\n");
}

static const char *heat(double pct, bool colour)
{
	if (!colour)
		return "";
	return pct >= 10 ? "\033[1;31m" : pct >= 3 ? "\033[33m" : "";
}

static void print_table(const struct profile *p, const struct tally *t,
			int top)
{
	bool colour = use_colour();
	const char *off = colour ? "\033[0m" : "";
	size_t i;

	printf("%s%7s %7s  %s%s\n", colour ? "\033[1m" : "", "self%",
	       "total%", "frame", off);
	for (i = 0; i < t->n && i < (size_t)top; i++) {
		double self = 100.0 * t->rows[i].self / t->total;

		printf("%s%6.1f%%%s %6.1f%%  ", heat(self, colour), self,
		       off, 100.0 * t->rows[i].total / t->total);
		/* a profile's names are any bytes: never raw to a terminal */
		utf8__fputs_escaped(t->rows[i].text, stdout);
		putchar('\n');
	}
	print_total(p, t);
}

/*
 * asyncio tasks' own time (record --asyncio in wall mode), after the
 * threads': a table of its own, since tasks overlap and their time is
 * no share of the threads'.
 */
static int print_tasks(const struct profile *p, const struct report_opts *r)
{
	struct tally_opts o = r->tally;
	struct tally t;
	int ret;

	o.tasks = true;
	ret = tally__build(p, &o, &t);
	if (ret || !t.total) {
		tally__free(&t);
		return ret;
	}
	printf("\nasyncio tasks, each over its own time (their await points; not part of the time above):\n");
	print_table(p, &t, r->top);
	tally__free(&t);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	const struct argp_child children[] = { { &collapse__argp, 0, NULL, 0 },
					       {} };
	const struct argp argp = { options, parse_opt, "PROFILE",
				   "Show the hottest frames of a profile: folded, speedscope or pprof.",
				   children, NULL, NULL };
	struct report_opts r = { .top = 20, .tally = { .by = BY_LINE } };
	struct profile *p = NULL, *shown;
	struct tally t;
	char err[512] = "";
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &r))
		return 2;
	ret = reader__load(r.path, &p, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		collapse__free(&r.collapse);
		return 1;
	}
	ret = collapse__apply(&r.collapse, p, &shown);
	if (!ret)
		ret = tally__build(shown, &r.tally, &t);
	if (ret) {
		pr_err("failed to read %s: %s", r.path,
		       strerror(-ret));
	} else {
		print_header(shown);
		if (!t.total)
			printf("%s: no samples%s\n", r.path,
			       r.tally.pid || r.tally.tid || r.tally.process ||
			       r.tally.thread ? " for that process or thread" : "");
		else
			print_table(shown, &t, r.top);
		tally__free(&t);
		ret = print_tasks(shown, &r);
	}
	if (shown != p)
		profile__free(shown);
	profile__free(p);
	collapse__free(&r.collapse);
	return ret ? 1 : 0;
}
