// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight top: the hottest Python functions, live, like top and py-spy
 * top.  The same collector as record; every interval its profile goes
 * into the view (topview.c) and is reset.  On a terminal the view is an
 * ncurses screen with keys; otherwise a plain table per interval.
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <ncurses.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "commands.h"
#include "labels.h"
#include "log.h"
#include "privs.h"
#include "session.h"
#include "topview.h"
#include "usage.h"
#include "utf8.h"

#define DEFAULT_INTERVAL	1.0
#define MIN_INTERVAL		0.1
#define MAX_INTERVAL		3600.0
#define PLAIN_ROWS		40	/* a plain table's rows at most */
#define POLL_MS			50	/* keys are read this often */
#define PROCESS_W		22	/* the process column's width */
#define ROW_MAX		(LABEL_MAX + 128)	/* a row as text */

/* What the header says about the latest interval. */
struct header {
	double samples_per_s;
	double error_pct;
	unsigned int nprocs, nthreads;
	double elapsed;			/* since the start */
};

struct top {
	struct session s;
	double interval;		/* seconds */
	unsigned long iterations;	/* -n: stop after these, 0 = never */
	struct topview *view;
	struct topview_opts vo;
	bool screen;			/* ncurses, else plain tables */
	SCREEN *scr;
	bool paused;
	struct header h;
	uint64_t counters[CNT__MAX];	/* at the last interval's end */
	uint64_t errors;		/* collector_stats.errors, then */
	double start, last;
	double rate;			/* cpu mode: samples a second as
					 * sampled since the start (below -r
					 * when the sampler was slowed) */
	bool targets_gone;		/* the command, or every -p pid, exited */
};

static volatile sig_atomic_t exiting;	/* the last stop signal, or 0 */
static volatile sig_atomic_t screen_on;	/* between initscr and endwin */

enum {
	OPT_INTERVAL = 'i',
	OPT_ITERATIONS = 'n',
};

static const struct argp_option options[] = {
	{ "interval", OPT_INTERVAL, "TIME", 0, "Refresh every TIME: seconds, or 2s, 1m (default 1)", 0 },
	{ "iterations", OPT_ITERATIONS, "N", 0, "Stop after N refreshes", 0 },
	{},
};

static const char doc[] =
	"Show the hottest Python functions live, host-wide (or of -p PIDs, or "
	"of COMMAND and its children): own and total share of the last "
	"interval, own and total time since the start, and the process.\v"
	"Keys: 1-4 sort by a column, p group by process, l lines on or off, "
	"space pause, q quit.  When stdout is not a terminal, a plain table "
	"is printed every interval.\n"
	"Examples:\n"
	"  sudo pysight top\n"
	"  sudo pysight top -p 1234 --mode wall\n"
	"  sudo pysight top -n 3 -- python3 app.py | tee top.txt";

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct top *t = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &t->s.o;
		break;
	case OPT_INTERVAL:
		t->interval = parse_duration("--interval", arg, MIN_INTERVAL,
					     true, MAX_INTERVAL);
		break;
	case OPT_ITERATIONS:
		t->iterations = parse_long("--iterations", arg, 1, LONG_MAX,
					   "expected a positive integer");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The terminal as it was, from any exit path; async-signal tolerant in
 * the sense every curses program relies on: endwin only writes. */
static void restore_terminal(void)
{
	if (screen_on) {
		screen_on = 0;
		endwin();
	}
}

static void on_stop(int sig)
{
	if (exiting) {		/* a second one: stop now */
		restore_terminal();
		session__catch(sig, SIG_DFL, 0);
		raise(sig);
	}
	exiting = sig;
}

/* A crash: give the terminal back, then die of the same signal. */
static void on_fatal(int sig)
{
	restore_terminal();
	session__catch(sig, SIG_DFL, 0);
	raise(sig);
}

