// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight agent: always on, host-wide, at a low rate.  The collector's
 * profile is cut into one-second slices (history.c), from which come:
 * every --export-interval an OTLP request (export.c), queued in the spool
 * and sent by the exporter's thread; every --rotate a profile file in
 * --output-dir (retention.c names and prunes them); on demand (the control
 * socket, SIGUSR1) the last --window.  This file has the options, the
 * loop, the triggers and the setup.
 */
#include <argp.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "commands.h"
#include "control.h"
#include "export.h"
#include "exporter.h"
#include "fdio.h"
#include "history.h"
#include "log.h"
#include "metrics.h"
#include "otlp.h"
#include "privs.h"
#include "registry.h"
#include "retention.h"
#include "session.h"
#include "spool.h"
#include "usage.h"
#include "writer.h"

#define DEFAULT_RATE		19
#define DEFAULT_EXPORT_S	15.0
#define DEFAULT_WINDOW_S	60.0
/* wall/off: a thread that moved has its stack read again at most once a
 * second (sweep__set_reread): the agent's time and causes stay exact,
 * its stacks are sampled; at each move, 200 processes that each sleep
 * five times a second cost 1% of a CPU in stack reads alone */
#define AGENT_REREAD_NS		1000000000ULL
/* and its sweep takes at most 0.3% of a CPU, not 1.5% (collector_opts'
 * sweep_duty): on a host of many Python processes that wake often it
 * sweeps less often, its times and causes still exact */
#define AGENT_SWEEP_DUTY	500
#define DEFAULT_SPOOL		"/var/lib/pysight/spool"
#define DEFAULT_SPOOL_MIB	256
#define DEFAULT_SNAPSHOTS	"/var/lib/pysight/snapshots"
#define SLICE_S			1.0
#define POLL_MS			50
#define CONTROL_PER_PASS	4	/* requests served between polls */
#define TRIGGER_EVERY_S		1.0	/* a second of triggers ... */
#define TRIGGERS_MAX		4	/* ... writes at most these files */
#define DRAIN_S			5.0
/* a rebase no more often than this, and not before this many objects
 * are interned (PYSIGHT_REBASE_S, for the tests: this often, from any
 * size) */
#define REBASE_S		60.0
#define REBASE_FLOOR		4096
#define MAX_TAGS		32

struct agent_opts {
	const char *otlp;
	struct exporter_opts ex;
	double export_s;
	const char *spool_dir;
	uint64_t spool_max;			/* bytes */
	const char *tags[MAX_TAGS];
	int ntags;
	const char *output_dir;
	double rotate_s, retain_s;
	uint64_t retain_bytes;			/* 0: no bound */
	const char *format;
	double window_s;
	unsigned int window_rate;
	unsigned int export_rate;	/* -r: what exports and files are at */
	const char *socket_path;
	gid_t socket_gid;		/* (gid_t)-1: root's group */
	const char *snapshot_dir;
	const char *metrics_addr;
};

struct agent {
	struct session s;
	struct agent_opts o;
	struct history *h;
	struct export *x;
	struct spool *spool;
	struct exporter *ex;
	struct metrics *m;
	int ctl;
	struct control_server *srv;
	char trigger_path[PATH_MAX];	/* this second's last trigger's snapshot */
	pid_t trigger_pid;
	double trigger_s;		/* when this second of triggers began */
	int triggers;			/* files written for them in it */
	char url[1024];
	char host[256];
	uint64_t start_ns, cut_ns, export_ns, rotate_ns;
	double cut_unsampled_s;		/* the sampler's unsampled_s then */
	double start_s, cpu_at_start;
	struct retention files, snaps;	/* --output-dir's, --snapshot-dir's */
	uint64_t snapshots, rotated;
	/* rebases of the collector's profile (maybe_rebase) */
	uint64_t rebase_ns, rebase_every_ns, rebases;
	unsigned int interned_base, rebase_floor;
};

static volatile sig_atomic_t exiting;
static volatile sig_atomic_t usr1;

