// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What to sample, and the collector on it: shared by record, top and the
 * agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "container.h"
#include "log.h"
#include "privs.h"
#include "session.h"
#include "usage.h"

enum {
	OPT_NOLINENO = 0x200,
	OPT_FULL_FILENAMES,
	OPT_MODE,
	OPT_IDLE,
	OPT_GIL,
	OPT_KERNEL_STACKS,
	OPT_OFFCPU,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_ASYNCIO,
	OPT_NATIVE,
	OPT_NATIVE_ALL,
};

static const struct argp_option session_options[] = {
	{ "duration", 'd', "TIME", 0, "Stop after TIME: seconds, or 90s, 5m, 1h (default: until Ctrl-C or the command exits)", 0 },
	{ "rate", 'r', "HZ", 0, "Samples per second per CPU (default 100; the agent: 19)", 0 },
	{ "pid", 'p', "PID", 0, "Sample only this process (repeatable)", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Only tasks in this cgroup v2 or below it; a full path or one relative to the v2 mount (repeatable)", 0 },
	{ "container", OPT_CONTAINER, "ID", 0, "Only this container: 12 or more hex digits of its id, or its name (repeatable; see pysight containers)", 0 },
	{ "nolineno", OPT_NOLINENO, NULL, 0, "Leave out line numbers", 0 },
	{ "full-filenames", OPT_FULL_FILENAMES, NULL, 0, "Show full file paths", 0 },
	{ "mode", OPT_MODE, "MODE", 0, "cpu (default): on-CPU samples; wall: on- and off-CPU time; off: off-CPU time alone", 0 },
	{ "idle", OPT_IDLE, NULL, 0, "py-spy's name for --mode wall", 0 },
	{ "gil", OPT_GIL, NULL, 0, "Only on-CPU samples of the thread holding the GIL", 0 },
	{ "kernel-stacks", OPT_KERNEL_STACKS, NULL, 0, "Add the kernel stack below off-CPU causes", 0 },
	{ "offcpu", OPT_OFFCPU, "HOW", 0, "How wall and off modes see off-CPU time: sweep (default: every moved thread's state at each tick, nothing on switches, under 1% of a CPU) or trace (every context switch of the host, a Python thread's stack as it leaves the CPU: exact, but 3 to 4% of a pipe ping-pong's round trip, 3 to 4 times the 1% target)", 0 },
	{ "asyncio", OPT_ASYNCIO, NULL, 0, "asyncio programs (Python 3.11+): each sample as its running task's stack (the tasks that await it, root first, each as [task NAME] and its coroutines) in place of the event loop's frames; in wall and off modes, each waiting task's time too, at its await point ([await: sleep|io|lock|task|executor|other|loop busy]), as time of its own", 0 },
	{ "native", OPT_NATIVE, NULL, 0, "Native frames too: where Python called C, C++, Cython or Rust code, that code's functions as 'function [library]', unwound from each binary's .eh_frame (no frame pointers needed), on the CPU and, in wall and off modes, off it (not with --offcpu=trace); the interpreter's own frames are left out", 0 },
	{ "native-all", OPT_NATIVE_ALL, NULL, 0, "--native, keeping the interpreter's own frames (_PyEval_EvalFrameDefault and its helpers)", 0 },
	{ "verbose", 'v', NULL, 0, "Explain what is going on, libbpf's log included", 0 },
	{},
};

static void parse_mode(struct session_opts *o, const char *arg)
{
	if (!strcmp(arg, "cpu"))
		o->mode = MODE_CPU;
	else if (!strcmp(arg, "wall"))
		o->mode = MODE_WALL;
	else if (!strcmp(arg, "off"))
		o->mode = MODE_OFF;
	else
		bad_value("--mode", arg, "expected cpu, wall or off");
}

static error_t session_parse(int key, char *arg, struct argp_state *state)
{
	struct session_opts *o = state->input;

	switch (key) {
	case 'd':
		o->duration = parse_duration("--duration", arg, 0, false, 1e7);
		break;
	case 'r':
		o->rate = parse_long("--rate", arg, 1, SESSION_MAX_RATE,
				     "expected an integer from 1 to 10000");
		break;
	case 'p':
		if (o->npids == SESSION_MAX_PIDS)
			bad_value("--pid", arg, "too many pids");
		o->pids[o->npids++] = parse_pid("--pid", arg);
		break;
	case OPT_CGROUP:
	case OPT_CONTAINER:
		if (o->ncgroups == PYSIGHT_MAX_CGROUPS)
			bad_value(key == OPT_CGROUP ? "--cgroup" : "--container",
				  arg, "at most 16 cgroups and containers");
		if (key == OPT_CONTAINER && !container__valid_arg(arg))
			bad_value("--container", arg, CONTAINER_ARG_WANT);
		o->is_container[o->ncgroups] = key == OPT_CONTAINER;
		o->cgroups[o->ncgroups++] = arg;
		break;
	case OPT_NOLINENO:
		o->nolineno = true;
		break;
	case OPT_FULL_FILENAMES:
		o->full_filenames = true;
		break;
	case OPT_MODE:
		parse_mode(o, arg);
		break;
	case OPT_IDLE:
		o->mode = MODE_WALL;
		break;
	case OPT_GIL:
		o->gil_only = true;
		break;
	case OPT_KERNEL_STACKS:
		o->kernel_stacks = true;
		break;
	case OPT_OFFCPU:
		if (!strcmp(arg, "sweep"))
			o->sweep = true;
		else if (!strcmp(arg, "trace"))
			o->sweep = false;
		else
			bad_value("--offcpu", arg, "expected trace or sweep");
		break;
	case OPT_ASYNCIO:
		o->asyncio = true;
		break;
	case OPT_NATIVE_ALL:
		o->native_all = true;
		/* fall through */
	case OPT_NATIVE:
		o->native = true;
		break;
	case 'v':
		log_verbose++;
		break;
	case ARGP_KEY_ARG:	/* after the command's own parser passed it on */
		usage_error("unexpected argument '%s' (a command goes after --)",
			    arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp session__argp = { session_options, session_parse, NULL,
				    NULL, NULL, NULL, NULL };

void session__catch(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa = { .sa_handler = fn, .sa_flags = flags };

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

void session__catch_stops(void (*fn)(int), int flags)
{
	session__catch(SIGINT, fn, flags);
	session__catch(SIGTERM, fn, flags);
	/* a closed terminal stops a command as ^C does: its file whole */
	session__catch(SIGHUP, fn, flags);
	session__catch(SIGPIPE, SIG_IGN, 0);
}

void session__init(struct session *s, volatile sig_atomic_t *stop)
{
	memset(s, 0, sizeof(*s));
	s->o.rate = SESSION_DEFAULT_RATE;
	s->o.sweep = true;	/* --offcpu=trace chooses the tracer (issue #27) */
	s->go_fd = s->err_fd = -1;
	s->stop = stop;
}

/* Cut argv at "--": what follows is the command, untouched by argp. */
static void split_command(struct session *s, int *argc, char **argv)
{
	int i;

	for (i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--")) {
			if (i + 1 < *argc)
				s->o.command = argv + i + 1;
			argv[i] = NULL;
			*argc = i;
			return;
		}
	}
}

int session__parse(struct session *s, const struct argp *argp, int argc,
		   char **argv, void *input)
{
	split_command(s, &argc, argv);
	argp_program_version = "pysight " PYSIGHT_VERSION;
	argp_err_exit_status = 2;
	if (argp_parse(argp, argc, argv, 0, NULL, input))
		return 2;
	if (s->o.command && s->o.npids)
		usage_error("give -p or a command, not both");
	if (s->o.native && s->o.asyncio)
		usage_error("--native and --asyncio do not go together yet");
	return 0;
}

/*
 * Fork the command stopped on a pipe, so it is a target before it runs.
 * A second, close-on-exec pipe carries execvp's errno back, or closes
 * silently when the exec worked.
 */
static int spawn(struct session *s)
{
	int go[2], ex[2], e;
	char c;

	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC))
		return -errno;
	s->child = fork();
	if (s->child < 0)
		return -errno;
	if (s->child == 0) {
		close(go[1]);
		close(ex[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(s->o.command[0], s->o.command);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	s->go_fd = go[1];
	s->err_fd = ex[0];
	return 0;
}

/* Where execvp() finds name: 0 and the path in out, or -ENOENT. */
static int find_in_path(const char *name, char *out, size_t len)
{
	const char *dirs = getenv("PATH"), *end;
	struct stat st;
	size_t n;

	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	for (dirs = dirs ? dirs : "/bin:/usr/bin"; *dirs; dirs = end + !!*end) {
		end = strchrnul(dirs, ':');
		n = end - dirs;
		if ((size_t)snprintf(out, len, "%.*s/%s", (int)n,
				     n ? dirs : ".", name) >= len)
			continue;
		if (!stat(out, &st) && S_ISREG(st.st_mode) &&
		    !access(out, X_OK))
			return 0;
	}
	return -ENOENT;
}

/*
 * The executable a command runs: the file itself, or the interpreter its
 * "#!" line names, through env(1) too.  0 and the path in out.
 */
static int command_exe(const char *cmd, char *out, size_t len)
{
	char line[256], *p, *arg, *save;
	ssize_t n;
	int fd;

	if (find_in_path(cmd, out, len))
		return -ENOENT;
	fd = open(out, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 2 || line[0] != '#' || line[1] != '!')
		return 0;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	p = strtok_r(line + 2, " \t", &save);
	if (!p)
		return -ENOENT;
	if (strcmp(strrchr(p, '/') ? strrchr(p, '/') + 1 : p, "env"))
		return snprintf(out, len, "%s", p) < (int)len ? 0 : -ENAMETOOLONG;
	/* env NAME, or env -S "NAME ARGS" (the kernel passes one argument) */
	arg = strtok_r(NULL, " \t", &save);
	if (arg && !strcmp(arg, "-S"))
		arg = strtok_r(NULL, " \t", &save);
	if (!arg || *arg == '-' || strchr(arg, '='))
		return -ENOENT;
	return find_in_path(arg, out, len);
}

/*
 * A Python the command runs is made known to BPF before it runs, so the
 * first milliseconds after its exec are sampled: found after the exec,
 * it lost them (15-25 ms on this machine, more on a busy one; off-CPU
 * time in them too, so --mode wall came out short by that).
 */
static void expect_command(struct session *s)
{
	char exe[PATH_MAX];

	if (!command_exe(s->o.command[0], exe, sizeof(exe)))
		collector__expect_exe(s->col, exe, s->child);
}

/* Setup is over: what the recording does not use is given up. */
static void drop_privileges(void)
{
	int err = privs__drop(PRIVS_RECORD);

	if (err)	/* not fatal: it records as it would have */
		pr_warn("could not drop capabilities: %s",
			strerror(-err));
}

int session__release(struct session *s)
{
	int e = 0;

	if (s->go_fd < 0) {
		drop_privileges();
		return 0;
	}
	if (write(s->go_fd, "g", 1) != 1)
		e = errno;
	close(s->go_fd);
	s->go_fd = -1;
	if (e)
		return -e;
	if (read(s->err_fd, &e, sizeof(e)) == sizeof(e)) {
		pr_err("cannot run %s: %s", s->o.command[0],
		       strerror(e));
		return -e;
	}
	drop_privileges();
	return 0;
}

bool session__alive(struct session *s)
{
	int i, status;

	if (s->child > 0 && !s->child_exited &&
	    waitpid(s->child, &status, WNOHANG) == s->child) {
		s->child_exited = true;
		s->child_status = status;
	}
	if (s->child > 0)
		return !s->child_exited;
	for (i = 0; i < s->o.npids; i++)
		if (!kill(s->o.pids[i], 0) || errno == EPERM)
			return true;
	return s->o.npids == 0;
}

const char *session__what(const struct session *s)
{
	return s->o.command ? s->o.command[0] :
	       s->o.npids ? "the given processes" : "all Python processes";
}

static int add_pids(struct session *s)
{
	char err[300];
	int i, ret;

	for (i = 0; i < s->o.npids; i++) {
		ret = collector__add_pid(s->col, s->o.pids[i], err, sizeof(err));
		if (ret) {
			pr_err("%s", err);
			return ret;
		}
	}
	return 0;
}

/* --cgroup and --container as BPF's filter; -errno after saying why. */
static int resolve_cgroups(struct session *s, struct cgroup_filter *out)
{
	struct cgroup_ref cg;
	char err[512];
	int i, ret;

	for (i = 0; i < s->o.ncgroups; i++) {
		ret = s->o.is_container[i] ?
			container__find(s->o.cgroups[i], &cg, err, sizeof(err)) :
			cgroup__resolve(s->o.cgroups[i], &cg, err, sizeof(err));
		if (ret) {
			pr_err("%s", err);
			return ret;
		}
		pr_debug("keeping cgroup %s (id %llu)", cg.path,
			 (unsigned long long)cg.id);
		out[i].id = cg.id;
		out[i].level = cg.level;
	}
	return 0;
}

int session__open(struct session *s)
{
	struct collector_opts co = {
		.rate_hz = s->o.rate,
		.filter_pids = s->o.npids || s->o.command,
		.nolineno = s->o.nolineno,
		.full_filenames = s->o.full_filenames,
		.mode = s->o.mode,
		.gil_only = s->o.gil_only,
		.kernel_stacks = s->o.kernel_stacks,
		.sweep = s->o.sweep,
		.sweep_reread_ns = s->o.sweep_reread_ns,
		.sweep_duty = s->o.sweep_duty,
		.asyncio = s->o.asyncio,
		.native = s->o.native,
		.native_all = s->o.native_all,
	};
	struct cgroup_filter cgroups[PYSIGHT_MAX_CGROUPS];
	char err[300];
	int ret;

	ret = resolve_cgroups(s, cgroups);
	if (ret)
		return ret;
	co.cgroups = cgroups;
	co.ncgroups = s->o.ncgroups;
	ret = collector__open(&co, &s->col, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	ret = add_pids(s);
	if (ret)
		return ret;
	if (s->o.command) {
		ret = spawn(s);
		if (ret) {
			pr_err("failed to start %s: %s",
			       s->o.command[0], strerror(-ret));
			return ret;
		}
		collector__add_target(s->col, s->child);
		expect_command(s);
	}
	ret = collector__start(s->col, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return ret;
	}
	return 0;
}

/*
 * Sampling stopped (duration, signal, a key) while the command runs on.
 * Pass sig on to the command (a terminal's Ctrl-C reached it already, so
 * SIGINT only if it lingers), and any stop signal that comes meanwhile,
 * and wait for it, so it never outlives us unseen.
 */
static void wait_command(struct session *s, int sig, bool say)
{
	double start = clock__now_s(), forwarded = 0;

	if (say)
		pr_info("waiting for %s (pid %d) to exit",
			s->o.command[0], s->child);
	*s->stop = 0;
	for (;;) {
		if (waitpid(s->child, &s->child_status, WNOHANG) == s->child)
			return;
		if (*s->stop)
			sig = *s->stop;
		*s->stop = 0;
		if (sig && (sig != SIGINT || clock__now_s() - start > 1.0) &&
		    clock__now_s() - forwarded > 1.0) {
			kill(s->child, sig);
			forwarded = clock__now_s();
			sig = 0;
		}
		usleep(20000);
	}
}

void session__close(struct session *s, int sig, bool say)
{
	if (s->go_fd >= 0)
		close(s->go_fd);	/* the child sees EOF and exits */
	if (s->err_fd >= 0)
		close(s->err_fd);
	s->go_fd = s->err_fd = -1;
	if (s->child > 0 && !s->child_exited)
		wait_command(s, sig, say);
	collector__free(s->col);
	s->col = NULL;
}

void session__print_held(const struct collector_stats *st)
{
	pr_info("  held: rss %lu KiB, registry %u, "
		"processes %u, symbols %u, stacks %u; BPF maps: procs %u, "
		"binaries %u, not_python %u, targets %u, tstates %u, "
		"stacks_seen %u, uprobes %u, thread states %lld; "
		"stacks_seen of processes held %u",
		st->rss_kib, st->registry, st->procs, st->symbols, st->stacks,
		st->maps.procs, st->maps.binaries, st->maps.not_python,
		st->maps.targets, st->maps.tstates, st->maps.stacks_seen,
		st->maps.probes, (long long)st->counters[CNT_THREAD_STATES],
		st->stacks_seen_held);
}
