// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight record: sample Python stacks host-wide, of some pids, or of a
 * command and its children, then write one profile.
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collapse.h"
#include "clock.h"
#include "collector.h"
#include "log.h"
#include "privs.h"
#include "session.h"
#include "labels.h"
#include "commands.h"
#include "usage.h"
#include "utf8.h"
#include "writer.h"

#define MAX_OUTPUTS	4

struct record_opts {
	const char *outputs[MAX_OUTPUTS];	/* -o, repeatable */
	int noutputs;
	const char *format;
	bool threads;
	int groups[GROUP__MAX];		/* --group-by */
	int ngroups;
	struct collapse collapse;	/* --collapse */
};

struct record {
	struct record_opts o;
	struct session s;		/* what is sampled, and the collector */
	char default_output[64];
};

static volatile sig_atomic_t exiting;	/* the last stop signal, or 0 */

static void on_signal(int sig)
{
	exiting = sig;
}

enum {
	OPT_THREADS = 0x100,
	OPT_GROUP_BY,
};

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "Write the profile to FILE, in the format its extension names (default pysight-DATE.folded; repeatable)", 0 },
	{ "format", 'f', "FORMAT", 0, "folded, speedscope, pprof or svg (default: from the -o extension, else folded)", 0 },
	{ "threads", OPT_THREADS, NULL, 0, "Add a root frame per thread: thread TID (NAME) (--group-by thread)", 0 },
	{ "group-by", OPT_GROUP_BY, "KEYS", 0, "Root frames that label stacks, in order: process, thread, cgroup, container (comma-separated)", 0 },
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
	struct record *r = state->input;
	struct record_opts *o = &r->o;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &r->s.o;
		state->child_inputs[1] = &o->collapse;
		break;
	case 'o':
		if (o->noutputs == MAX_OUTPUTS)
			bad_value("--output", arg, "at most 4 outputs");
		o->outputs[o->noutputs++] = writer__output_arg("--output", arg);
		break;
	case 'f':
		writer__check_format(arg);
		o->format = arg;
		break;
	case OPT_THREADS:
		o->threads = true;
		break;
	case OPT_GROUP_BY:
		if (labels__parse_group(arg, o->groups, &o->ngroups))
			bad_value("--group-by", arg,
				  "expected process, thread, cgroup or container, comma-separated");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
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
	int k, len, order[KIND__MAX];
	char name[128], line[512];

	if (profile__entries(p, &e, &n))
		return;
	pt = calloc(n ? n : 1, sizeof(*pt));
	for (i = 0; pt && i < n; i++) {
		pid_t pid = e[i]->thread ? e[i]->thread->pid : 0;

		if (profile__kind_is_task(e[i]->kind))
			continue;	/* tasks' own time: no share of this */
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
		utf8__escape(name, sizeof(name), pt[i].name ? pt[i].name : "?");
		len = snprintf(line, sizeof(line), "%s %d: %.1f s:", name,
			       pt[i].pid, pt[i].total / 1e9);
		for (k = 0; k < KIND__MAX && pt[i].by_kind[order[k]] &&
			    len < (int)sizeof(line); k++)
			len += snprintf(line + len, sizeof(line) - len,
					"%s %s %.0f%%", k ? "," : "",
					profile__kind_name(order[k]),
					100.0 * pt[i].by_kind[order[k]] /
						pt[i].total);
		pr_info("  %s", line);
	}
	if (np > SUMMARY_PROCS)
		pr_info("  (and %zu more processes)",
			np - SUMMARY_PROCS);
	free(pt);
}

/* -v, every minute of a long recording: the sizes, and the error rate so
 * far, so that growth shows while it happens. */
static void print_progress(struct record *r, double secs)
{
	struct collector_stats st;

	collector__stats(r->s.col, &st);
	pr_info("at %.0f s: %" PRIu64 " samples, errors %.2f%%, "
		"lost %" PRIu64, secs, st.counters[CNT_SAMPLES],
		st.counters[CNT_SAMPLES] ?
			100.0 * st.errors / st.counters[CNT_SAMPLES] : 0.0,
		st.lost);
	session__print_held(&st);
}