enum {
	OPT_OTLP = 1000,
	OPT_OTLP_HEADER,
	OPT_OTLP_CA,
	OPT_EXPORT_INTERVAL,
	OPT_SPOOL,
	OPT_SPOOL_MAX,
	OPT_TAG,
	OPT_OUTPUT_DIR,
	OPT_ROTATE,
	OPT_RETAIN,
	OPT_RETAIN_SIZE,
	OPT_WINDOW,
	OPT_WINDOW_RATE,
	OPT_SOCKET,
	OPT_SOCKET_GROUP,
	OPT_SNAPSHOT_DIR,
	OPT_METRICS,
};

static const struct argp_option options[] = {
	{ "otlp", OPT_OTLP, "URL", 0, "Export to this OTLP/HTTP endpoint (URL/v1development/profiles)", 0 },
	{ "otlp-header", OPT_OTLP_HEADER, "K=V", 0, "Send this header with each export (repeatable), e.g. Authorization='Bearer T'; also read from OTEL_EXPORTER_OTLP_HEADERS", 0 },
	{ "otlp-ca", OPT_OTLP_CA, "FILE", 0, "Trust this CA for an https endpoint", 0 },
	{ "export-interval", OPT_EXPORT_INTERVAL, "SECONDS", 0, "Export this often (default 15)", 0 },
	{ "spool", OPT_SPOOL, "DIR", 0, "Queue exports here while the endpoint is away (default " DEFAULT_SPOOL ")", 0 },
	{ "spool-max", OPT_SPOOL_MAX, "MIB", 0, "Bound the queue; the oldest go first (default 256)", 0 },
	{ "tag", OPT_TAG, "K=V", 0, "Add a resource attribute to every export (repeatable)", 0 },
	{ "output-dir", OPT_OUTPUT_DIR, "DIR", 0, "Write rolling profiles here (pprof, or -f)", 0 },
	{ "format", 'f', "FORMAT", 0, "Format of --output-dir's files and of snapshots: folded, speedscope, pprof or svg (default pprof)", 0 },
	{ "rotate", OPT_ROTATE, "DURATION", 0, "A new file this often (default 60s)", 0 },
	{ "retain", OPT_RETAIN, "DURATION", 0, "Delete files and snapshots older than this (default 24h)", 0 },
	{ "retain-size", OPT_RETAIN_SIZE, "MIB", 0, "Delete the oldest files (and, apart, snapshots) beyond this total", 0 },
	{ "window", OPT_WINDOW, "SECONDS", 0, "Keep this much of the recent past for snapshots (default 60)", 0 },
	{ "window-rate", OPT_WINDOW_RATE, "HZ", 0, "Sample at HZ for the window (what snapshots hold); exports and files are thinned back to -r", 0 },
	{ "socket", OPT_SOCKET, "PATH", 0, "The control socket (default " CONTROL_DEFAULT_PATH ")", 0 },
	{ "socket-group", OPT_SOCKET_GROUP, "GROUP", 0, "Let this group's members use the control socket (mode 0660; else only root's group)", 0 },
	{ "snapshot-dir", OPT_SNAPSHOT_DIR, "DIR", 0, "Where SIGUSR1 and triggers write snapshots (default " DEFAULT_SNAPSHOTS ")", 0 },
	{ "metrics-addr", OPT_METRICS, "IP:PORT", 0, "Serve Prometheus metrics here, e.g. 127.0.0.1:9465", 0 },
	{},
};

static const char doc[] =
	"Profile the host continuously and ship it: OTLP profiles to a "
	"collector (--otlp), rolling files (--output-dir), and the last "
	"--window on demand (`pysight snapshot`, SIGUSR1, or an application "
	"through the control socket).\v"
	"The agent samples at 19 Hz unless -r says otherwise.  Durations take "
	"s, m, h or d: --rotate 60s --retain 24h.";

/* "K=V" as "K: V", for curl. */
static const char *header_of(const char *opt, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *h;

	if (!eq || eq == arg || strpbrk(arg, "\r\n:"))
		bad_value(opt, arg, "expected NAME=VALUE");
	if (asprintf(&h, "%.*s: %s", (int)(eq - arg), arg, eq + 1) < 0)
		exit(1);
	return h;
}

