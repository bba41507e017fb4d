// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight diff BEFORE AFTER: which frames got more expensive.  Shares are
 * of each profile's own total, so recordings of different lengths (or
 * formats) compare.  The table ranks the largest changes of self and of
 * total share; -o writes a differential flame graph or the two-count
 * folded form of FlameGraph's difffolded.pl; --fail-over makes it a CI
 * check.
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "collapse.h"
#include "commands.h"
#include "hashfree.h"
#include "log.h"
#include "reader.h"
#include "tally.h"
#include "usage.h"
#include "utf8.h"
#include "writer.h"

/* A frame's growth past --fail-over: a failed check, not an error. */
#define EXIT_GREW 3

struct diff_opts {
	const char *paths[2];
	int npaths;
	int top;
	int by;
	double fail_over;		/* points; < 0: no check */
	const char *output;
	const char *format;
	struct collapse collapse;
};

enum { OPT_FAIL_OVER = 0x200 };

static const struct argp_option options[] = {
	{ "top", 'n', "N", 0, "Show the N largest changes of each kind (default 20)", 0 },
	{ "by", 'b', "WHAT", 0, "What a row is: function (default), line or file", 0 },
	{ "output", 'o', "FILE", 0, "Also write FILE: a differential flame graph (.svg) or two-count folded stacks (.folded, .txt); - for stdout, alone", 0 },
	{ "format", 'f', "FORMAT", 0, "svg or folded (default: from -o's extension; with no -o, it alone goes to stdout)", 0 },
	{ "fail-over", OPT_FAIL_OVER, "POINTS", 0, "Exit 3 when a frame's self or total share grew by more than POINTS", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct diff_opts *d = state->input;
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &d->collapse;
		break;
	case 'n':
		d->top = (int)parse_long("--top", arg, 1, 100000,
					 "expected an integer from 1 to 100000");
		break;
	case 'b':
		if (tally__parse_by(arg, &d->by))
			bad_value("--by", arg, "expected function, line or file");
		break;
	case 'o':
		d->output = writer__output_arg("--output", arg);
		break;
	case 'f':
		if (strcmp(arg, "svg") && strcmp(arg, "folded"))
			bad_value("--format", arg, "expected svg or folded");
		d->format = arg;
		break;
	case OPT_FAIL_OVER:
		d->fail_over = parse_double("--fail-over", arg, 0, true, 100,
					    "expected points from 0 to 100");
		break;
	case ARGP_KEY_ARG:
		if (d->npaths == 2)
			usage_error("two profiles: BEFORE and AFTER");
		d->paths[d->npaths++] = arg;
		break;
	case ARGP_KEY_END:
		if (d->npaths != 2)
			usage_error("which profiles? give BEFORE and AFTER");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* A row of the union of both tables: shares in percent. */
struct drow {
	const char *text;
	double self[2], total[2];
	UT_hash_handle hh;
};

struct diff {
	struct profile *p[2];
	struct tally t[2];
	struct drow *rows;		/* by text */
	struct drow **sorted;
	size_t n;
};

static int add_rows(struct diff *d, int side)
{
	const struct tally *t = &d->t[side];
	struct drow *r;
	size_t i;

	for (i = 0; i < t->n; i++) {
		const char *text = t->rows[i].text;

		HASH_FIND_STR(d->rows, text, r);
		if (!r) {
			r = calloc(1, sizeof(*r));
			if (!r)
				return -ENOMEM;
			r->text = text;
			HASH_ADD_KEYPTR(hh, d->rows, text, strlen(text), r);
		}
		if (!t->total)
			continue;
		r->self[side] += 100.0 * t->rows[i].self / t->total;
		r->total[side] += 100.0 * t->rows[i].total / t->total;
	}
	return 0;
}

/* By the size of the change of self (ctx true) or total share; equal
 * changes: growth first, then by text. */
static int by_change(const void *pa, const void *pb, void *ctx)
{
	const struct drow *a = *(struct drow *const *)pa;
	const struct drow *b = *(struct drow *const *)pb;
	const double *va = *(bool *)ctx ? a->self : a->total;
	const double *vb = *(bool *)ctx ? b->self : b->total;
	double da = fabs(va[1] - va[0]), db = fabs(vb[1] - vb[0]);
	bool ga = va[1] > va[0], gb = vb[1] > vb[0];

	if (da != db)
		return da < db ? 1 : -1;
	if (ga != gb)
		return ga ? -1 : 1;
	return strcmp(a->text, b->text);
}

static void print_side(const struct diff *d, int side, const char *path)
{
	const struct profile_meta *m = profile__meta(d->p[side]);

	printf("%s %s: mode %s, ", side ? "after: " : "before:", path,
	       profile__mode_name(m->mode));
	if (profile__unit(d->p[side]) == UNIT_SAMPLES)
		printf("%" PRIu64 " samples\n", d->t[side].total);
	else
		printf("%.3f s of time\n", d->t[side].total / 1e9);
}

static void print_section(struct diff *d, const char *title, bool self,
			  int top)
{
	size_t i;
	int shown = 0;

	qsort_r(d->sorted, d->n, sizeof(*d->sorted), by_change, &self);
	printf("\n%s share, largest changes:\n", title);
	printf("%8s    %7s %8s  %s\n", "before", "after", "change", "frame");
	for (i = 0; i < d->n && shown < top; i++) {
		const struct drow *r = d->sorted[i];
		const double *v = self ? r->self : r->total;

		if (fabs(v[1] - v[0]) < 0.05)
			break;
		printf("%7.1f%% -> %6.1f%% %+8.1f  ", v[0], v[1],
		       v[1] - v[0]);
		utf8__fputs_escaped(r->text, stdout);	/* a profile's: any bytes */
		putchar('\n');
		shown++;
	}
	if (!shown)
		printf("  (no change of 0.1 points or more)\n");
}

/* The row that grew the most, self or total, for --fail-over. */
static const struct drow *most_grown(const struct diff *d, double *points,
				     const char **what)
{
	const struct drow *best = NULL;
	size_t i;

	*points = 0;
	for (i = 0; i < d->n; i++) {
		const struct drow *r = d->sorted[i];

		if (r->self[1] - r->self[0] > *points) {
			*points = r->self[1] - r->self[0];
			*what = "self";
			best = r;
		}
		if (r->total[1] - r->total[0] > *points) {
			*points = r->total[1] - r->total[0];
			*what = "total";
			best = r;
		}
	}
	return best;
}

/* Folded text of a profile, line by line, into a table of two counts. */
struct fline {
	UT_hash_handle hh;
	uint64_t count[2];
	char text[];
};

static int fold_into(struct profile *p, int side, struct fline **lines)
{
	char *buf = NULL, *line, *save = NULL, *sp;
	size_t len = 0;
	struct fline *l;
	int err;

	err = writer__write_mem(&writer_folded, p, NULL, &buf, &len);
	for (line = err ? NULL : strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		HASH_FIND_STR(*lines, line, l);
		if (!l) {
			l = calloc(1, sizeof(*l) + strlen(line) + 1);
			if (!l) {
				err = -ENOMEM;
				break;
			}
			strcpy(l->text, line);
			HASH_ADD_STR(*lines, text, l);
		}
		l->count[side] += strtoull(sp + 1, NULL, 10);
	}
	free(buf);
	return err;
}

static int by_text(struct fline *a, struct fline *b)
{
	return strcmp(a->text, b->text);
}

/* "stack BEFORE AFTER", as difffolded.pl writes it. */
static int write_two_count(void *ctx, FILE *f)
{
	struct diff *d = ctx;
	struct fline *lines = NULL, *l, *tmp;
	int err;

	err = fold_into(d->p[0], 0, &lines);
	if (!err)
		err = fold_into(d->p[1], 1, &lines);
	HASH_SORT(lines, by_text);
	HASH_ITER(hh, lines, l, tmp) {
		if (!err && fprintf(f, "%s %" PRIu64 " %" PRIu64 "\n", l->text,
				    l->count[0], l->count[1]) < 0)
			err = -EIO;
		HASH_DEL(lines, l);
		free(l);
	}
	return err;
}

static int write_svg(void *ctx, FILE *f)
{
	struct diff *d = ctx;

	return svg__write_diff(d->p[0], d->p[1], NULL, f);
}

/* -o - (or no -o with -f): the output is all that stdout holds. */
static bool to_stdout(const struct diff_opts *o)
{
	return o->output ? !strcmp(o->output, "-") : o->format != NULL;
}

/* -o and -f: write what they name; 0, or 1 after saying why. */
static int write_output(struct diff_opts *o, struct diff *d)
{
	const char *fmt = o->format;
	int (*fn)(void *ctx, FILE *f);
	const struct writer *w;
	int err;

	if (!fmt && o->output) {
		w = writer__for_path(o->output);
		fmt = w == &writer_svg ? "svg" : w == &writer_folded ? "folded" : NULL;
		if (!fmt)
			usage_error("cannot tell the format of %s from its extension; give -f svg or -f folded, or name it .svg or .folded",
				    o->output);
	}
	if (!fmt)
		return 0;
	fn = strcmp(fmt, "svg") ? write_two_count : write_svg;
	if (to_stdout(o)) {
		err = fn(d, stdout);
		if (!err && fflush(stdout))
			err = -errno;
	} else {
		err = writer__atomic(o->output, fn, d);
	}
	if (err) {
		pr_err("failed to write %s: %s",
		       to_stdout(o) ? "stdout" : o->output, strerror(-err));
		return 1;
	}
	if (!to_stdout(o))
		pr_info("wrote %s", o->output);
	return 0;
}

static int load(struct diff_opts *o, struct diff *d, int side)
{
	struct profile *p, *shown;
	struct tally_opts to = { .by = o->by };
	char err[512];
	int ret;

	ret = reader__load(o->paths[side], &p, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	ret = collapse__apply(&o->collapse, p, &shown);
	if (shown != p)
		profile__free(p);
	if (!ret)
		ret = tally__build(shown, &to, &d->t[side]);
	d->p[side] = shown;
	if (ret)
		pr_err("failed to read %s: %s",
		       o->paths[side], strerror(-ret));
	return ret;
}

static void diff_free(struct diff *d)
{
	int i;

	HASH_FREE_ALL(d->rows);
	free(d->sorted);
	for (i = 0; i < 2; i++) {
		tally__free(&d->t[i]);
		profile__free(d->p[i]);
	}
}

static int run_diff(struct diff_opts *o, struct diff *d)
{
	const struct drow *grown;
	const char *what = "";
	struct drow *r, *tmp;
	double points;
	char text[1024];
	int ret;

	if (load(o, d, 0) || load(o, d, 1))
		return 1;
	if (add_rows(d, 0) || add_rows(d, 1)) {
		pr_err("out of memory");
		return 1;
	}
	d->n = HASH_COUNT(d->rows);
	d->sorted = calloc(d->n ? d->n : 1, sizeof(*d->sorted));
	if (!d->sorted)
		return 1;
	d->n = 0;
	HASH_ITER(hh, d->rows, r, tmp)
		d->sorted[d->n++] = r;
	if (to_stdout(o)) {
		/* the folded form or the graph on stdout is the whole output */
		return write_output(o, d);
	}
	print_side(d, 0, o->paths[0]);
	print_side(d, 1, o->paths[1]);
	if (profile__meta(d->p[0])->mode != profile__meta(d->p[1])->mode)
		printf("note: the profiles are of different modes\n");
	print_section(d, "Total", false, o->top);
	print_section(d, "Self", true, o->top);
	ret = write_output(o, d);
	if (ret)
		return ret;
	grown = most_grown(d, &points, &what);
	if (o->fail_over >= 0 && grown && points > o->fail_over) {
		fflush(stdout);
		pr_err("%s grew by %.1f points of %s share, over --fail-over %g",
		       utf8__escape(text, sizeof(text), grown->text), points,
		       what, o->fail_over);
		return EXIT_GREW;
	}
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	const struct argp_child children[] = { { &collapse__argp, 0, NULL, 0 },
					       {} };
	const struct argp argp = { options, parse_opt, "BEFORE AFTER",
				   "Compare two profiles: which frames' shares grew or shrank.",
				   children, NULL, NULL };
	struct diff_opts o = { .top = 20, .by = BY_FUNCTION, .fail_over = -1 };
	struct diff d = {};
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	ret = run_diff(&o, &d);
	diff_free(&d);
	collapse__free(&o.collapse);
	return ret;
}