/*
 * The profile's length, and its rate as sampled: when the sampler was
 * slowed, a cpu profile's samples are fewer, and a period of 1 / -r would
 * make its CPU time low by as much (time profiles weigh time, not count).
 */
static void as_sampled(struct record *r, struct profile_meta *m, double secs)
{
	m->duration_s = secs;
	if (r->s.o.mode == MODE_CPU)
		m->rate_hz = r->s.o.rate * collector__sampled_share(
			collector__unsampled_s(r->s.col), secs);
}

/* --native: how the native walks ended, and what their tables hold. */
static void print_native(const struct collector_stats *st)
{
	static const char *const why[NATIVE__MAX] = {
		[NATIVE_NONE] = "before the process's mappings were read",
		[NATIVE_NO_MAPPING] = "in code of no file (JIT, or loaded since)",
		[NATIVE_NO_ROW] = "where .eh_frame gives no rule",
		[NATIVE_READ] = "at a stack address that did not read",
		[NATIVE_DEEP] = "deeper than the frames kept",
	};
	uint64_t all = 0;
	int i;

	for (i = 0; i < NATIVE__MAX; i++)
		all += st->native_stops[i];
	pr_info("  native: %" PRIu64 " stacks walked, %.1f%% to their thread's "
		"first frame; %" PRIu64 " readings of processes' mappings, "
		"%" PRIu64 " binaries read; %zu binaries held (%u no process "
		"maps now), %.1f MiB of unwind rows and names%s", all,
		all ? 100.0 * st->native_stops[NATIVE_END] / all : 0.0,
		st->native_reads, st->native_loaded, st->native_binaries,
		st->native_unmapped,
		st->native_bytes / 1048576.0,
		st->native_unplaced ? " (some found no room: their frames end there)" : "");
	for (i = 0; i < NATIVE__MAX; i++)
		if (why[i] && st->native_stops[i])
			pr_info("    %" PRIu64 " ended %s", st->native_stops[i],
				why[i]);
}