static void install_signals(void)
{
	static const int fatal[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
	size_t i;

	session__catch_stops(on_stop, 0);
	for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		session__catch(fatal[i], on_fatal, SA_RESETHAND | SA_NODEFER);
	atexit(restore_terminal);
}

/* Seconds a weight stands for: samples at the rate, or nanoseconds. */
static double seconds(const struct top *t, uint64_t w)
{
	if (t->s.o.mode == MODE_CPU)
		return (double)w / (t->rate > 0 ? t->rate : t->s.o.rate);
	return w / 1e9;
}

static double share(const struct top *t, uint64_t w)
{
	uint64_t all = topview__interval_total(t->view);

	return all ? 100.0 * w / all : 0.0;
}

/* "python3 1234", "python3 (3)", "3 processes" */
static void process_label(const struct topview_row *r, char *buf, size_t len)
{
	if (r->nprocs > 1 && r->process)
		snprintf(buf, len, "%s (%u)", r->process, r->nprocs);
	else if (r->nprocs > 1)
		snprintf(buf, len, "%u processes", r->nprocs);
	else if (r->pid)
		snprintf(buf, len, "%s %d", r->process ? r->process : "?",
			 r->pid);
	else
		snprintf(buf, len, "?");
}

/* One row, for the screen and for a pipe alike: the process and frame
 * names are the targets', escaped here, before either is drawn. */
static void row_text(const struct top *t, const struct topview_row *r,
		     char *buf, size_t len)
{
	char proc[64], eproc[UTF8_ESC_SIZE(64)];
	int o;

	process_label(r, proc, sizeof(proc));
	o = snprintf(buf, len, "%6.1f%% %6.1f%% %9.2fs %10.2fs  %-*.*s ",
		     share(t, r->self), share(t, r->total),
		     seconds(t, r->self_acc), seconds(t, r->total_acc),
		     PROCESS_W, PROCESS_W,
		     utf8__escape(eproc, sizeof(eproc), proc));
	if (o >= 0 && (size_t)o < len)
		utf8__escape(buf + o, len - (size_t)o, r->text);
}

static const char column_titles[] =
	"   OWN%   TOTAL%   OWN TIME  TOTAL TIME  PROCESS                FUNCTION";

static const char *const sort_names[SORT__MAX] = {
	[SORT_OWN] = "own %", [SORT_TOTAL] = "total %",
	[SORT_OWN_TIME] = "own time", [SORT_TOTAL_TIME] = "total time",
};

static void header_text(const struct top *t, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f samples/s, errors %.1f%%, %u Python process%s, "
		 "%u thread%s, mode %s",
		 t->h.samples_per_s, t->h.error_pct, t->h.nprocs,
		 t->h.nprocs == 1 ? "" : "es", t->h.nthreads,
		 t->h.nthreads == 1 ? "" : "s",
		 profile__mode_name(t->s.o.mode));
}

/* A table for a pipe: a header line, the column titles, the rows with
 * weight in the interval; false once stdout is gone. */
static bool print_plain(struct top *t)
{
	struct topview_row *rows;
	char line[ROW_MAX], head[256];
	size_t n, i, shown = 0;
	time_t now = time(NULL);
	struct tm tm;

	if (topview__rows(t->view, &t->vo, &rows, &n))
		return false;
	localtime_r(&now, &tm);
	strftime(line, sizeof(line), "%H:%M:%S", &tm);
	header_text(t, head, sizeof(head));
	printf("pysight top %s: %s\n%s\n", line, head, column_titles);
	for (i = 0; i < n && shown < PLAIN_ROWS; i++) {
		if (!rows[i].total)
			continue;
		row_text(t, &rows[i], line, sizeof(line));
		printf("%s\n", line);
		shown++;
	}
	putchar('\n');
	free(rows);
	return fflush(stdout) == 0 && !ferror(stdout);
}

