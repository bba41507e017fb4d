// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight dump: the Python stack of every thread of a process, now,
 * without stopping it.  Threads come from BPF's task iterator (the one
 * wall mode uses), which says whether each is running and why it is not;
 * stacks are read from user space, read again until two reads agree.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "asynctasks.h"
#include "collector.h"
#include "commands.h"
#include "jsontext.h"
#include "labels.h"
#include "log.h"
#include "privs.h"
#include "pylocals.h"
#include "registry.h"
#include "stackread.h"
#include "usage.h"
#include "utf8.h"

#define MAX_PIDS 64
#define MAX_LOCALS 32	/* per frame */

struct dump_opts {
	pid_t pids[MAX_PIDS];
	int npids;
	bool json;
	bool locals;
	bool tasks;
	bool native;
};

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "The process to dump (repeatable; default every Python process)", 0 },
	{ "json", 'j', NULL, 0, "One JSON document, for scripts", 0 },
	{ "locals", 'l', NULL, 0, "Each frame's local variables, with short values of simple types", 0 },
	{ "tasks", 't', NULL, 0, "The asyncio tasks instead (Python 3.11+): who awaits whom, each task's state and coroutines", 0 },
	{ "native", 'n', NULL, 0, "Native frames too, for threads off the CPU: the C, C++ or Rust code between the Python frames and the system call it waits in", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct dump_opts *o = state->input;
	pid_t pid;

	switch (key) {
	case 'p':
		pid = parse_pid("--pid", arg);
		if (o->npids == MAX_PIDS)
			bad_value("--pid", arg, "at most 64 processes");
		o->pids[o->npids++] = pid;
		break;
	case 'j':
		o->json = true;
		break;
	case 'l':
		o->locals = true;
		break;
	case 't':
		o->tasks = true;
		break;
	case 'n':
		o->native = true;
		break;
	case ARGP_KEY_ARG:
		usage_error("unexpected argument '%s' (give processes with -p)", arg);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The locals of one frame. */
struct flocals {
	struct pylocal *vars;
	int n;			/* < 0: could not be read */
};

/* A thread as dumped: the snapshot without its borrowed pointers. */
struct dthread {
	struct thread_snapshot t;
	char comm[PYSIGHT_COMM_LEN + 1];	/* the process's */
	int minor;
	struct flocals *locals;	/* by frame, leaf first; NULL without */
	int nlocals;
};

/* A process's asyncio tasks (--tasks). */
struct dtasks {
	pid_t pid;
	int minor;
	char comm[PYSIGHT_COMM_LEN + 1];
	struct async_layout al;
	struct async_tasks t;
};

struct dump {
	struct dthread *threads;
	size_t n, cap;
	unsigned int no_python;		/* threads with no thread state */
	bool locals;
	struct dtasks *tasks;		/* one per -p; NULL without --tasks */
	int ntasks;
	struct collector *c;		/* names the tasks' frames */
};

/* Every frame's locals, read now, while the frames are where they were. */
static int read_locals(const struct thread_snapshot *t, struct dthread *dt)
{
	const struct stackread *sr = t->raw;
	struct pylocal buf[MAX_LOCALS];
	int i, n;

	dt->locals = calloc(sr->n ? sr->n : 1, sizeof(*dt->locals));
	if (!dt->locals)
		return -ENOMEM;
	dt->nlocals = sr->n;
	for (i = 0; i < sr->n; i++) {
		n = pylocals__read(t->pid, &t->proc->proc, sr->addr[i],
				   sr->frames[i].code, buf, MAX_LOCALS);
		dt->locals[i].n = n;
		if (n <= 0)
			continue;
		dt->locals[i].vars = malloc(n * sizeof(buf[0]));
		if (!dt->locals[i].vars)
			return -ENOMEM;
		memcpy(dt->locals[i].vars, buf, n * sizeof(buf[0]));
	}
	return 0;
}

static void dump_free(struct dump *d)
{
	size_t i;
	int j;

	for (j = 0; j < d->ntasks; j++) {
		asynctasks__free(&d->tasks[j].t);
		asynctasks__close(&d->tasks[j].al);
	}
	free(d->tasks);
	for (i = 0; i < d->n; i++) {
		for (j = 0; j < d->threads[i].nlocals; j++)
			free(d->threads[i].locals[j].vars);
		free(d->threads[i].locals);
	}
	free(d->threads);
}

static int keep_thread(void *ctx, const struct thread_snapshot *t)
{
	struct dump *d = ctx;
	struct dthread *nt;

	if (t->status == ST_NO_TSTATE) {
		d->no_python++;
		return 0;
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 32;
		nt = realloc(d->threads, d->cap * sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		d->threads = nt;
	}
	nt = &d->threads[d->n++];
	nt->t = *t;
	nt->t.raw = NULL;
	nt->t.proc = NULL;
	snprintf(nt->comm, sizeof(nt->comm), "%s", t->proc->comm);
	nt->minor = t->proc->minor;
	nt->locals = NULL;
	nt->nlocals = 0;
	return d->locals ? read_locals(t, nt) : 0;
}

/* Processes by pid; the main thread first, then by tid. */
static int by_pid_tid(const void *pa, const void *pb)
{
	const struct dthread *a = pa, *b = pb;

	if (a->t.pid != b->t.pid)
		return a->t.pid < b->t.pid ? -1 : 1;
	if ((a->t.tid == a->t.pid) != (b->t.tid == b->t.pid))
		return a->t.tid == a->t.pid ? -1 : 1;
	return a->t.tid < b->t.tid ? -1 : a->t.tid > b->t.tid;
}

static const char *state_of(const struct thread_snapshot *t)
{
	if (t->on_cpu)
		return "running";
	switch (t->kind) {
	case KIND_RUNQUEUE:
		return "runnable, waiting for a CPU";
	case KIND_GIL:
		return "waiting for the GIL";
	case KIND_SLEEP:
		return "sleeping";
	case KIND_LOCK:
		return "waiting on a lock";
	case KIND_IO:
		return "waiting on I/O";
	default:
		return "idle";
	}
}

/* The process's command line, NULs as spaces. */
static void cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	size_t n = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	while (n && !buf[n - 1])
		n--;
	for (i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
}

/* The locals of the k-th frame from the leaf, or NULL. */
static const struct flocals *locals_at(const struct dthread *t, unsigned int k)
{
	return t->locals && (int)k < t->nlocals ? &t->locals[k] : NULL;
}

static void print_frames(const struct dthread *t)
{
	const struct pstack *s = t->t.stack;
	const struct flocals *fl;
	char text[LABEL_MAX];
	unsigned int i;
	int v;

	if (!s && t->t.status >= ST_ERR_READ_RUNTIME) {
		/* a lie or a race, not an idle thread: say which */
		printf("    (no stack: %s)\n",
		       collector__status_name(t->t.status));
		return;
	}
	if (!s) {
		printf("    (no Python frames)\n");
		return;
	}
	/* every name and value is the target's: escaped for the terminal */
	for (i = s->n; i-- > 0;) {
		labels__frame(s->frames[i], text, sizeof(text));
		fputs("    ", stdout);
		utf8__fputs_escaped(text, stdout);
		putchar('\n');
		fl = locals_at(t, s->n - 1 - i);
		for (v = 0; fl && v < fl->n; v++) {
			fputs("        ", stdout);
			utf8__fputs_escaped(fl->vars[v].name, stdout);
			fputs(" = ", stdout);
			utf8__fputs_escaped(fl->vars[v].value, stdout);
			putchar('\n');
		}
	}
	if (t->t.torn)
		printf("    [torn: the stack changed while it was read; it may mix two moments]\n");
}

static void print_text(const struct dump *d)
{
	char cmd[512], esc[UTF8_ESC_SIZE(512)];
	size_t i;

	for (i = 0; i < d->n; i++) {
		const struct dthread *t = &d->threads[i];

		if (!i || t->t.pid != d->threads[i - 1].t.pid) {
			cmdline(t->t.pid, cmd, sizeof(cmd));
			printf("%sProcess %d: %s\nPython 3.%d\n", i ? "\n" : "",
			       t->t.pid, utf8__escape(esc, sizeof(esc),
						      cmd[0] ? cmd : t->comm),
			       t->minor);
		}
		printf("\nThread %d \"%s\" (%s%s)\n", t->t.tid,
		       utf8__escape(esc, sizeof(esc), t->t.name),
		       state_of(&t->t), t->t.holds_gil ? ", holds the GIL" : "");
		print_frames(t);
	}
}

static json_object *locals_json(const struct flocals *fl)
{
	json_object *o = json_object_new_object();
	int v;

	for (v = 0; v < fl->n; v++)
		json_text_add(o, fl->vars[v].name, json_text(fl->vars[v].value));
	return o;
}

static json_object *frames_json(const struct dthread *t)
{
	const struct pstack *s = t->t.stack;
	json_object *a = json_object_new_array();
	unsigned int i;

	for (i = s ? s->n : 0; a && i-- > 0;) {
		const struct pframe *f = s->frames[i];
		const struct flocals *fl = locals_at(t, s->n - 1 - i);
		json_object *o = json_object_new_object();

		if (fl && fl->n >= 0)
			json_object_object_add(o, "locals", locals_json(fl));
		json_object_object_add(o, "name", json_text(f->name));
		json_object_object_add(o, "file", f->file ? json_text(f->file) : NULL);
		json_object_object_add(o, "line", f->line ?
				       json_object_new_int(f->line) : NULL);
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *thread_json(const struct dthread *t)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "tid", json_object_new_int(t->t.tid));
	json_object_object_add(o, "name", json_text(t->t.name));
	json_object_object_add(o, "state", json_object_new_string(state_of(&t->t)));
	json_object_object_add(o, "on_cpu", json_object_new_boolean(t->t.on_cpu));
	json_object_object_add(o, "holds_gil", json_object_new_boolean(t->t.holds_gil));
	json_object_object_add(o, "torn", json_object_new_boolean(t->t.torn));
	json_object_object_add(o, "status", json_object_new_string(
		collector__status_name(t->t.status)));
	json_object_object_add(o, "frames", frames_json(t));
	return o;
}

static int print_json(const struct dump *d)
{
	json_object *doc = json_object_new_object();
	json_object *procs = json_object_new_array(), *proc = NULL, *threads = NULL;
	char cmd[512], ver[16];
	size_t i;

	for (i = 0; i < d->n; i++) {
		const struct dthread *t = &d->threads[i];

		if (!i || t->t.pid != d->threads[i - 1].t.pid) {
			proc = json_object_new_object();
			threads = json_object_new_array();
			cmdline(t->t.pid, cmd, sizeof(cmd));
			json_object_object_add(proc, "pid", json_object_new_int(t->t.pid));
			json_object_object_add(proc, "name", json_text(t->comm));
			json_object_object_add(proc, "cmdline", json_text(cmd));
			snprintf(ver, sizeof(ver), "3.%d", t->minor);
			json_object_object_add(proc, "python", json_object_new_string(ver));
			json_object_object_add(proc, "threads", threads);
			json_object_array_add(procs, proc);
		}
		json_object_array_add(threads, thread_json(t));
	}
	json_object_object_add(doc, "processes", procs);
	puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return 0;
}

#define TREE_DEPTH	64	/* tasks awaiting tasks, shown at most */

struct tree {
	const struct dump *d;
	const struct dtasks *dt;
	struct async_awaited by;
	char *shown;
};

static int tree_build(struct tree *tr)
{
	tr->shown = calloc(tr->dt->t.n + 1, 1);
	if (!tr->shown)
		return -ENOMEM;
	return asynctasks__awaited(&tr->dt->t, &tr->by);
}

static void tree_free(struct tree *tr)
{
	asynctasks__awaited_free(&tr->by);
	free(tr->shown);
}

/* The task's coroutines, named as a sample's frames: root first. */
static const struct pstack *task_stack(const struct dump *d,
				       const struct dtasks *dt,
				       const struct async_task *t)
{
	if (!t->nframes && t->status == ST_COMPLETE)
		return NULL;
	return collector__name_frames(d->c, dt->pid, t->status, t->frames,
				      t->nframes);
}

static void print_task(struct tree *tr, int i, int depth)
{
	const struct async_task *t = &tr->dt->t.tasks[i];
	const struct pstack *s;
	char text[LABEL_MAX];
	int ind = 2 + 2 * depth, k;
	unsigned int f;

	printf("%*sTask \"", ind, "");
	utf8__fputs_escaped(t->name, stdout);
	printf("\" (%s", asynctasks__state_name(t->state));
	if (t->awaits[0]) {
		fputs(" on ", stdout);
		utf8__fputs_escaped(t->awaits, stdout);
	}
	putchar(')');
	/* a task awaited by two, or by its own awaiter (a cycle) */
	if (tr->shown[i]) {
		puts(", shown above");
		return;
	}
	putchar('\n');
	tr->shown[i] = 1;
	s = task_stack(tr->d, tr->dt, t);
	if (!s)
		printf("%*s(no coroutine frames)\n", ind + 4, "");
	for (f = s ? s->n : 0; f-- > 0;) {
		labels__frame(s->frames[f], text, sizeof(text));
		printf("%*s", ind + 4, "");
		utf8__fputs_escaped(text, stdout);
		putchar('\n');
	}
	if (t->awaiters_cut)
		printf("%*s[awaited by more than shown]\n", ind + 4, "");
	if (depth == TREE_DEPTH) {
		if (tr->by.first[i + 1] > tr->by.first[i])
			printf("%*s[deeper tasks not shown]\n", ind + 2, "");
		return;
	}
	for (k = tr->by.first[i]; k < tr->by.first[i + 1]; k++)
		print_task(tr, tr->by.tasks[k], depth + 1);
}

static const char *thread_name_of(const struct dump *d, pid_t pid, __u64 key)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->threads[i].t.pid == pid &&
		    (__u64)d->threads[i].t.tid == key)
			return d->threads[i].t.name;
	return NULL;
}

/* Roots (tasks no task read awaits) thread by thread, in list order;
 * then whatever only a cycle reaches. */
static int print_tasks_of(const struct dump *d, const struct dtasks *dt)
{
	const struct async_tasks *t = &dt->t;
	struct tree tr = { .d = d, .dt = dt };
	char esc[UTF8_ESC_SIZE(THREADNAME_LEN)];
	const char *name;
	bool cycles = false;
	int i, j;

	if (tree_build(&tr)) {
		tree_free(&tr);
		return -ENOMEM;
	}
	printf("%d task%s", t->n, t->n == 1 ? "" : "s");
	if (t->partial)
		printf(" [partial: %s]", t->why);
	putchar('\n');
	for (i = 0; i < t->n; i++) {
		__u64 key = t->tasks[i].thread_key;

		/* a thread's header at its first task */
		for (j = 0; j < i && t->tasks[j].thread_key != key; j++)
			;
		if (j < i)
			continue;
		name = key ? thread_name_of(d, dt->pid, key) : NULL;
		if (!key)
			printf("\nTasks of threads that exited\n");
		else if (name)
			printf("\nThread %llu \"%s\"\n", (unsigned long long)key,
			       utf8__escape(esc, sizeof(esc), name));
		else
			printf("\nThread %llu\n", (unsigned long long)key);
		for (j = i; j < t->n; j++)
			if (t->tasks[j].thread_key == key &&
			    !asynctasks__has_awaiter(t, j))
				print_task(&tr, j, 0);
	}
	for (i = 0; i < t->n; i++) {
		if (tr.shown[i])
			continue;
		if (!cycles)
			printf("\nTasks in await cycles\n");
		cycles = true;
		print_task(&tr, i, 0);
	}
	tree_free(&tr);
	return 0;
}

static void print_tasks_text(const struct dump *d)
{
	char cmd[512], esc[UTF8_ESC_SIZE(512)];
	int i;

	for (i = 0; i < d->ntasks; i++) {
		const struct dtasks *dt = &d->tasks[i];

		cmdline(dt->pid, cmd, sizeof(cmd));
		printf("%sProcess %d: %s\nPython 3.%d\n", i ? "\n" : "",
		       dt->pid, utf8__escape(esc, sizeof(esc),
					     cmd[0] ? cmd : dt->comm),
		       dt->minor);
		print_tasks_of(d, dt);
	}
}

static json_object *hex_json(__u64 addr)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
	return json_object_new_string(buf);
}