static void summary(struct record *r, double secs)
{
	struct profile *p = collector__profile(r->s.col);
	struct collector_stats st;
	uint64_t total;
	unsigned int nthreads;
	int i;

	collector__stats(r->s.col, &st);
	total = st.counters[CNT_SAMPLES];
	nthreads = profile__nthreads(p);
	pr_info("%.1f s, %" PRIu64 " samples of Python processes "
		"(%u process%s, %u thread%s with Python stacks)",
		secs, total, st.npython, st.npython == 1 ? "" : "es", nthreads,
		nthreads == 1 ? "" : "s");
	for (i = ST_COMPLETE; i < ST__MAX; i++) {
		uint64_t n = st.counters[CNT_STATUS_BASE + i];

		if (!n)
			continue;
		pr_info("  %-30s %10" PRIu64 " (%.1f%%)",
			collector__status_name(i), n,
			total ? 100.0 * n / total : 0.0);
	}
	pr_info("  errors %.2f%%, lost %" PRIu64
		" (ring buffer full), %" PRIu64 " unknown frames",
		total ? 100.0 * st.errors / total : 0.0, st.lost,
		st.unknown_frames);
	if (r->s.o.native)
		print_native(&st);
	if (st.least_keep < 1.0)
		pr_info("  the ring buffer could not keep up: sampled "
			"at as little as %.0f%% of the rate, for %.1f s (shares stay "
			"fair; counts are lower, and the profile states the %.4g Hz "
			"sampled on average)", 100 * st.least_keep, st.slow_s,
			profile__meta(p)->rate_hz);
	pr_debug("  tstate cache hits %" PRIu64 ", walks %" PRIu64
		 ", code cache hits %" PRIu64 ", code objects freed %" PRIu64
		 " (%" PRIu64 " sent, %" PRIu64 " named from it), stale "
		 "symbols %" PRIu64 ", thread-name reads %" PRIu64,
		 st.counters[CNT_TSTATE_CACHE_HIT], st.counters[CNT_TSTATE_WALK],
		 st.counters[CNT_CODE_CACHE_HIT], st.counters[CNT_CODE_FREED],
		 st.counters[CNT_CODE_SENT], st.codes_named,
		 st.stale_symbols, st.name_reads);
	if (log__on(LOG_DEBUG))
		session__print_held(&st);
	if (r->s.o.asyncio && st.task_cut)
		pr_info("  asyncio: %" PRIu64 " stacks (samples and the "
			"sweep's reads) shown as their running task's, %" PRIu64
			" of them with the tasks awaiting it cut short "
			"([partial tasks])", st.task_samples, st.task_cut);
	else if (r->s.o.asyncio)
		pr_info("  asyncio: %" PRIu64 " stacks (samples and the "
			"sweep's reads) shown as their running task's",
			st.task_samples);
	if (r->s.o.asyncio && st.task_ticks)
		pr_info("  asyncio tasks: %" PRIu64 " reads of every process's "
			"tasks, %.1f us each, %" PRIu64 " tasks read, %" PRIu64
			" task samples (their own time, apart from the "
			"threads')", st.task_ticks,
			st.task_ns / 1e3 / st.task_ticks, st.task_reads,
			st.task_adds);
	if (r->s.o.asyncio && st.task_sampled)
		pr_info("  asyncio tasks sampled: %" PRIu64 " reads met more "
			"than %d tasks in a process and read a random share, "
			"each weighing for those it stood for",
			st.task_sampled, COLLECTOR_TASKS_PER_TICK);
	if (r->s.o.mode != MODE_CPU && st.sweeps) {
		if (st.sweep_slowed)
			pr_info("  the sweep slowed to stay under 1%% of a CPU: "
				"%" PRIu64 " of %" PRIu64 " ticks waited longer "
				"than -r asks (the longest tick took %.0f us)",
				st.sweep_slowed, st.sweeps,
				st.sweep_max_ns / 1e3);
		if (st.sweep_capped)
			pr_info("  the sweep's ring was full: %" PRIu64 " thread "
				"reports waited for a later tick",
				st.sweep_capped);
		pr_info("  sampled sweep: %" PRIu64 " ticks, %.1f us each "
			"(%.1f us of it reading stacks), %" PRIu64 " stacks read "
			"(%" PRIu64 " in one go, %" PRIu64 " dropped: run since "
			"seen blocked) of %" PRIu64 " thread records; "
			"time in the profile by process (the folded file counts "
			"microseconds):",
			st.sweeps, st.sweep_ns / 1e3 / st.sweeps,
			st.sweep_read_ns / 1e3 / st.sweeps, st.sweep_reads,
			st.sweep_reads_again, st.sweep_reads_stale,
			st.sweep_records);
		print_breakdown(p);
	} else if (r->s.o.mode != MODE_CPU) {
		pr_info("  %" PRIu64 " off-CPU intervals, %" PRIu64
			" sent with a stack, %" PRIu64 " whose end went unseen "
			"(closed at the thread's next switch); stacks as "
			"threads left the CPU: %" PRIu64 " walked, %" PRIu64
			" reused; time in the profile by process (the folded "
			"file counts microseconds):",
			st.counters[CNT_OFF_INTERVALS], st.counters[CNT_OFF_WALKED],
			st.counters[CNT_OFF_UNSEEN], st.counters[CNT_OFF_STACKS],
			st.counters[CNT_OFF_REUSED]);
		print_breakdown(p);
	}
	if (st.first_error) {
		fputs("pysight: some processes were skipped: ", stderr);
		utf8__fputs_escaped(st.first_error, stderr);
		fputc('\n', stderr);
	}
}

#define PROGRESS_SECONDS 60

