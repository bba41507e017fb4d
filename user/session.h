/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every sampling command (record, top, agent) does before and after its own
 * work: the options that say what to sample (-p, -- COMMAND, --cgroup,
 * --container, --mode, -r, ...), the checks for privileges and BTF, a
 * collector opened on them, the command started stopped and released,
 * and at the end the command waited for.  One code path, so that record,
 * top and the agent sample the same way.
 */
#ifndef __PYSIGHT_SESSION_H
#define __PYSIGHT_SESSION_H

#include <argp.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include "collector.h"

#define SESSION_MAX_PIDS	256
#define SESSION_DEFAULT_RATE	100
#define SESSION_MAX_RATE	10000

struct session_opts {
	unsigned int rate;
	double duration;		/* seconds, 0 = until stopped */
	pid_t pids[SESSION_MAX_PIDS];	/* -p, repeatable */
	int npids;
	char **command;			/* after "--", or NULL */
	bool nolineno;
	bool full_filenames;
	int mode;			/* enum profile_mode */
	const char *cgroups[PYSIGHT_MAX_CGROUPS];	/* --cgroup, --container */
	bool is_container[PYSIGHT_MAX_CGROUPS];
	int ncgroups;
	bool gil_only;
	bool kernel_stacks;
	bool sweep;			/* wall/off by the sampled sweep, the default;
					 * false: --offcpu=trace */
	uint64_t sweep_reread_ns;	/* collector_opts' */
	unsigned int sweep_duty;	/* collector_opts' */
	bool asyncio;			/* collector_opts' */
	bool native, native_all;	/* collector_opts' */
};

struct session {
	struct session_opts o;
	struct collector *col;
	pid_t child;			/* the command, or 0 */
	int child_status;
	bool child_exited;
	int go_fd, err_fd;		/* the stopped command's pipes */
	volatile sig_atomic_t *stop;	/* the command's last stop signal */
};

/* Options as above, for a command's argp as a child whose input
 * (state->child_inputs[i]) is a struct session_opts. */
extern const struct argp session__argp;

/* sig to fn, with sigaction's flags (SA_RESTART where blocking calls
 * must go on through it): the one way every command installs a handler. */
void session__catch(int sig, void (*fn)(int), int flags);
/* The stop signals, SIGINT, SIGTERM and SIGHUP, to fn; SIGPIPE ignored,
 * so a closed pipe is an error to report, not a death. */
void session__catch_stops(void (*fn)(int), int flags);

/* Defaults; stop is the caller's signal flag, which wait_command reads. */
void session__init(struct session *s, volatile sig_atomic_t *stop);
/*
 * A command's argv: what follows "--" is the command, untouched by argp;
 * the rest goes to argp (whose children include session__argp, and
 * whose input is input).  2 when argp failed; bad combinations exit 2
 * with one line.
 */
int session__parse(struct session *s, const struct argp *argp, int argc,
		   char **argv, void *input);

/* Open the collector, add the pids, start the command stopped and the
 * sampler; -errno after saying why. */
int session__open(struct session *s);
/* Let the command run, then give up the capabilities the recording no
 * longer uses (privs__drop); -errno when it could not be executed. */
int session__release(struct session *s);
/* False once the command, or every -p process, has exited. */
bool session__alive(struct session *s);
/* "python3", "the given processes", "all Python processes" */
const char *session__what(const struct session *s);
/*
 * Close the pipes; if the command still runs, send it sig (0: none, let
 * it finish; a further stop signal is passed on) and wait for it, saying
 * so when say; free the collector.
 */
void session__close(struct session *s, int sig, bool say);
/* What the collector holds, one line on stderr: for -v, and the tests and
 * soaks that look for leaks. */
void session__print_held(const struct collector_stats *st);

#endif /* __PYSIGHT_SESSION_H */