static json_object *task_json(const struct dump *d, const struct dtasks *dt,
			      const struct async_task *t)
{
	json_object *o = json_object_new_object();
	json_object *fr = json_object_new_array();
	json_object *by = json_object_new_array();
	const struct pstack *s = task_stack(d, dt, t);
	unsigned int f;
	int j;

	json_object_object_add(o, "address", hex_json(t->addr));
	json_object_object_add(o, "name", json_text(t->name));
	json_object_object_add(o, "thread", json_object_new_int64(
		(int64_t)t->thread_key));
	json_object_object_add(o, "state", json_object_new_string(
		asynctasks__state_name(t->state)));
	json_object_object_add(o, "awaits", t->awaits[0] ?
			       json_text(t->awaits) : NULL);
	json_object_object_add(o, "status", json_object_new_string(
		collector__status_name(t->status)));
	for (f = s ? s->n : 0; f-- > 0;) {
		const struct pframe *pf = s->frames[f];
		json_object *fo = json_object_new_object();

		json_object_object_add(fo, "name", json_text(pf->name));
		json_object_object_add(fo, "file", pf->file ?
				       json_text(pf->file) : NULL);
		json_object_object_add(fo, "line", pf->line ?
				       json_object_new_int(pf->line) : NULL);
		json_object_array_add(fr, fo);
	}
	json_object_object_add(o, "frames", fr);
	for (j = 0; j < t->nawaiters; j++)
		json_object_array_add(by, hex_json(t->awaiters[j]));
	json_object_object_add(o, "awaited_by", by);
	json_object_object_add(o, "awaited_by_cut",
			       json_object_new_boolean(t->awaiters_cut));
	return o;
}

