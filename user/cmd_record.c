// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight record: sample Python stacks host-wide, of some pids, or of a
 * command and its children, then write one profile.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "collapse.h"
#include "clock.h"
#include "collector.h"
#include "container.h"
#include "labels.h"
#include "privs.h"
#include "commands.h"
#include "usage.h"
#include "writer.h"

#define MAX_PIDS	256
#define MAX_OUTPUTS	4
#define DEFAULT_RATE	100
#define MAX_RATE	10000

struct record_opts {
	unsigned int rate;
	double duration;		/* seconds, 0 = until stopped */
	const char *outputs[MAX_OUTPUTS];	/* -o, repeatable */
	int noutputs;
	const char *format;
	pid_t pids[MAX_PIDS];
	int npids;
	char **command;
	bool threads;
	bool nolineno;
	bool full_filenames;
	int mode;			/* enum profile_mode */
	const char *cgroups[PYSIGHT_MAX_CGROUPS];	/* --cgroup, --container */
	bool is_container[PYSIGHT_MAX_CGROUPS];
	int ncgroups;
	int groups[GROUP__MAX];		/* --group-by */
	int ngroups;
	bool gil_only;
	bool kernel_stacks;
	bool verbose;
	struct collapse collapse;	/* --collapse */
};

struct record {
	struct record_opts o;
	struct collector *col;
	pid_t child;
	int child_status;
	bool child_exited;
	char default_output[64];
};

static volatile sig_atomic_t exiting;	/* the last stop signal, or 0 */

static void on_signal(int sig)
{
	exiting = sig;
}

enum {
	OPT_THREADS = 0x100,
	OPT_NOLINENO,
	OPT_FULL_FILENAMES,
	OPT_MODE,
	OPT_IDLE,
	OPT_GIL,
	OPT_KERNEL_STACKS,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_GROUP_BY,
};

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "Write the profile to FILE, in the format its extension names (default pysight-DATE.folded; repeatable)", 0 },
	{ "format", 'f', "FORMAT", 0, "Output format (default: from the -o extension, else folded)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until Ctrl-C or the command exits)", 0 },
	{ "rate", 'r', "HZ", 0, "Samples per second per CPU (default 100)", 0 },
	{ "pid", 'p', "PID", 0, "Sample only this process (repeatable)", 0 },
	{ "threads", OPT_THREADS, NULL, 0, "Add a root frame per thread: thread TID (NAME) (--group-by thread)", 0 },
	{ "group-by", OPT_GROUP_BY, "KEYS", 0, "Root frames that label stacks, in order: process, thread, cgroup, container (comma-separated)", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Only tasks in this cgroup v2 or below it; a full path or one relative to the v2 mount (repeatable)", 0 },
	{ "container", OPT_CONTAINER, "ID", 0, "Only this container: 12 or more hex digits of its id (repeatable; see pysight containers)", 0 },
	{ "nolineno", OPT_NOLINENO, NULL, 0, "Leave out line numbers", 0 },
	{ "full-filenames", OPT_FULL_FILENAMES, NULL, 0, "Show full file paths", 0 },
	{ "mode", OPT_MODE, "MODE", 0, "cpu (default): on-CPU samples; wall: on- and off-CPU time; off: off-CPU time alone", 0 },
	{ "idle", OPT_IDLE, NULL, 0, "py-spy's name for --mode wall", 0 },
	{ "gil", OPT_GIL, NULL, 0, "Only on-CPU samples of the thread holding the GIL", 0 },
	{ "kernel-stacks", OPT_KERNEL_STACKS, NULL, 0, "Add the kernel stack below off-CPU causes", 0 },
	{ "verbose", 'v', NULL, 0, "Explain what is going on, libbpf's log included", 0 },
	{},
};

