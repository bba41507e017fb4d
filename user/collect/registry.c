// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <uthash.h>

#include "asynctasks.h"
#include "clock.h"
#include "hashfree.h"
#include "log.h"
#include "process.h"
#include "procmaps.h"
#include "registry.h"

#define RETRY_NS	(5 * 1000000ULL)
#define MAX_RETRIES	40		/* 200 ms of a loader at work */
#define MAX_EXEC_RACES	4		/* execs seen while inspecting once */

struct entry {
	struct pyproc p;
	bool counted;		/* in npython: processes, not images */
	int retries;
	unsigned long long next_ns;
	UT_hash_handle hh;
};

struct registry {
	struct sampler *sampler;
	struct interp_cache *interps;
	struct entry *map;
	unsigned int retrying;		/* entries with a retry due */
	unsigned int npython;
	bool open_threads;	/* off-CPU modes: a new process's blocked
				 * threads start their intervals now */
	char first_err[256];
};

struct registry *registry__new(struct sampler *s, bool open_threads)
{
	struct registry *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->sampler = s;
	r->open_threads = open_threads;
	r->interps = interp_cache__new();
	if (!r->interps) {
		free(r);
		return NULL;
	}
	return r;
}

void registry__free(struct registry *r)
{
	if (!r)
		return;
	HASH_FREE_ALL(r->map);
	interp_cache__free(r->interps);
	free(r);
}

static struct entry *get_entry(struct registry *r, pid_t pid)
{
	struct entry *e;

	HASH_FIND_INT(r->map, &pid, e);
	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->p.pid = pid;
	e->p.state = PY_PROC_PENDING;
	HASH_ADD_INT(r->map, p.pid, e);
	return e;
}

/* What labels and short file names need: cwd, name, namespace pid. */
static void read_identity(struct pyproc *pp)
{
	char path[64], line[256];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cwd", pp->pid);
	n = readlink(path, pp->cwd, sizeof(pp->cwd) - 1);
	pp->cwd[n > 0 ? n : 0] = 0;
	pp->comm[0] = 0;
	pp->ns_pid = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", pp->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Name:\t", 6))
			snprintf(pp->comm, sizeof(pp->comm), "%.*s",
				 (int)strcspn(line + 6, "\n"), line + 6);
		else if (!strncmp(line, "NSpid:", 6)) {
			pid_t v = process__nspid(line);

			pp->ns_pid = v != pp->pid ? v : 0;
		}
	}
	fclose(f);
}

/* The entry is a Python process with these facts, seen by user space
 * or configured by BPF itself; count each process once. */
static void mark_python(struct registry *r, struct entry *e,
			const struct py_proc *proc)
{
	e->p.state = PY_PROC_PYTHON;
	e->p.proc = *proc;
	e->p.minor = (proc->off.version_hex >> 16) & 0xff;
	read_identity(&e->p);
	if (!e->counted)
		r->npython++;
	e->counted = true;
}

/* Threads of a process just known to be Python that are off the CPU
 * already: their time off starts counting now. */
static void open_threads(struct registry *r, pid_t pid)
{
	if (r->open_threads)
		sampler__threads(r->sampler, ITER_OPEN, pid, NULL, NULL);
}

/* Has pid exited (gone, or a zombie: its exit hook has run)? */
static bool exited(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/*
 * Mirror an entry into the BPF map; a full map is worth saying.  BPF drops
 * a process's entry when it exits; one that exited while we inspected it
 * must not get an entry after that, so look again once it is written.
 */
static int set_proc(struct registry *r, pid_t pid, const struct py_proc *proc)
{
	int err = sampler__set_proc(r->sampler, pid, proc);

	if (!err && exited(pid))
		sampler__delete_proc(r->sampler, pid);
	return err;
}

static void publish(struct registry *r, struct entry *e)
{
	int err = set_proc(r, e->p.pid, &e->p.proc);

	if (err && err != -ENODEV)
		pr_debug("failed to configure pid %d in BPF: %s", e->p.pid,
			 strerror(-err));
}

static void set_python(struct registry *r, struct entry *e,
		       const struct pyproc_info *info)
{
	int err;

	mark_python(r, e, &info->proc);
	/* cache code objects only once their deallocs are being watched */
	if (!sampler__watch_code_free(r->sampler, &info->interp_key,
				      info->interp_fd, info->code_free_offset,
				      e->p.pid))
		e->p.proc.flags |= PY_PROC_F_CODE_CACHE;
	else
		pr_debug("no code object cache for pid %d", e->p.pid);
	publish(r, e);
	open_threads(r, e->p.pid);
	if (info->exe_reusable) {
		err = sampler__set_binary(r->sampler, &info->exe_key,
					  &e->p.proc);
		if (err && err != -ENODEV)
			pr_debug("failed to remember %s in BPF: %s",
				 info->interp_path, strerror(-err));
	}
	pr_debug("pid %d is Python 3.%d (%s)", e->p.pid, info->minor,
		 info->interp_path);
}

static void forget(struct registry *r, struct entry *e)
{
	if (e->next_ns && r->retrying)
		r->retrying--;
	HASH_DEL(r->map, e);
	free(e);
}

/*
 * Did pid exec since it was inspected?  BPF configures a new image at its
 * exec (from the binary map when it knows the file), and what we wrote
 * about the old one after that must not stand: a command run through
 * env(1), or a child exec'ing once released, was seen as env or as
 * pysight and set ignored just after it had become Python.  Asked after
 * the write: an exec after this check rewrites the entry itself.
 */
static bool exec_raced(pid_t pid, const struct pyproc_info *info)
{
	struct py_binary_key now;
	char path[64];
	struct stat st;

	if (!info->exe_known)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st))
		return false;	/* gone: its exit cleans up */
	procmaps__file_key(&st, &now);
	return memcmp(&now, &info->exe_key, sizeof(now)) != 0;
}