static void run_loop(struct record *r)
{
	double start = clock__now_s(), last_check = 0;
	double next_progress = start + PROGRESS_SECONDS;

	while (!exiting) {
		double t;

		if (collector__poll(r->s.col, 50) < 0)
			break;
		t = clock__now_s();
		if (r->s.o.duration && t - start >= r->s.o.duration)
			break;
		if (t - last_check >= 0.05) {
			last_check = t;
			if (!session__alive(&r->s))
				break;
		}
		if (log__on(LOG_DEBUG) && t >= next_progress) {
			next_progress += PROGRESS_SECONDS;
			print_progress(r, t - start);
		}
	}
}

/* What was recorded, for titles: the command line or the pids. */
static void describe(struct record *r, struct profile_meta *m)
{
	size_t o = 0;
	int i;

	m->target[0] = 0;
	for (i = 0; r->s.o.command && r->s.o.command[i] && o < sizeof(m->target); i++)
		o += snprintf(m->target + o, sizeof(m->target) - o, "%s%s",
			      i ? " " : "", r->s.o.command[i]);
	for (i = 0; i < r->s.o.npids && o < sizeof(m->target); i++)
		o += snprintf(m->target + o, sizeof(m->target) - o, "%s%d",
			      i ? "," : "pid ", r->s.o.pids[i]);
	m->start_unix_ns = clock__wall_ns();
}

/* The format of output i: -f's, else the one its extension names. */
static const struct writer *writer_of(struct record *r, int i)
{
	return writer__choose(r->o.format, r->o.outputs[i]);
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
	struct profile *p = collector__profile(r->s.col), *shown;
	int i, err, first = 0;

	err = collapse__apply(&r->o.collapse, p, &shown);
	if (err) {
		pr_err("failed to collapse frames: %s",
		       strerror(-err));
		return err;
	}
	p = shown;
	for (i = 0; i < r->o.noutputs; i++) {
		err = writer__write_file(w[i], p, wo, r->o.outputs[i]);
		if (err)
			pr_err("failed to write %s: %s",
			       writer__path_name(r->o.outputs[i]), strerror(-err));
		else
			pr_info("wrote %u stacks to %s (%s)",
				profile__nstacks(p), writer__path_name(r->o.outputs[i]),
				w[i]->name);
		first = first ?: err;
	}
	if (shown != collector__profile(r->s.col))
		profile__free(shown);
	return first;
}

int cmd_record(int argc, char **argv)
{
	const struct argp_child children[] = { { &session__argp, 0, NULL, 0 },
					       { &collapse__argp, 0, NULL, 0 },
					       {} };
	const struct argp argp = { options, parse_opt, "[-- COMMAND [ARG...]]", doc,
				   children, NULL, NULL };
	struct record r = {};
	struct write_opts wo = {};
	const struct writer *w[MAX_OUTPUTS];
	double start;
	int err;

	session__init(&r.s, &exiting);
	if (session__parse(&r.s, &argp, argc, argv, &r))
		return 2;
	pick_writers(&r, w);
	memcpy(wo.groups, r.o.groups, sizeof(wo.groups));
	wo.ngroups = r.o.ngroups;
	if (r.o.threads && labels__parse_group("thread", wo.groups, &wo.ngroups))
		usage_error("--threads: too many --group-by keys");
	if (privs__check())
		return 1;
	session__catch_stops(on_signal, 0);

	err = session__open(&r.s) ?: session__release(&r.s);
	if (err)
		goto cleanup;
	pr_info("sampling %s at %u Hz%s, Ctrl-C to stop",
		session__what(&r.s), r.s.o.rate, mode_note[r.s.o.mode]);
	start = clock__now_s();
	describe(&r, profile__meta(collector__profile(r.s.col)));
	run_loop(&r);
	err = collector__finish(r.s.col);
	if (err)
		pr_err("failed to close off-CPU intervals: %s",
		       strerror(-err));
	as_sampled(&r, profile__meta(collector__profile(r.s.col)),
		   clock__now_s() - start);
	summary(&r, clock__now_s() - start);
	err = write_outputs(&r, w, &wo);

cleanup:
	session__close(&r.s, err ? SIGTERM : exiting, !err);
	collapse__free(&r.o.collapse);
	return err != 0;
}