static void print_tasks_json(const struct dump *d)
{
	json_object *doc = json_object_new_object();
	json_object *procs = json_object_new_array();
	char cmd[512], ver[16];
	int i, j;

	for (i = 0; i < d->ntasks; i++) {
		const struct dtasks *dt = &d->tasks[i];
		json_object *p = json_object_new_object();
		json_object *tasks = json_object_new_array();

		cmdline(dt->pid, cmd, sizeof(cmd));
		json_object_object_add(p, "pid", json_object_new_int(dt->pid));
		json_object_object_add(p, "name", json_text(dt->comm));
		json_object_object_add(p, "cmdline", json_text(cmd));
		snprintf(ver, sizeof(ver), "3.%d", dt->minor);
		json_object_object_add(p, "python", json_object_new_string(ver));
		for (j = 0; j < dt->t.n; j++)
			json_object_array_add(tasks, task_json(d, dt,
							       &dt->t.tasks[j]));
		json_object_object_add(p, "tasks", tasks);
		json_object_object_add(p, "partial", json_object_new_boolean(
			dt->t.partial));
		json_object_object_add(p, "why", dt->t.partial ?
				       json_text(dt->t.why) : NULL);
		json_object_array_add(procs, p);
	}
	json_object_object_add(doc, "processes", procs);
	puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
}