/* Not Python, or not one we can sample: BPF keeps the answer, and user
 * space forgets the process at once, so host-wide exec storms leave
 * nothing behind.  An executable that is not Python at all is also
 * remembered by BPF, so its next execs cost no event.  true when the
 * process exec'd meanwhile: it is kept, to be inspected again. */
static bool set_ignored(struct registry *r, struct entry *e,
			const struct pyproc_info *info, int why)
{
	struct py_proc ignored = { .state = PY_PROC_IGNORED };
	int err;

	/* a process already gone has no entry to keep */
	if (why == -ESRCH)
		sampler__delete_proc(r->sampler, e->p.pid);
	err = why == -ESRCH ? 0 : set_proc(r, e->p.pid, &ignored);
	if (err && err != -ENODEV)
		pr_debug("failed to configure pid %d in BPF: %s", e->p.pid,
			 strerror(-err));
	if (why == -ENOEXEC && info->exe_known)
		sampler__set_not_python(r->sampler, &info->exe_key);
	if (why != -ESRCH && exec_raced(e->p.pid, info))
		return true;
	forget(r, e);
	return false;
}

/* 0 done (either way), -EAGAIN try later. */
static int inspect(struct registry *r, struct entry *e)
{
	struct pyproc_info info;
	int ret, races = 0;
	char err[256];
	bool raced;

again:
	ret = process__inspect(r->interps, e->p.pid, &info, err, sizeof(err));
	if (!ret) {
		set_python(r, e, &info);
		raced = exec_raced(e->p.pid, &info);
		process__release(&info);
		if (raced && races++ < MAX_EXEC_RACES) {
			e->p.state = PY_PROC_PENDING;
			goto again;
		}
		return 0;
	}
	if (ret == -EAGAIN && e->retries++ < MAX_RETRIES) {
		e->next_ns = clock__now_ns() + RETRY_NS;
		r->retrying++;
		return -EAGAIN;
	}
	if (ret == -ENOTSUP || ret == -EAGAIN) {
		if (!r->first_err[0])
			snprintf(r->first_err, sizeof(r->first_err), "%s", err);
		pr_debug("skipping pid %d: %s", e->p.pid, err);
	}
	if (set_ignored(r, e, &info, ret)) {
		if (races++ < MAX_EXEC_RACES)
			goto again;
		forget(r, e);
	}
	return 0;
}

void registry__discover(struct registry *r, pid_t pid)
{
	struct entry *e = get_entry(r, pid);

	if (!e)
		return;
	e->p.state = PY_PROC_PENDING;
	e->retries = 0;
	e->next_ns = 0;
	inspect(r, e);
}

int registry__add(struct registry *r, pid_t pid, char *err, size_t errlen)
{
	struct pyproc_info info;
	struct entry *e;
	int ret;

	ret = process__inspect(r->interps, pid, &info, err, errlen);
	if (ret)
		return ret;
	e = get_entry(r, pid);
	if (e)
		set_python(r, e, &info);
	process__release(&info);
	return e ? 0 : -ENOMEM;
}

int registry__expect_exe(struct registry *r, const char *path, pid_t pid)
{
	struct pyproc_info info;
	struct py_proc p;
	int err;

	err = process__exec_facts(r->interps, path, &info);
	if (err)
		return err;
	p = info.proc;
	/* as set_python(): the code cache once deallocs are watched */
	if (!sampler__watch_code_free(r->sampler, &info.interp_key,
				      info.interp_fd, info.code_free_offset,
				      pid))
		p.flags |= PY_PROC_F_CODE_CACHE;
	err = sampler__set_binary(r->sampler, &info.exe_key, &p);
	if (!err)
		pr_debug("%s is Python 3.%d, known before it runs", path,
			 info.minor);
	process__release(&info);
	return err;
}