static void draw_header(const struct top *t)
{
	char buf[256];

	header_text(t, buf, sizeof(buf));
	mvprintw(0, 0, "pysight top - %s (%u Hz, every %.1f s, %.0f s in)%s",
		 session__what(&t->s), t->s.o.rate, t->interval, t->h.elapsed,
		 t->paused ? "  [PAUSED]" : "");
	mvprintw(1, 0, "%s", buf);
	mvprintw(2, 0, "sorted by %s; %s; %s", sort_names[t->vo.sort],
		 t->vo.lines ? "by line" : "by function",
		 t->vo.by_process ? "grouped by process" : "processes merged");
	attron(A_REVERSE);
	mvprintw(4, 0, "%-*s", COLS, column_titles);
	attroff(A_REVERSE);
}

/*
 * ncurses learns of a resize in getch, from SIGWINCH.  When the size
 * changes twice in a row (tmux's resize-window does width, then height),
 * it was left with the first size: rows drawn past the real bottom line
 * scrolled the terminal.  So ask the terminal before each draw, and
 * between polls (an ioctl each 50 ms), paused or not; true if it changed.
 */
static bool follow_size(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col)
		return false;
	if (!is_term_resized(ws.ws_row, ws.ws_col))
		return false;
	resizeterm(ws.ws_row, ws.ws_col);
	clear();	/* all of it anew, not the difference */
	return true;
}

static void draw(struct top *t)
{
	struct topview_row *rows = NULL;
	char line[ROW_MAX];
	size_t n = 0, i;
	int y = 5;

	follow_size();
	erase();
	draw_header(t);
	if (!topview__rows(t->view, &t->vo, &rows, &n)) {
		for (i = 0; i < n && y < LINES - 1; i++, y++) {
			row_text(t, &rows[i], line, sizeof(line));
			mvaddnstr(y, 0, line, COLS);
		}
	}
	free(rows);
	attron(A_REVERSE);
	mvprintw(LINES - 1, 0, "%-*.*s", COLS, COLS,
		 " 1-4 sort  p group by process  l lines  space pause  q quit");
	attroff(A_REVERSE);
	refresh();
}

/* The interval ends: its header, its rows into the view, a new one. */
static int next_interval(struct top *t)
{
	struct profile *p = collector__profile(t->s.col);
	struct collector_stats st;
	uint64_t samples, errs;
	double now = clock__now_s(), dt = now - t->last;
	int err;

	collector__stats(t->s.col, &st);
	samples = st.counters[CNT_SAMPLES] - t->counters[CNT_SAMPLES];
	errs = st.errors - t->errors;
	t->errors = st.errors;
	memcpy(t->counters, st.counters, sizeof(t->counters));
	t->h.samples_per_s = dt > 0 ? samples / dt : 0;
	t->h.error_pct = samples ? 100.0 * errs / samples : 0;
	t->h.nprocs = profile__nprocs(p);
	t->h.nthreads = profile__nthreads(p);
	t->h.elapsed = now - t->start;
	t->rate = t->s.o.rate * collector__sampled_share(
			collector__unsampled_s(t->s.col), t->h.elapsed);
	t->last = now;
	err = topview__add(t->view, p);
	profile__reset(p);
	return err;
}

static void on_key(struct top *t, int c)
{
	switch (c) {
	case '1': case '2': case '3': case '4':
		t->vo.sort = c - '1';
		break;
	case 'p': case 'P':
		t->vo.by_process = !t->vo.by_process;
		break;
	case 'l': case 'L':
		t->vo.lines = !t->vo.lines;
		break;
	case ' ':
		t->paused = !t->paused;
		break;
	case 'q': case 'Q':
		exiting = -1;
		return;
	case KEY_RESIZE:
		/* the terminal reflowed what was there: paint it all anew,
		 * not the difference from what curses thinks is there */
		clear();
		break;
	default:
		return;
	}
	draw(t);
}

/* The screen, or false (after saying why) when the terminal cannot be
 * used: then plain tables.  newterm, unlike initscr, does not exit, so
 * the command and the BPF side are still cleaned up. */
