// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight containers: the containers and cgroups that have Python
 * processes now, with counts: what to give --container or --cgroup.
 * A command of its own rather than a record option: it records nothing,
 * needs no BPF, and its output is a table to read before recording.
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "cgroup.h"
#include "commands.h"
#include "container.h"
#include "hashfree.h"
#include "log.h"
#include "process.h"
#include "usage.h"
#include "utf8.h"

struct group {
	char path[PATH_MAX];		/* the cgroup, relative to the v2 mount */
	struct container_id ct;
	bool is_ct;
	unsigned int procs, threads;
	char names[128];		/* "python3 412, gunicorn 513, ..." */
	UT_hash_handle hh;
};

static const struct argp_option options[] = {
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	(void)state;
	if (key == ARGP_KEY_ARG)
		usage_error("unexpected argument '%s'", arg);
	return ARGP_ERR_UNKNOWN;
}

static unsigned int count_threads(pid_t pid)
{
	char p[64];
	struct dirent *d;
	unsigned int n = 0;
	DIR *dir;

	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	dir = opendir(p);
	while (dir && (d = readdir(dir)))
		n += d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return n;
}

static void add(struct group **groups, pid_t pid, const char *path)
{
	char comm[32] = "?", p[64];
	struct group *g;
	size_t o;
	FILE *f;

	HASH_FIND_STR(*groups, path, g);
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g)
			return;
		snprintf(g->path, sizeof(g->path), "%s", path);
		g->is_ct = container__parse(path, &g->ct);
		HASH_ADD_STR(*groups, path, g);
	}
	g->procs++;
	g->threads += count_threads(pid);
	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	f = fopen(p, "re");
	if (f && fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = 0;
	if (f)
		fclose(f);
	o = strlen(g->names);
	if (g->procs <= 3)
		snprintf(g->names + o, sizeof(g->names) - o, "%s%s %d",
			 o ? ", " : "", comm, pid);
	else if (g->procs == 4)
		snprintf(g->names + o, sizeof(g->names) - o, ", ...");
}

static int by_path(struct group *a, struct group *b)
{
	if (a->is_ct != b->is_ct)
		return a->is_ct ? -1 : 1;
	return strcmp(a->path, b->path);
}

/* Sorting moves the head: the caller's pointer must follow, or what it
 * frees from there on misses the groups sorted before it. */
static void print(struct group **groups)
{
	/* cgroup and process names are anyone's: escaped for the terminal */
	static char path[UTF8_ESC_SIZE(PATH_MAX)], names[UTF8_ESC_SIZE(128)];
	struct group *g, *tmp;

	printf("%-12s  %-36s  %5s  %7s  %-40s  %s\n", "CONTAINER", "POD", "PROCS",
	       "THREADS", "CGROUP", "PYTHON PROCESSES");
	HASH_SORT(*groups, by_path);
	HASH_ITER(hh, *groups, g, tmp) {
		printf("%-12.*s  %-36s  %5u  %7u  %-40s  %s\n",
		       g->is_ct ? container__shown(g->ct.id) : 1,
		       g->is_ct ? g->ct.id : "-",
		       g->is_ct && g->ct.pod[0] ? g->ct.pod : "-", g->procs,
		       g->threads, utf8__escape(path, sizeof(path), g->path),
		       utf8__escape(names, sizeof(names), g->names));
	}
}

struct scan {
	struct interp_cache *cache;
	struct group *groups;
	unsigned int n;
};

/* A Python process into its cgroup's group. */
static int scan_one(pid_t pid, void *ctx)
{
	struct scan *s = ctx;
	struct pyproc_info info;
	char path[PATH_MAX], err[256];

	if (process__inspect(s->cache, pid, &info, err, sizeof(err)))
		return 0;
	process__release(&info);
	if (!cgroup__path_of_pid(pid, path, sizeof(path))) {
		add(&s->groups, pid, path);
		s->n++;
	}
	return 0;
}

int cmd_containers(int argc, char **argv)
{
	const struct argp argp = { options, parse_opt, "",
				   "List the containers and cgroups with Python "
				   "processes now, with counts: what to give "
				   "record --container or --cgroup.",
				   NULL, NULL, NULL };
	struct scan s = {};
	char mnt[PATH_MAX];
	int err;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	if (cgroup__v2_mount(mnt, sizeof(mnt))) {
		pr_err("this host has no cgroup v2 hierarchy "
				"mounted: containers are found by their v2 cgroups");
		return 1;
	}
	s.cache = interp_cache__new();
	err = s.cache ? process__each(scan_one, &s) : -ENOMEM;
	interp_cache__free(s.cache);
	if (err) {
		pr_err("failed to read /proc: %s",
		       strerror(-err));
		HASH_FREE_ALL(s.groups);
		return 1;
	}
	if (!s.n)
		printf("no Python processes found%s\n", geteuid() ?
		       " (run as root to see other users' processes)" : "");
	else
		print(&s.groups);
	HASH_FREE_ALL(s.groups);
	return 0;
}