/* A process BPF configured by itself. */
static const struct pyproc *adopt(struct registry *r, pid_t pid,
				  const struct py_proc *proc)
{
	struct entry *e = get_entry(r, pid);

	if (!e)
		return NULL;
	if (e->next_ns && r->retrying)
		r->retrying--;
	e->next_ns = 0;		/* an inspection it no longer needs */
	mark_python(r, e, proc);
	open_threads(r, pid);
	return &e->p;
}

const struct pyproc *registry__get(struct registry *r, pid_t pid)
{
	struct entry *e;
	struct py_proc p;

	HASH_FIND_INT(r->map, &pid, e);
	if (e && e->p.state == PY_PROC_PYTHON)
		return &e->p;
	if (e && e->p.state == PY_PROC_PENDING && e->next_ns)
		return NULL;
	/* configured in the kernel from the binary map or by a fork, its
	 * EV_ADOPTED lost (a full ring) */
	if (sampler__get_proc(r->sampler, pid, &p) || p.state != PY_PROC_PYTHON)
		return NULL;
	return adopt(r, pid, &p);
}

void registry__adopt(struct registry *r, pid_t pid, const struct py_proc *proc)
{
	struct entry *e;

	if (proc->state == PY_PROC_PYTHON) {
		adopt(r, pid, proc);
		return;
	}
	HASH_FIND_INT(r->map, &pid, e);
	if (e)
		forget(r, e);
}

int registry__set_async(struct registry *r, pid_t pid,
			const struct async_layout *l)
{
	__u64 coro, name;
	struct entry *e;
	struct py_proc *p;

	HASH_FIND_INT(r->map, &pid, e);
	if (!e || e->p.state != PY_PROC_PYTHON)
		return -ESRCH;
	/* a task's coroutine and name: the table's before 3.14, else the
	 * section's.  BPF keeps them in 16 bits; the section was checked,
	 * not bounded. */
	coro = l->lo ? l->lo->task_coro : l->ao.task_coro;
	name = l->lo ? l->lo->task_name : l->ao.task_name;
	if (coro >= PY_OFF_NONE || name >= PY_OFF_NONE ||
	    l->go.gen_iframe >= PY_OFF_NONE ||
	    (!l->lo && (l->ao.tstate_running_task >= PY_OFF_NONE ||
			l->ao.task_awaited_by >= PY_OFF_NONE)))
		return -ERANGE;
	p = &e->p.proc;
	p->off.task_coro = coro;
	p->off.task_name = name;
	p->off.gen_iframe = l->go.gen_iframe;
	if (l->lo) {
		/* before 3.14: the task _current_tasks names whose coroutine
		 * is in the stack, else the root-most coroutine frame's */
		p->off.owner_generator = l->lo->owner_generator;
		p->async_current = l->current;
		p->flags |= PY_PROC_F_ASYNC_OUTER;
	} else {
		p->off.tstate_running_task = l->ao.tstate_running_task;
		p->off.task_awaited_by = l->ao.task_awaited_by;
		p->flags |= PY_PROC_F_ASYNC;
	}
	publish(r, e);
	return 0;
}

void registry__exit(struct registry *r, pid_t pid)
{
	struct entry *e;

	HASH_FIND_INT(r->map, &pid, e);
	if (e)
		forget(r, e);
	/* an answer written after BPF saw the exit would outlive it */
	sampler__delete_proc(r->sampler, pid);
}

static int scan_one(pid_t pid, void *ctx)
{
	registry__discover(ctx, pid);
	return 0;
}

void registry__scan(struct registry *r)
{
	process__each(scan_one, r);
}

unsigned int registry__size(const struct registry *r)
{
	return HASH_COUNT(r->map);
}

void registry__tick(struct registry *r)
{
	unsigned long long now = clock__now_ns();
	struct entry *e, *tmp;

	if (!r->retrying)
		return;
	r->retrying = 0;
	HASH_ITER(hh, r->map, e, tmp) {
		if (e->p.state != PY_PROC_PENDING || !e->next_ns)
			continue;
		if (now < e->next_ns) {
			r->retrying++;
			continue;
		}
		e->next_ns = 0;
		inspect(r, e);	/* may schedule another retry */
	}
}

bool registry__retrying(const struct registry *r)
{
	return r->retrying != 0;
}

unsigned int registry__npython(const struct registry *r)
{
	return r->npython;
}

unsigned int registry__pythons(const struct registry *r, pid_t *out,
			       unsigned int max)
{
	const struct entry *e, *tmp;
	unsigned int n = 0;

	HASH_ITER(hh, r->map, e, tmp) {
		if (e->p.state != PY_PROC_PYTHON || !e->counted)
			continue;
		if (n < max)
			out[n] = e->p.pid;
		n++;
	}
	return n;
}

const char *registry__first_error(const struct registry *r)
{
	return r->first_err[0] ? r->first_err : NULL;
}