/* A group by name or number, as chgrp takes it. */
static gid_t group_arg(const char *opt, const char *arg)
{
	struct group *g = getgrnam(arg);

	return g ? g->gr_gid : (gid_t)parse_long(opt, arg, 0,
						 (long)(gid_t)-1 - 1, "no such group");
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct agent *a = state->input;
	struct agent_opts *o = &a->o;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->s.o;
		break;
	case OPT_OTLP:
		o->otlp = arg;
		break;
	case OPT_OTLP_HEADER:
		if (o->ex.nheaders == EXPORTER_MAX_HEADERS)
			bad_value("--otlp-header", arg, "at most 16 headers");
		o->ex.headers[o->ex.nheaders++] = header_of("--otlp-header", arg);
		break;
	case OPT_OTLP_CA:
		o->ex.ca_file = path_arg("--otlp-ca", arg);
		break;
	case OPT_EXPORT_INTERVAL:
		o->export_s = parse_duration("--export-interval", arg, 1, true, 3600);
		break;
	case OPT_SPOOL:
		o->spool_dir = path_arg("--spool", arg);
		break;
	case OPT_SPOOL_MAX:
		o->spool_max = (uint64_t)parse_long("--spool-max", arg, 1, 1 << 20,
			"expected MiB from 1 to 1048576") << 20;
		break;
	case OPT_TAG:
		if (!strchr(arg, '=') || arg[0] == '=')
			bad_value("--tag", arg, "expected KEY=VALUE");
		if (o->ntags == MAX_TAGS)
			bad_value("--tag", arg, "at most 32 tags");
		o->tags[o->ntags++] = arg;
		break;
	case OPT_OUTPUT_DIR:
		o->output_dir = path_arg("--output-dir", arg);
		break;
	case 'f':
		o->format = writer__check_format(arg);
		break;
	case OPT_ROTATE:
		o->rotate_s = parse_duration("--rotate", arg, 1, true, 7 * 86400);
		break;
	case OPT_RETAIN:
		o->retain_s = parse_duration("--retain", arg, 1, true, 3650 * 86400.0);
		break;
	case OPT_RETAIN_SIZE:
		o->retain_bytes = (uint64_t)parse_long("--retain-size", arg, 1,
			1 << 24, "expected MiB, at least 1") << 20;
		break;
	case OPT_WINDOW:
		o->window_s = parse_duration("--window", arg, 1, true, 3600);
		break;
	case OPT_WINDOW_RATE:
		o->window_rate = (unsigned int)parse_long("--window-rate", arg, 1,
			SESSION_MAX_RATE, "expected Hz from 1 to 10000");
		break;
	case OPT_SOCKET:
		o->socket_path = path_arg("--socket", arg);
		break;
	case OPT_SOCKET_GROUP:
		o->socket_gid = group_arg("--socket-group", arg);
		break;
	case OPT_SNAPSHOT_DIR:
		o->snapshot_dir = path_arg("--snapshot-dir", arg);
		break;
	case OPT_METRICS:
		o->metrics_addr = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		usr1 = 1;
	else
		exiting = sig;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * As sys.version_info spells it, "3.12.1" or "3.15.0a2", where the
 * interpreter's Py_Version said (3.11 on); else what its file name says,
 * "3.9".  A PY_VERSION_HEX read from a binary has a release level; one
 * made up from a name has none.
 */
static void runtime_version(const struct pyproc *pp, char *out, size_t len)
{
	static const char *const level[16] = { [0xa] = "a", [0xb] = "b",
						[0xc] = "rc", [0xf] = "" };
	__u32 hex = pp->proc.off.version_hex;
	const char *lv = level[(hex >> 4) & 0xf];

	if (!lv) {
		snprintf(out, len, "3.%d", pp->minor);
		return;
	}
	snprintf(out, len, "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
	if (*lv)
		snprintf(out + strlen(out), len - strlen(out), "%s%u", lv, hex & 0xf);
}

/* For the export's resources: the collector knows the interpreter. */
static void runtime_version_of(void *ctx, pid_t pid, char *out, size_t len)
{
	struct agent *a = ctx;
	const struct pyproc *pp = collector__process(a->s.col, pid);

	if (pp)
		runtime_version(pp, out, len);
}

/* The export of the interval that ends now. */
static void export_interval(struct agent *a, uint64_t now)
{
	if (!export__interval(a->x, collector__profile(a->s.col), a->export_ns, now))
		a->export_ns = now;
}

static const struct writer *out_writer(const struct agent *a)
{
	return writer__find(a->o.format ? a->o.format : "pprof");
}

static void rotate(struct agent *a, uint64_t now)
{
	struct profile *q = export__period(a->x, collector__profile(a->s.col),
					   a->rotate_ns, now);
	struct write_opts wo = { 0 };
	char path[PATH_MAX];
	int err;

	if (!q)
		return;
	retention__name(&a->files, a->rotate_ns, out_writer(a)->exts[0], path,
			sizeof(path));
	err = writer__write_own_file(out_writer(a), q, &wo, path);
	if (err)
		pr_err("failed to write %s: %s", path, strerror(-err));
	else
		a->rotated++;
	profile__free(q);
	a->rotate_ns = now;
	retention__prune(&a->files, err ? NULL : path);
}

/* The slice in progress into the history, with the share of the rate
 * the sampler took over it. */
static void cut(struct agent *a, uint64_t now)
{
	double unsampled = collector__unsampled_s(a->s.col);
	/* (a wall clock stepped back: a slice of no length, at full rate) */
	double len = now > a->cut_ns ? (double)(now - a->cut_ns) / 1e9 : 0;

	history__cut(a->h, collector__profile(a->s.col), a->cut_ns, now,
		     collector__sampled_share(unsampled - a->cut_unsampled_s, len));
	a->cut_ns = now;
	a->cut_unsampled_s = unsampled;
}

/* The last --window up to now, filtered, as a profile of its own; the
 * slice in progress is cut first, so it holds the latest samples. */
static struct profile *window_now(struct agent *a,
				  const struct history_filter *f,
				  uint64_t *since, uint64_t *until)
{
	uint64_t now, span = (uint64_t)(a->o.window_s * 1e9);

	collector__drain(a->s.col);	/* the samples until now */
	now = clock__wall_ns();
	cut(a, now);
	/* no further back than the agent's start: a window it never saw is
	 * not in the profile's time range */
	*since = now > span && now - span > a->start_ns ? now - span : a->start_ns;
	*until = now;
	return export__window(a->x, collector__profile(a->s.col), *since, now, f);
}

/* SIGUSR1, or an application's trigger: the window into the snapshot
 * directory, and to the collector with the reason. */
static void snapshot_to_disk(struct agent *a, pid_t pid, const char *why,
			     char *path, size_t len)
{
	struct history_filter f = { .pid = pid };
	uint64_t since, until;
	struct profile *q = window_now(a, pid ? &f : NULL, &since, &until);
	int err = q ? 0 : -ENOMEM;

	path[0] = 0;
	if (!err) {
		fdio__mkdirs(a->o.snapshot_dir, 0750);
		retention__unique_name(&a->snaps, until, out_writer(a)->exts[0],
				       path, len);
		err = writer__write_own_file(out_writer(a), q, &(struct write_opts){ 0 }, path);
	}
	if (err) {
		pr_err("failed to write a snapshot: %s", strerror(-err));
		path[0] = 0;
	} else {
		export__send(a->x, q, since, until, why);
		a->snapshots++;
		pr_info("snapshot (%s) written to %s", why, path);
		retention__prune(&a->snaps, path);
	}
	profile__free(q);
}

/*
 * An application's "this was slow", answered with the snapshot's path.
 * A burst of slow requests is one bad moment: in a second, one pid's
 * triggers share a file, and at most TRIGGERS_MAX files are written.
 */
static void trigger(struct agent *a, int id, const struct control_request *r)
{
	double now = clock__now_s();

	if (now - a->trigger_s >= TRIGGER_EVERY_S) {
		a->trigger_s = now;
		a->triggers = 0;
		a->trigger_path[0] = 0;
	}
	if (!a->trigger_path[0] || r->pid != a->trigger_pid) {
		if (a->triggers >= TRIGGERS_MAX) {
			control__answer(a->srv, id, NULL, 0, "too many triggers "
					"this second: the next one is kept");
			return;
		}
		snapshot_to_disk(a, r->pid, r->reason[0] ? r->reason : "trigger",
				 a->trigger_path, sizeof(a->trigger_path));
		a->trigger_pid = r->pid;
		a->triggers++;
	}
	if (a->trigger_path[0])
		control__answer(a->srv, id, a->trigger_path,
				strlen(a->trigger_path), NULL);
	else
		control__answer(a->srv, id, NULL, 0, "failed to write the snapshot");
}

static void serve_control(struct agent *a)
{
	struct control_request r;
	const struct writer *w;
	uint64_t since, until;
	struct profile *q;
	char *buf = NULL;
	int id, ret, n;
	size_t len;

	if (!a->srv)
		return;
	/* a few a pass: a crowd of requests slows answers, not sampling */
	for (n = 0; n < CONTROL_PER_PASS && (id = control__next(a->srv, &r)) >= 0; n++) {
		if (r.trigger) {
			trigger(a, id, &r);
			continue;
		}
		w = writer__find(r.format[0] ? r.format : "pprof");
		if (!w) {
			control__answer(a->srv, id, NULL, 0, "unknown format");
			continue;
		}
		q = window_now(a, &(struct history_filter){
					.pid = r.pid,
					.cgroup = r.cgroup[0] ? r.cgroup : NULL,
					.container = r.container[0] ? r.container : NULL },
			       &since, &until);
		ret = q ? writer__write_mem(w, q, &(struct write_opts){ 0 }, &buf, &len) :
			    -ENOMEM;
		if (!ret && !profile__nentries(q))
			ret = -ENODATA;	/* not an empty file the user must open */
		if (ret == -ENODATA)
			control__answer(a->srv, id, NULL, 0,
					r.pid || r.cgroup[0] || r.container[0] ?
					"the window holds no samples of what was asked for" :
					"the window holds no samples yet");
		else if (ret)
			control__answer(a->srv, id, NULL, 0, strerror(-ret));
		else
			control__answer(a->srv, id, buf, len, NULL);
		/* every snapshot goes to the collector too, marked as one */
		if (!ret && profile__nentries(q))
			export__send(a->x, q, since, until, "snapshot");
		profile__free(q);
		free(buf);
		buf = NULL;
		a->snapshots += !ret;
	}
}

/* What the agent can say of itself, for -v and the metrics. */
static void health_values(struct agent *a, struct collector_stats *st,
			  struct metrics_values *v)
{
	size_t hist_bytes;

	collector__stats(a->s.col, st);
	*v = (struct metrics_values){
		.samples = st->counters[CNT_SAMPLES], .sample_errors = st->errors,
		.ringbuf_lost = st->lost, .python_processes = st->npython,
		.snapshots = a->snapshots, .cpu_s = cpu_s() - a->cpu_at_start,
		.resident_bytes = (uint64_t)st->rss_kib * 1024,
		.interned = st->interned,
	};
	if (a->spool)
		spool__stats(a->spool, &v->spool);
	if (a->ex)
		exporter__stats(a->ex, &v->ex);
	history__size(a->h, &v->window_entries, &hist_bytes);
}

/* One line at -v (say: not for a scrape), and the metrics endpoint's. */
static void health(struct agent *a, bool say)
{
	double up = clock__now_s() - a->start_s;
	struct collector_stats st;
	struct metrics_values v;

	health_values(a, &st, &v);
	if (a->m)
		metrics__update(a->m, &v);
	if (!say)
		return;
	pr_debug("agent: %" PRIu64 " samples, %" PRIu64 " errors, %u Python "
		 "processes, %" PRIu64 " exports sent (%" PRIu64 " bytes), queue %"
		 PRIu64 " (%" PRIu64 " bytes, %" PRIu64 " dropped, %" PRIu64
		 " refused), cpu %.2f%%, rss %lu KiB, interned %u (%" PRIu64
		 " rebases)", v.samples, v.sample_errors, v.python_processes,
		 v.ex.sent, v.ex.bytes_sent, v.spool.depth, v.spool.bytes,
		 v.spool.dropped, v.ex.rejected, up > 0 ? 100 * v.cpu_s / up : 0,
		 st.rss_kib, v.interned, a->rebases);
	if (log__on(LOG_DEBUG2))
		session__print_held(&st);
}

/* The rolling files and the snapshots: where, named how, kept how long. */
static void setup_retention(struct agent *a)
{
	a->files = (struct retention){
		.dir = a->o.output_dir, .prefix = "pysight",
		.max_age_s = a->o.retain_s, .max_bytes = a->o.retain_bytes,
		.owner = writer__owner(),
	};
	a->snaps = a->files;
	a->snaps.dir = a->o.snapshot_dir;
	a->snaps.prefix = "snapshot";
}

/* Everything that can fail on a bad option, before BPF is loaded. */
static int setup_outputs(struct agent *a)
{
	char err[512];
	int ret;

	if (a->o.otlp && exporter__check_url(a->o.otlp, err, sizeof(err)))
		goto fail;
	/* first: another agent may be using the spool, and its exports are
	 * not ours to send */
	a->ctl = control__listen(a->o.socket_path, a->o.socket_gid, err, sizeof(err));
	if (a->ctl < 0)
		goto fail;
	a->srv = control__server(a->ctl, CONTROL_READ_MS, CONTROL_REPLY_MS);
	if (!a->srv) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (a->o.otlp) {
		if (exporter__url_with_path(a->o.otlp, OTLP_PROFILES_PATH,
					    a->url, sizeof(a->url))) {
			snprintf(err, sizeof(err), "invalid OTLP URL '%s'", a->o.otlp);
			goto fail;
		}
		a->o.ex.url = a->url;
		ret = spool__open(a->o.spool_dir, a->o.spool_max, &a->spool,
				  err, sizeof(err));
		if (ret)
			goto fail;
	}
	if (a->o.output_dir && (ret = fdio__mkdirs(a->o.output_dir, 0755))) {
		snprintf(err, sizeof(err), "cannot create %s: %s",
			 a->o.output_dir, strerror(-ret));
		goto fail;
	}
	/* bound now: a port taken, or one below 1024, fails here */
	if (a->o.metrics_addr &&
	    metrics__open(a->o.metrics_addr, &a->m, err, sizeof(err)))
		goto fail;
	return 0;
fail:
	pr_err("%s", err);
	return -EINVAL;
}

/*
 * The threads, once privileges are dropped: capabilities and
 * no_new_privs are a thread's own, and privs__drop sets the caller's
 * only, so a thread started before kept everything root had.  Last, so
 * that what the exporter sends, it sends for a start that went through.
 */
static int start_threads(struct agent *a)
{
	char err[512];

	if ((a->m && metrics__start(a->m, err, sizeof(err))) ||
	    (a->spool &&
	     exporter__start(&a->o.ex, a->spool, &a->ex, err, sizeof(err)))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	return 0;
}

/* The export path, once the exporter it kicks is running. */
static int start_export(struct agent *a)
{
	struct export_opts xo = {
		.mode = a->s.o.mode, .rate = a->s.o.rate,
		.export_rate = a->o.export_rate, .host = a->host,
		.tags = a->o.tags, .ntags = a->o.ntags, .history = a->h,
		.spool = a->spool, .exporter = a->ex,
		.runtime_version = runtime_version_of, .ctx = a,
	};

	a->x = export__new(&xo);
	if (!a->x) {
		pr_err("failed to start the export: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

/* The last word on the way out: what this run made of its exports, and
 * what the next start will find in the spool. */
static void stopped(struct agent *a, bool say)
{
	struct exporter_stats es;
	struct spool_stats ss;

	exporter__stop(a->ex, DRAIN_S, &es);
	a->ex = NULL;
	spool__stats(a->spool, &ss);
	if (say)
		pr_info("agent: stopped: %" PRIu64 " exports made, %" PRIu64
			" sent, %" PRIu64 " dropped, %" PRIu64 " refused; %" PRIu64
			" left in %s for the next start", export__made(a->x),
			es.sent, ss.dropped, es.rejected, ss.depth, a->o.spool_dir);
}

/*
 * The collector's profile interns every stack, thread and cgroup it is
 * given, for the slices to point at, and never forgets one: a host whose
 * processes come and go would grow it for ever.  Once it holds twice what
 * it did after the last rebase (and a floor), it is rebased right after a
 * cut, onto what live processes still use; the history frees the old one
 * when its last slice goes.
 */
static void maybe_rebase(struct agent *a, uint64_t now)
{
	unsigned int n = profile__ninterned(collector__profile(a->s.col));
	struct profile *old;

	if (now < a->rebase_ns || now - a->rebase_ns < a->rebase_every_ns ||
	    n < 2 * a->interned_base + a->rebase_floor ||
	    history__nretired(a->h) == HISTORY_MAX_RETIRED)
		return;
	old = collector__rebase(a->s.col);
	if (!old)
		return;		/* out of memory: nothing changed, try later */
	history__retire(a->h, old);
	a->rebase_ns = now;
	a->rebases++;
	a->interned_base = profile__ninterned(collector__profile(a->s.col));
}

static void loop(struct agent *a)
{
	uint64_t now, export_every = (uint64_t)(a->o.export_s * 1e9),
		 rotate_every = (uint64_t)(a->o.rotate_s * 1e9);
	char path[PATH_MAX];
	bool export_due, rotate_due;

	while (!exiting) {
		if (collector__poll(a->s.col, POLL_MS) < 0)
			break;
		now = clock__wall_ns();
		export_due = a->spool && now - a->export_ns >= export_every;
		rotate_due = a->o.output_dir && now - a->rotate_ns >= rotate_every;
		/* an export or a file takes the slices that end by now: the
		 * one in progress is cut here, or its samples would go to the
		 * next interval, up to a slice late */
		if (export_due || rotate_due ||
		    now - a->cut_ns >= (uint64_t)(SLICE_S * 1e9)) {
			/* what was sampled until the cut, as top does */
			if (collector__drain(a->s.col) < 0)
				break;
			now = clock__wall_ns();
			cut(a, now);
			maybe_rebase(a, now);
		}
		if (a->m && metrics__wanted(a->m))
			health(a, false);	/* the metrics, made for a scrape */
		if (export_due)
			export_interval(a, now);
		if (rotate_due)
			rotate(a, now);
		/* one line an interval, whether it went out or to a file */
		if (export_due || rotate_due)
			health(a, true);
		if (usr1) {
			usr1 = 0;
			snapshot_to_disk(a, 0, "signal", path, sizeof(path));
		}
		serve_control(a);
		if ((a->s.o.command || a->s.o.npids) && !session__alive(&a->s))
			break;
		if (a->s.o.duration && clock__now_s() - a->start_s >= a->s.o.duration)
			break;
	}
	/* what the last interval has, then what can still be sent */
	collector__flush(a->s.col);
	now = clock__wall_ns();
	cut(a, now);
	if (a->spool)
		export_interval(a, now);
	if (a->o.output_dir)
		rotate(a, now);
}

static void defaults(struct agent *a)
{
	a->o.export_s = DEFAULT_EXPORT_S;
	a->o.spool_dir = DEFAULT_SPOOL;
	a->o.spool_max = (uint64_t)DEFAULT_SPOOL_MIB << 20;
	a->o.rotate_s = 60;
	a->o.retain_s = 86400;
	a->o.window_s = DEFAULT_WINDOW_S;
	a->o.socket_path = CONTROL_DEFAULT_PATH;
	a->o.socket_gid = (gid_t)-1;
	a->o.snapshot_dir = DEFAULT_SNAPSHOTS;
	a->o.ex.timeout_s = 10;
	/* an outage ends at most this long before the queue moves again */
	a->o.ex.max_backoff_s = 10;
	/* a Retry-After longer than ours is honoured, up to five minutes */
	a->o.ex.max_retry_after_s = 300;
	a->o.ex.content_type = OTLP_CONTENT_TYPE;
	a->ctl = -1;
	a->rebase_every_ns = (uint64_t)(REBASE_S * 1e9);
	a->rebase_floor = REBASE_FLOOR;
	if (getenv("PYSIGHT_REBASE_S")) {
		a->rebase_every_ns = (uint64_t)(fmax(0, atof(getenv("PYSIGHT_REBASE_S"))) * 1e9);
		a->rebase_floor = 0;
	}
}

int cmd_agent(int argc, char **argv)
{
	const struct argp_child children[] = { { &session__argp, 0, NULL, 0 },
					       { NULL, 0, NULL, 0 } };
	const struct argp argp = { options, parse_opt, "[-- COMMAND...]", doc,
				   children, NULL, NULL };
	struct agent a = { 0 };
	char why[256];
	double span;
	int err, i;

	defaults(&a);
	session__init(&a.s, &exiting);
	a.s.o.rate = DEFAULT_RATE;
	a.s.o.sweep_reread_ns = AGENT_REREAD_NS;
	a.s.o.sweep_duty = AGENT_SWEEP_DUTY;
	if (session__parse(&a.s, &argp, argc, argv, &a))
		return 2;
	if (!a.o.otlp && !a.o.output_dir)
		usage_error("nowhere to send profiles: give --otlp URL, --output-dir DIR, or both");
	if (privs__check())
		return 1;
	a.o.export_rate = a.s.o.rate;
	if (a.o.window_rate > a.s.o.rate)
		a.s.o.rate = a.o.window_rate;
	if (a.o.otlp && exporter__env_headers(&a.o.ex, why, sizeof(why))) {
		pr_err("%s", why);
		for (i = 0; i < a.o.ex.nheaders; i++)
			free((char *)a.o.ex.headers[i]);	/* those before */
		return 2;
	}
	gethostname(a.host, sizeof(a.host) - 1);
	setup_retention(&a);
	span = a.o.window_s > a.o.export_s ? a.o.window_s : a.o.export_s;
	if (a.o.output_dir && a.o.rotate_s > span)
		span = a.o.rotate_s;
	a.h = history__new(span + 2 * SLICE_S);
	if (!a.h)
		return 1;
	/* SA_RESTART, as signal() gave it: the exporter's and the control
	 * socket's calls go on through a signal, and the loop reads the flag.
	 * HUP stops it as it stops record: the last file whole, the socket
	 * removed (the default would leave a temporary file). */
	session__catch_stops(on_signal, SA_RESTART);
	session__catch(SIGUSR1, on_signal, SA_RESTART);
	err = setup_outputs(&a);
	if (!err)
		err = session__open(&a.s) ?: session__release(&a.s) ?:
		      start_threads(&a) ?: start_export(&a);
	if (!err) {
		a.start_s = clock__now_s();
		a.cpu_at_start = cpu_s();
		a.start_ns = a.cut_ns = a.export_ns = a.rotate_ns =
			a.rebase_ns = clock__wall_ns();
		pr_info("agent: sampling %s at %u Hz (%s)%s%s%s%s",
			session__what(&a.s), a.s.o.rate,
			profile__mode_name(a.s.o.mode),
			a.o.otlp ? ", exporting to " : "", a.o.otlp ? a.url : "",
			a.o.output_dir ? ", writing to " : "",
			a.o.output_dir ? a.o.output_dir : "");
		loop(&a);
	}
	if (a.ex)
		stopped(&a, !err);
	metrics__stop(a.m);
	control__server_free(a.srv);
	if (a.ctl >= 0) {
		close(a.ctl);
		unlink(a.o.socket_path);
	}
	spool__free(a.spool);
	history__free(a.h);
	for (i = 0; i < a.o.ex.nheaders; i++)
		free((char *)a.o.ex.headers[i]);	/* header_of's */
	export__free(a.x);
	session__close(&a.s, err ? SIGTERM : exiting, false);
	return err ? 1 : 0;
}