/*
 * --tasks, while files may still be opened: is each process's asyncio
 * readable?  0, or 1 after saying why in one line.
 */
static int locate_tasks(struct collector *c, struct dump_opts *o,
			struct dump *d)
{
	const struct pyproc *pp;
	char err[512];
	int i;

	d->tasks = calloc(o->npids, sizeof(*d->tasks));
	if (!d->tasks)
		return 1;
	for (i = 0; i < o->npids; i++) {
		struct dtasks *dt = &d->tasks[d->ntasks];

		pp = collector__process(c, o->pids[i]);
		if (!pp)
			continue;
		if (pp->minor < ASYNC_FIRST_MINOR) {
			pr_err("process %d runs Python 3.%d: listing its tasks needs Python 3.%d or newer",
			       o->pids[i], pp->minor, ASYNC_FIRST_MINOR);
			return 1;
		}
		if (asynctasks__open(o->pids[i], &pp->proc, pp->minor, &dt->al,
				     err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		dt->pid = o->pids[i];
		dt->minor = pp->minor;
		snprintf(dt->comm, sizeof(dt->comm), "%s", pp->comm);
		d->ntasks++;
	}
	return 0;
}

/* Each process's tasks, read now: 0, or 1 after saying why. */
static int read_tasks(struct collector *c, struct dump *d)
{
	const struct pyproc *pp;
	int i, ret;

	for (i = 0; i < d->ntasks; i++) {
		struct dtasks *dt = &d->tasks[i];

		pp = collector__process(c, dt->pid);
		ret = pp ? asynctasks__read(dt->pid, &pp->proc, &dt->al,
					    &dt->t) : -ESRCH;
		if (ret) {
			pr_err("failed to read the tasks of process %d: %s",
			       dt->pid, ret == -ESRCH ? "it exited" :
			       strerror(-ret));
			return 1;
		}
	}
	return 0;
}

/* Setup is over: what dump does not use is given up, and not fatally. */
static void drop_privileges(enum privs_keep keep)
{
	int err = privs__drop(keep);

	if (err)
		pr_warn("could not drop capabilities: %s",
			strerror(-err));
}

/*
 * 0, or 1 after saying why in one line.  The Pythons are found first,
 * which opens files of any owner; then, holding only what reading their
 * memory needs, their stacks and objects, the most hostile bytes here.
 */
static int collect(struct collector *c, struct dump_opts *o, struct dump *d)
{
	char err[512];
	int i, ret = 0;

	drop_privileges(PRIVS_FIND);
	if (!o->npids)
		collector__scan(c);
	for (i = 0; i < o->npids; i++) {
		if (collector__add_pid(c, o->pids[i], err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
	}
	if (o->tasks && locate_tasks(c, o, d))
		return 1;
	drop_privileges(PRIVS_READ);
	if (o->tasks && read_tasks(c, d))
		return 1;
	if (!o->npids)
		ret = collector__snapshot(c, 0, keep_thread, d);
	for (i = 0; i < o->npids && ret >= 0; i++)
		ret = collector__snapshot(c, o->pids[i], keep_thread, d);
	if (ret < 0) {
		pr_err("failed to read threads: %s",
		       strerror(-ret));
		return 1;
	}
	if (!d->n) {
		pr_err("%s", o->npids ?
		       "no Python threads found in that process" :
		       "no Python processes found");
		return 1;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	const struct argp argp = { options, parse_opt, NULL,
				   "Print the Python stack of every thread of a process, without stopping it.",
				   NULL, NULL, NULL };
	struct collector_opts co = { .rate_hz = 100, .mode = MODE_WALL };
	struct dump_opts o = {};
	struct collector *c = NULL;
	struct dump d = {};
	char err[512];
	int ret;

	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	d.locals = o.locals;
	if (o.tasks && !o.npids)
		usage_error("--tasks needs the process: give it with -p");
	if (o.tasks && o.locals)
		usage_error("--tasks and --locals do not go together");
	if (o.native && (o.tasks || o.locals))
		usage_error("--native goes with neither --tasks nor --locals yet");
	co.native = o.native;
	if (privs__check())
		return 1;
	co.filter_pids = o.npids > 0;
	ret = collector__open(&co, &c, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		return 1;
	}
	d.c = c;
	ret = collect(c, &o, &d);
	if (!ret) {
		qsort(d.threads, d.n, sizeof(*d.threads), by_pid_tid);
		if (o.tasks && o.json)
			print_tasks_json(&d);
		else if (o.tasks)
			print_tasks_text(&d);
		else if (o.json)
			print_json(&d);
		else
			print_text(&d);
	}
	dump_free(&d);
	collector__free(c);
	return ret;
}
