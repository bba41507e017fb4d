// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight snapshot: the running agent's flight recorder, its last
 * --window of stacks, written here.  It asks through the control socket;
 * the agent does the work and this writes the file (so it belongs to who
 * asked, as record's do).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup.h"
#include "commands.h"
#include "control.h"
#include "log.h"
#include "usage.h"
#include "writer.h"

struct snapshot_opts {
	const char *socket_path;
	const char *output;
	const char *format;
	long pid;
	const char *cgroup, *container;
	char default_out[64];
};

enum { OPT_SOCKET = 1000, OPT_CGROUP, OPT_CONTAINER };

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "Only this process", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Only this cgroup and those under it (its path, whole or under the v2 mount)", 0 },
	{ "container", OPT_CONTAINER, "ID", 0, "Only this container (an id or its first characters)", 0 },
	{ "output", 'o', "FILE", 0, "Write FILE (default pysight-snapshot-DATE.pb.gz)", 0 },
	{ "format", 'f', "FORMAT", 0, "folded, speedscope, pprof or svg (default: from -o's extension)", 0 },
	{ "socket", OPT_SOCKET, "PATH", 0, "The agent's control socket (default " CONTROL_DEFAULT_PATH ")", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct snapshot_opts *o = state->input;

	switch (key) {
	case 'p':
		o->pid = parse_pid("--pid", arg);
		break;
	case OPT_CGROUP:
		if (strpbrk(arg, " \n") || strlen(arg) > 255)
			bad_value("--cgroup", arg, "expected a cgroup path");
		o->cgroup = arg;
		break;
	case OPT_CONTAINER:
		if (strpbrk(arg, " \n") || strlen(arg) > 79)
			bad_value("--container", arg, "expected a container id");
		o->container = arg;
		break;
	case 'o':
		o->output = writer__output_arg("--output", arg);
		break;
	case 'f':
		o->format = writer__check_format(arg);
		break;
	case OPT_SOCKET:
		o->socket_path = path_arg("--socket", arg);
		break;
	case ARGP_KEY_ARG:
		usage_error("unexpected argument '%s'", arg);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* --cgroup as the agent keeps cgroups: relative to the v2 mount, from
 * "/", whether given whole (/sys/fs/cgroup/a/b) or not (a/b, /a/b); a
 * cgroup gone since is still named by its path.  Exits on one too long
 * for a request. */
static void cgroup_rel(const char *arg, char *out, size_t len)
{
	struct cgroup_ref cg;
	char mnt[PATH_MAX], err[PATH_MAX + 100];
	size_t n;
	int r;

	if (!cgroup__resolve(arg, &cg, err, sizeof(err))) {
		r = snprintf(out, len, "%s", cg.path);
	} else {
		if (!cgroup__v2_mount(mnt, sizeof(mnt)) && (n = strlen(mnt)) &&
		    !strncmp(arg, mnt, n) && (arg[n] == '/' || !arg[n]))
			arg += n;
		r = snprintf(out, len, "%s%s", arg[0] == '/' ? "" : "/", arg);
	}
	if (r < 0 || (size_t)r >= len)
		bad_value("--cgroup", arg, "a path too long for the agent");
}

static int write_bytes(void *ctx, FILE *f)
{
	const struct { const void *data; size_t len; } *b = ctx;

	return fwrite(b->data, 1, b->len, f) == b->len ? 0 : -EIO;
}

int cmd_snapshot(int argc, char **argv)
{
	static const char doc[] =
		"Write the running agent's last --window of stacks (its flight "
		"recorder) to a file, for all processes or those asked for.";
	const struct argp argp = { options, parse_opt, NULL, doc, NULL, NULL, NULL };
	struct snapshot_opts o = { .socket_path = CONTROL_DEFAULT_PATH };
	struct { const void *data; size_t len; } b;
	char line[CONTROL_LINE_MAX], err[512];
	char cg[sizeof(((struct control_request *)0)->cgroup)];
	const struct writer *w;
	time_t t = time(NULL);
	void *data = NULL;
	size_t len = 0;
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	if (!o.output) {
		strftime(o.default_out, sizeof(o.default_out),
			 "pysight-snapshot-%Y%m%d-%H%M%S.pb.gz", localtime(&t));
		o.output = o.default_out;
	}
	w = writer__choose(o.format, o.output);
	snprintf(line, sizeof(line), "snapshot format=%s", w->name);
	if (o.pid)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " pid=%ld", o.pid);
	if (o.cgroup) {
		cgroup_rel(o.cgroup, cg, sizeof(cg));
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " cgroup=%s", cg);
	}
	if (o.container)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " container=%s", o.container);
	strncat(line, "\n", sizeof(line) - strlen(line) - 1);
	err[0] = 0;
	ret = control__ask(o.socket_path, line, &data, &len, err, sizeof(err));
	if (ret == -ENOENT || ret == -ECONNREFUSED) {
		pr_err("no agent is running (nothing listens on %s)",
		       o.socket_path);
		return 1;
	}
	if (ret) {
		pr_err("snapshot failed: %s",
		       err[0] ? err : strerror(-ret));
		return 1;
	}
	b.data = data;
	b.len = len;
	ret = writer__atomic(o.output, write_bytes, &b);
	free(data);
	if (ret) {
		pr_err("failed to write %s: %s",
		       writer__path_name(o.output), strerror(-ret));
		return 1;
	}
	pr_info("wrote %s (%zu bytes)",
		writer__path_name(o.output), len);
	return 0;
}