static const char doc[] =
	"Sample the Python stacks of every Python process on the host (or of "
	"-p PIDs, or of COMMAND and its children) and write a profile.\v"
	"Examples:\n"
	"  sudo pysight record -d 30 -o prof.folded\n"
	"  sudo pysight record -p 1234 -r 1000\n"
	"  sudo pysight record -o app.folded -- python3 app.py";

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;
	char *end;
	double d;
	long l;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->collapse;
		break;
	case 'o':
		if (o->noutputs == MAX_OUTPUTS)
			bad_value("--output", arg, "at most 4 outputs");
		o->outputs[o->noutputs++] = arg;
		break;
	case 'f':
		if (!writer__find(arg)) {
			char names[128], want[160];

			snprintf(want, sizeof(want), "expected one of %s",
				 writer__names(names, sizeof(names)));
			bad_value("--format", arg, want);
		}
		o->format = arg;
		break;
	case 'd':
		errno = 0;
		d = strtod(arg, &end);
		if (errno || *end || !(d > 0) || d > 1e7)
			bad_value("--duration", arg,
				  "expected a positive number of seconds");
		o->duration = d;
		break;
	case 'r':
		errno = 0;
		l = strtol(arg, &end, 10);
		if (errno || *end || l < 1 || l > MAX_RATE)
			bad_value("--rate", arg,
				  "expected an integer from 1 to 10000");
		o->rate = (unsigned int)l;
		break;
	case 'p':
		errno = 0;
		l = strtol(arg, &end, 10);
		if (errno || *end || l < 1 || l > 0x3fffffff)
			bad_value("--pid", arg, "expected a process id");
		if (o->npids == MAX_PIDS)
			bad_value("--pid", arg, "too many pids");
		o->pids[o->npids++] = (pid_t)l;
		break;
	case OPT_THREADS:
		o->threads = true;
		break;
	case OPT_GROUP_BY:
		if (labels__parse_group(arg, o->groups, &o->ngroups))
			bad_value("--group-by", arg,
				  "expected process, thread, cgroup or container, comma-separated");
		break;
	case OPT_CGROUP:
	case OPT_CONTAINER:
		if (o->ncgroups == PYSIGHT_MAX_CGROUPS)
			bad_value(key == OPT_CGROUP ? "--cgroup" : "--container",
				  arg, "at most 16 cgroups and containers");
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
		if (!strcmp(arg, "cpu"))
			o->mode = MODE_CPU;
		else if (!strcmp(arg, "wall"))
			o->mode = MODE_WALL;
		else if (!strcmp(arg, "off"))
			o->mode = MODE_OFF;
		else
			bad_value("--mode", arg, "expected cpu, wall or off");
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
	case 'v':
		o->verbose = true;
		break;
	case ARGP_KEY_ARG:
		usage_error("unexpected argument '%s' (a command goes after --)",
			    arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * Fork the command stopped on a pipe, so it is a target before it runs.
 * A second, close-on-exec pipe carries execvp's errno back, or closes
 * silently when the exec worked.
 */
static int spawn(struct record *r, int *go_fd, int *err_fd)
{
	int go[2], ex[2], e;
	char c;

	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC))
		return -errno;
	r->child = fork();
	if (r->child < 0)
		return -errno;
	if (r->child == 0) {
		close(go[1]);
		close(ex[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(r->o.command[0], r->o.command);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	*go_fd = go[1];
	*err_fd = ex[0];
	return 0;
}

/* Let the command run; -errno when it could not be executed. */
static int release(struct record *r, int go_fd, int err_fd)
{
	int e = 0;

	if (write(go_fd, "g", 1) != 1)
		return -errno;
	if (read(err_fd, &e, sizeof(e)) == sizeof(e)) {
		fprintf(stderr, "pysight: cannot run %s: %s\n", r->o.command[0],
			strerror(e));
		return -e;
	}
	return 0;
}

static bool targets_alive(struct record *r)
{
	int i, status;

	if (r->child > 0 && !r->child_exited &&
	    waitpid(r->child, &status, WNOHANG) == r->child) {
		r->child_exited = true;
		r->child_status = status;
	}
	if (r->child > 0)
		return !r->child_exited;
	for (i = 0; i < r->o.npids; i++)
		if (!kill(r->o.pids[i], 0) || errno == EPERM)
			return true;
	return r->o.npids == 0;
}

static const char *const mode_note[] = {
	[MODE_CPU] = "",
	[MODE_WALL] = " (wall: time on and off the CPU)",
	[MODE_OFF] = " (off: time off the CPU)",
};

/* One process's time by kind, for the summary. */
struct proc_time {
	pid_t pid;
	const char *name;
	uint64_t total, by_kind[KIND__MAX];
};

static int by_total(const void *a, const void *b)
{
	const struct proc_time *x = a, *y = b;

	return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

#define SUMMARY_PROCS 10

/* "python3 1234: sleep 48%, lock 29%, cpu 21%, gil 2%", largest first. */
static void print_breakdown(struct profile *p)
{
	struct proc_time *pt = NULL;
	const struct pentry **e;
	size_t n, i, np = 0, j;
	int k, order[KIND__MAX];

	if (profile__entries(p, &e, &n))
		return;
	pt = calloc(n ? n : 1, sizeof(*pt));
	for (i = 0; pt && i < n; i++) {
		pid_t pid = e[i]->thread ? e[i]->thread->pid : 0;

		for (j = 0; j < np && pt[j].pid != pid; j++)
			;
		if (j == np) {
			pt[np].pid = pid;
			pt[np++].name = e[i]->thread ? e[i]->thread->process : NULL;
		}
		pt[j].total += e[i]->weight;
		pt[j].by_kind[e[i]->kind] += e[i]->weight;
	}
	free(e);
	if (!pt)
		return;
	qsort(pt, np, sizeof(*pt), by_total);
	for (i = 0; i < np && i < SUMMARY_PROCS; i++) {
		for (k = 0; k < KIND__MAX; k++)
			order[k] = k;
		for (k = 1; k < KIND__MAX; k++)	/* largest share first */
			for (j = k; j > 0 && pt[i].by_kind[order[j]] >
					     pt[i].by_kind[order[j - 1]]; j--) {
				int t = order[j];

				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		fprintf(stderr, "pysight:   %s %d: %.1f s:", pt[i].name ? pt[i].name : "?",
			pt[i].pid, pt[i].total / 1e9);
		for (k = 0; k < KIND__MAX && pt[i].by_kind[order[k]]; k++)
			fprintf(stderr, "%s %s %.0f%%", k ? "," : "",
				profile__kind_name(order[k]),
				100.0 * pt[i].by_kind[order[k]] / pt[i].total);
		fputc('\n', stderr);
	}
	if (np > SUMMARY_PROCS)
		fprintf(stderr, "pysight:   (and %zu more processes)\n",
			np - SUMMARY_PROCS);
	free(pt);
}

static void summary(struct record *r, double secs)
{
	struct profile *p = collector__profile(r->col);
	struct collector_stats st;
	uint64_t errs = 0, total;
	unsigned int nthreads;
	int i;

	collector__stats(r->col, &st);
	total = st.counters[CNT_SAMPLES];
	nthreads = profile__nthreads(p);
	fprintf(stderr, "pysight: %.1f s, %" PRIu64 " samples of Python processes "
		"(%u process%s, %u thread%s with Python stacks)\n",
		secs, total, st.npython, st.npython == 1 ? "" : "es", nthreads,
		nthreads == 1 ? "" : "s");
	for (i = ST_COMPLETE; i < ST__MAX; i++) {
		uint64_t n = st.counters[CNT_STATUS_BASE + i];

		if (!n)
			continue;
		fprintf(stderr, "pysight:   %-30s %10" PRIu64 " (%.1f%%)\n",
			collector__status_name(i), n,
			total ? 100.0 * n / total : 0.0);
		if (i >= ST_ERR_READ_RUNTIME)
			errs += n;
	}
	fprintf(stderr, "pysight:   errors %.2f%%, lost %" PRIu64
		" (ring buffer full), %" PRIu64 " unknown frames\n",
		total ? 100.0 * errs / total : 0.0,
		st.counters[CNT_RB_DROPS] + st.unknown_stacks, st.unknown_frames);
	if (r->o.verbose)
		fprintf(stderr, "pysight:   tstate cache hits %" PRIu64 ", walks %" PRIu64
			", code cache hits %" PRIu64 ", code objects freed %" PRIu64
			", stale symbols %" PRIu64 "\n",
			st.counters[CNT_TSTATE_CACHE_HIT], st.counters[CNT_TSTATE_WALK],
			st.counters[CNT_CODE_CACHE_HIT], st.counters[CNT_CODE_FREED],
			st.stale_symbols);
	if (r->o.verbose)
		fprintf(stderr, "pysight:   held: rss %lu KiB, registry %u, "
			"processes %u, symbols %u, stacks %u; BPF maps: procs %u, "
			"binaries %u, not_python %u, targets %u, tstates %u, "
			"stacks_seen %u, uprobes %u, thread states %lld\n",
			st.rss_kib, st.registry, st.procs, st.symbols, st.stacks,
			st.maps.procs, st.maps.binaries, st.maps.not_python,
			st.maps.targets, st.maps.tstates, st.maps.stacks_seen,
			st.maps.probes,
			(long long)st.counters[CNT_THREAD_STATES]);
	if (r->o.mode != MODE_CPU) {
		fprintf(stderr, "pysight:   %" PRIu64 " off-CPU intervals, %" PRIu64
			" with a stack taken; time in the profile by process "
			"(the folded file counts microseconds):\n",
			st.counters[CNT_OFF_INTERVALS], st.counters[CNT_OFF_WALKED]);
		print_breakdown(p);
	}
	if (st.first_error)
		fprintf(stderr, "pysight: some processes were skipped: %s\n",
			st.first_error);
}

static int add_pids(struct record *r)
{
	char err[300];
	int i, ret;

	for (i = 0; i < r->o.npids; i++) {
		ret = collector__add_pid(r->col, r->o.pids[i], err, sizeof(err));
		if (ret) {
			fprintf(stderr, "pysight: %s\n", err);
			return ret;
		}
	}
	return 0;
}

static void run_loop(struct record *r)
{
	double start = clock__now_s(), last_check = 0;

	while (!exiting) {
		double t;

		if (collector__poll(r->col, 50) < 0)
			break;
		t = clock__now_s();
		if (r->o.duration && t - start >= r->o.duration)
			break;
		if (t - last_check >= 0.05) {
			last_check = t;
			if (!targets_alive(r))
				break;
		}
	}
	collector__poll(r->col, 0);	/* what is still in the ring */
}

/* --cgroup and --container as BPF's filter; -errno after saying why. */
static int resolve_cgroups(struct record *r, struct cgroup_filter *out)
{
	struct cgroup_ref cg;
	char err[512];
	int i, ret;

	for (i = 0; i < r->o.ncgroups; i++) {
		ret = r->o.is_container[i] ?
			container__find(r->o.cgroups[i], &cg, err, sizeof(err)) :
			cgroup__resolve(r->o.cgroups[i], &cg, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "pysight: %s\n", err);
			return ret;
		}
		if (r->o.verbose)
			fprintf(stderr, "pysight: keeping cgroup %s (id %llu)\n",
				cg.path, (unsigned long long)cg.id);
		out[i].id = cg.id;
		out[i].level = cg.level;
	}
	return 0;
}

static int setup(struct record *r, int *go_fd, int *err_fd)
{
	struct collector_opts co = {
		.rate_hz = r->o.rate,
		.filter_pids = r->o.npids || r->o.command,
		.nolineno = r->o.nolineno,
		.full_filenames = r->o.full_filenames,
		.mode = r->o.mode,
		.gil_only = r->o.gil_only,
		.kernel_stacks = r->o.kernel_stacks,
		.verbose = r->o.verbose,
	};
	struct cgroup_filter cgroups[PYSIGHT_MAX_CGROUPS];
	char err[300];
	int ret;

	ret = resolve_cgroups(r, cgroups);
	if (ret)
		return ret;
	co.cgroups = cgroups;
	co.ncgroups = r->o.ncgroups;
	ret = collector__open(&co, &r->col, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "pysight: %s\n", err);
		return ret;
	}
	ret = add_pids(r);
	if (ret)
		return ret;
	if (r->o.command) {
		ret = spawn(r, go_fd, err_fd);
		if (ret) {
			fprintf(stderr, "pysight: failed to start %s: %s\n",
				r->o.command[0], strerror(-ret));
			return ret;
		}
		collector__add_target(r->col, r->child);
	}
	ret = collector__start(r->col, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "pysight: %s\n", err);
		return ret;
	}
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);	/* a closed terminal: write, as for ^C */
}