static bool start_screen(struct top *t)
{
	setlocale(LC_ALL, "");	/* UTF-8 names in file paths */
	/* The size from the terminal alone, never from LINES and COLUMNS:
	 * a parent that exported them (pytest exports 80x24) shrank the
	 * view to 80 columns (ncurses(3X): use_env FALSE, use_tioctl TRUE). */
	use_env(FALSE);
	use_tioctl(TRUE);
	t->scr = newterm(NULL, stdout, stdin);
	if (!t->scr) {
		pr_warn("cannot draw on this terminal (TERM=%s); "
			"printing tables instead", getenv("TERM") ?: "");
		return false;
	}
	screen_on = 1;
	cbreak();		/* Ctrl-C stays a signal */
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	return true;
}

static int run_loop(struct top *t)
{
	unsigned long done = 0;
	double next = t->start + t->interval;
	int c, err = 0;

	while (!exiting) {
		double now;

		if (collector__poll(t->s.col, POLL_MS) < 0)
			break;
		while (t->screen && !exiting && (c = getch()) != ERR)
			on_key(t, c);
		if (t->screen && follow_size())
			draw(t);
		now = clock__now_s();
		if (now >= next) {
			next += t->interval * (1 + (int)((now - next) / t->interval));
			/* the samples until now: a slow pass (a new process to
			 * inspect) would leave some for the next interval, and
			 * one second would show 83 of 100 and the next 117 */
			if (collector__drain(t->s.col) < 0)
				break;
			err = next_interval(t);
			if (err)
				break;
			done++;
			if (t->screen && !t->paused)
				draw(t);
			else if (!t->screen && !print_plain(t))
				break;	/* stdout closed: a pipe's reader left */
			if (t->iterations && done >= t->iterations)
				break;
		}
		if (t->s.o.duration && now - t->start >= t->s.o.duration)
			break;
		if (!session__alive(&t->s)) {
			t->targets_gone = true;
			break;
		}
	}
	return err;
}

int cmd_top(int argc, char **argv)
{
	const struct argp_child children[] = { { &session__argp, 0, NULL, 0 },
					       {} };
	const struct argp argp = { options, parse_opt, "[-- COMMAND [ARG...]]", doc,
				   children, NULL, NULL };
	struct top t = { .interval = DEFAULT_INTERVAL };
	int err, sig;

	session__init(&t.s, &exiting);
	if (session__parse(&t.s, &argp, argc, argv, &t))
		return 2;
	/* the collector keeps lines, so that 'l' can show them */
	t.vo.lines = !t.s.o.nolineno;
	t.s.o.nolineno = false;
	t.screen = isatty(STDOUT_FILENO);
	if (privs__check())
		return 1;
	t.view = topview__new();
	if (!t.view)
		return 1;
	install_signals();

	err = session__open(&t.s) ?: session__release(&t.s);
	if (err)
		goto cleanup;
	pr_info("sampling %s at %u Hz (mode %s), every %.1f s",
		session__what(&t.s), t.s.o.rate, profile__mode_name(t.s.o.mode),
		t.interval);
	t.start = t.last = clock__now_s();
	if (t.screen)
		t.screen = start_screen(&t);
	if (t.screen)
		draw(&t);
	err = run_loop(&t);
	restore_terminal();
	if (err)
		pr_err("failed to tally the interval: %s",
		       strerror(-err));
	else if (t.targets_gone)	/* why the screen went away */
		pr_info("%s exited", t.s.o.command ?
			t.s.o.command[0] : "the given processes");

cleanup:
	restore_terminal();
	sig = exiting;
	/* quitting top stops the command it started */
	session__close(&t.s, SIGTERM, false);
	topview__free(t.view);
	if (t.scr)
		delscreen(t.scr);
	if (sig == SIGTERM || sig == SIGHUP) {	/* die of it, as asked */
		session__catch(sig, SIG_DFL, 0);
		raise(sig);
	}
	return err != 0;
}
