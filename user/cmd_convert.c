// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pysight convert IN -o OUT: a profile in another format, e.g. py-spy's
 * folded output as pprof for Pyroscope, or a pprof as a flame graph. */
#include <argp.h>
#include <stdio.h>
#include <string.h>

#include "collapse.h"
#include "commands.h"
#include "log.h"
#include "reader.h"
#include "usage.h"
#include "writer.h"

struct convert_opts {
	const char *in, *out, *format;
	struct collapse collapse;
};

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "Write FILE, in the format its extension names", 0 },
	{ "format", 'f', "FORMAT", 0, "Output format: folded, speedscope, pprof or svg", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct convert_opts *c = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &c->collapse;
		break;
	case 'o':
		c->out = writer__output_arg("--output", arg);
		break;
	case 'f':
		writer__check_format(arg);
		c->format = arg;
		break;
	case ARGP_KEY_ARG:
		if (c->in)
			usage_error("one profile at a time");
		c->in = arg;
		break;
	case ARGP_KEY_END:
		if (!c->in || !c->out)
			usage_error("give a profile and -o FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	const struct argp_child children[] = { { &collapse__argp, 0, NULL, 0 },
					       {} };
	const struct argp argp = { options, parse_opt, "PROFILE",
				   "Write a profile (folded, speedscope or pprof) in another format.",
				   children, NULL, NULL };
	struct convert_opts c = {};
	struct profile *p = NULL, *shown = NULL;
	const struct writer *w;
	char err[512];
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &c))
		return 2;
	w = writer__choose(c.format, c.out);
	ret = reader__load(c.in, &p, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		collapse__free(&c.collapse);
		return 1;
	}
	ret = collapse__apply(&c.collapse, p, &shown);
	if (!ret)
		ret = writer__write_file(w, shown, NULL, c.out);
	if (ret)
		pr_err("failed to write %s: %s",
		       writer__path_name(c.out), strerror(-ret));
	if (shown && shown != p)
		profile__free(shown);
	profile__free(p);
	collapse__free(&c.collapse);
	return ret ? 1 : 0;
}