/*
 * Recording stopped (duration, signal) while the command runs on.  The
 * profile is already written; pass a stop signal on to the command (a
 * terminal's Ctrl-C reached it already, so SIGINT only if it lingers)
 * and wait for it, so it never outlives us unseen.
 */
static void wait_command(struct record *r, int err)
{
	double start = clock__now_s(), forwarded = 0;
	int sig = err ? SIGTERM : exiting;

	if (!err)
		fprintf(stderr, "pysight: waiting for %s (pid %d) to exit\n",
			r->o.command[0], r->child);
	exiting = 0;
	for (;;) {
		if (waitpid(r->child, &r->child_status, WNOHANG) == r->child)
			return;
		if (exiting)
			sig = exiting;
		exiting = 0;
		if (sig && (sig != SIGINT || clock__now_s() - start > 1.0) &&
		    clock__now_s() - forwarded > 1.0) {
			kill(r->child, sig);
			forwarded = clock__now_s();
			sig = 0;
		}
		usleep(20000);
	}
}

/* What was recorded, for titles: the command line or the pids. */
static void describe(struct record *r, struct profile_meta *m)
{
	struct timespec ts;
	size_t o = 0;
	int i;

	m->target[0] = 0;
	for (i = 0; r->o.command && r->o.command[i] && o < sizeof(m->target); i++)
		o += snprintf(m->target + o, sizeof(m->target) - o, "%s%s",
			      i ? " " : "", r->o.command[i]);
	for (i = 0; i < r->o.npids && o < sizeof(m->target); i++)
		o += snprintf(m->target + o, sizeof(m->target) - o, "%s%d",
			      i ? "," : "pid ", r->o.pids[i]);
	clock_gettime(CLOCK_REALTIME, &ts);
	m->start_unix_ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The format of output i: -f's, else the one its extension names, else
 * an error listing the choices. */
static const struct writer *writer_of(struct record *r, int i)
{
	const char *path = r->o.outputs[i];
	const struct writer *w;
	char names[128];

	if (r->o.format)
		return writer__find(r->o.format);
	w = writer__for_path(path);
	if (w)
		return w;
	fprintf(stderr, "pysight: cannot tell the format of %s from its extension; "
		"give -f (%s) or name it .folded, .txt, .json, .pb.gz, .pprof or .svg\n",
		path, writer__names(names, sizeof(names)));
	exit(2);
}

static void pick_writers(struct record *r, const struct writer **w)
{
	time_t t = time(NULL);
	struct tm tm;
	int i;

	if (!r->o.noutputs) {
		localtime_r(&t, &tm);
		strftime(r->default_output, sizeof(r->default_output),
			 "pysight-%Y%m%d-%H%M%S.folded", &tm);
		r->o.outputs[r->o.noutputs++] = r->default_output;
	}
	if (r->o.format && r->o.noutputs > 1)
		usage_error("-f names the format of one -o; with several, each one's extension does");
	for (i = 0; i < r->o.noutputs; i++)
		w[i] = writer_of(r, i);
}

/* Every output, whatever became of the others; the first error. */
static int write_outputs(struct record *r, const struct writer **w,
			 const struct write_opts *wo)
{
	struct profile *p = collector__profile(r->col), *shown;
	int i, err, first = 0;

	err = collapse__apply(&r->o.collapse, p, &shown);
	if (err) {
		fprintf(stderr, "pysight: failed to collapse frames: %s\n",
			strerror(-err));
		return err;
	}
	p = shown;
	for (i = 0; i < r->o.noutputs; i++) {
		err = writer__write_file(w[i], p, wo, r->o.outputs[i]);
		if (err)
			fprintf(stderr, "pysight: failed to write %s: %s\n",
				r->o.outputs[i], strerror(-err));
		else
			fprintf(stderr, "pysight: wrote %u stacks to %s (%s)\n",
				profile__nstacks(p), r->o.outputs[i], w[i]->name);
		first = first ?: err;
	}
	if (shown != collector__profile(r->col))
		profile__free(shown);
	return first;
}

int cmd_record(int argc, char **argv)
{
	const struct argp_child children[] = { { &collapse__argp, 0, NULL, 0 },
					       {} };
	const struct argp argp = { options, parse_opt, "[-- COMMAND [ARG...]]", doc,
				   children, NULL, NULL };
	struct record r = { .o = { .rate = DEFAULT_RATE } };
	struct write_opts wo = {};
	const struct writer *w[MAX_OUTPUTS];
	int go_fd = -1, err_fd = -1, err;
	double start;

	int i;

	/* everything after "--" is the command, untouched by argp */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			if (i + 1 < argc)
				r.o.command = argv + i + 1;
			argv[i] = NULL;
			argc = i;
			break;
		}
	}
	argp_program_version = "pysight " PYSIGHT_VERSION;
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &r.o))
		return 2;
	if (r.o.command && r.o.npids)
		usage_error("give -p or a command, not both");
	pick_writers(&r, w);
	memcpy(wo.groups, r.o.groups, sizeof(wo.groups));
	wo.ngroups = r.o.ngroups;
	if (r.o.threads && labels__parse_group("thread", wo.groups, &wo.ngroups))
		usage_error("--threads: too many --group-by keys");
	if (privs__check())
		return 1;
	install_signals();
	signal(SIGPIPE, SIG_IGN);

	err = setup(&r, &go_fd, &err_fd);
	if (err)
		goto cleanup;
	if (go_fd >= 0) {
		err = release(&r, go_fd, err_fd);
		close(go_fd);
		go_fd = -1;
		if (err)
			goto cleanup;
	}
	fprintf(stderr, "pysight: sampling %s at %u Hz%s, Ctrl-C to stop\n",
		r.o.command ? r.o.command[0] :
		r.o.npids ? "the given processes" : "all Python processes",
		r.o.rate, mode_note[r.o.mode]);
	start = clock__now_s();
	describe(&r, profile__meta(collector__profile(r.col)));
	run_loop(&r);
	err = collector__finish(r.col);
	if (err)
		fprintf(stderr, "pysight: failed to close off-CPU intervals: %s\n",
			strerror(-err));
	profile__meta(collector__profile(r.col))->duration_s =
		clock__now_s() - start;
	summary(&r, clock__now_s() - start);
	err = write_outputs(&r, w, &wo);

cleanup:
	if (go_fd >= 0)
		close(go_fd);	/* the child sees EOF and exits */
	if (err_fd >= 0)
		close(err_fd);
	if (r.child > 0 && !r.child_exited)
		wait_command(&r, err);
	collector__free(r.col);
	collapse__free(&r.o.collapse);
	return err != 0;
}
