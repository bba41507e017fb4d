// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pysight: a system-wide CPU sampler for Python, in BPF. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "record", cmd_record, "sample Python stacks into a profile" },
	{ "top", cmd_top, "show the hottest Python functions live" },
	{ "report", cmd_report, "show the hottest frames of a profile" },
	{ "diff", cmd_diff, "compare two profiles: which frames got more expensive" },
	{ "dump", cmd_dump, "print every thread's Python stack, now, without stopping it" },
	{ "convert", cmd_convert, "write a profile in another format" },
	{ "agent", cmd_agent, "profile the host continuously: OTLP export, rolling files, flight recorder" },
	{ "snapshot", cmd_snapshot, "write the running agent's last minute of stacks" },
	{ "containers", cmd_containers, "list containers and cgroups with Python processes" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: pysight COMMAND [OPTIONS]\n\nCommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nRun 'pysight COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("pysight %s\n", PYSIGHT_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char name[64];

		if (strcmp(argv[1], cmds[i].name))
			continue;
		/* argp names the program after argv[0]: "pysight record" */
		snprintf(name, sizeof(name), "pysight %s", cmds[i].name);
		argv[1] = name;
		return cmds[i].fn(argc - 1, argv + 1);
	}
	pr_err("unknown command '%s' (try 'pysight --help')",
	       argv[1]);
	return 2;
}
