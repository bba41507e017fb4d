/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The Python processes we know about, and the BPF maps that mirror them. */
#ifndef __PYSIGHT_REGISTRY_H
#define __PYSIGHT_REGISTRY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"
#include "sampler.h"

struct pyproc {
	pid_t pid;
	pid_t ns_pid;			/* as its own pid namespace sees it */
	int state;			/* enum py_proc_state */
	int minor;
	struct py_proc proc;
	char comm[PYSIGHT_COMM_LEN + 1];	/* the process's name */
	char cwd[PATH_MAX];
	char err[256];			/* why it is ignored */
};

struct registry;

/* s may be NULL: nothing is mirrored into BPF maps then (tests).
 * open_threads: off-CPU modes, where a process's threads already off
 * the CPU when it is found start their intervals then. */
struct registry *registry__new(struct sampler *s, bool open_threads);
void registry__free(struct registry *r);

/* BPF saw a pid it does not know, or it exec'ed: inspect it. */
void registry__discover(struct registry *r, pid_t pid);
/* -p PID: inspect now; on failure -errno and the reason in err. */
int registry__add(struct registry *r, pid_t pid, char *err, size_t errlen);
/* A command about to exec path (pid: the child that will): when path
 * is an interpreter BPF can configure by itself, tell BPF now, so the
 * process is sampled from its exec, not once user space has looked. */
int registry__expect_exe(struct registry *r, const char *path, pid_t pid);
/* A process BPF configured by itself (EV_ADOPTED): known from now on,
 * until its exit, so samples read after that are still its; or, not
 * Python, forgotten. */
void registry__adopt(struct registry *r, pid_t pid, const struct py_proc *proc);
/* The process, or NULL.  Processes BPF configured by itself (a known
 * interpreter binary, a fork) are read back from its map. */
const struct pyproc *registry__get(struct registry *r, pid_t pid);
void registry__exit(struct registry *r, pid_t pid);
struct async_layout;
/* --asyncio: from now on, BPF says which frames of each sample of pid
 * are its running task's (l: where its tasks are).  0, -ESRCH (not a
 * known Python process), -ERANGE (offsets BPF cannot hold). */
int registry__set_async(struct registry *r, pid_t pid,
			const struct async_layout *l);
/* Inspect every process on the host now (off-CPU modes: a process that
 * never runs is never sampled, and so never found otherwise). */
void registry__scan(struct registry *r);
/* Retry inspections that were too early (libpython not yet mapped). */
void registry__tick(struct registry *r);

/* Are inspections waiting for a retry (poll sooner)? */
bool registry__retrying(const struct registry *r);

unsigned int registry__npython(const struct registry *r);
/* The Python processes' pids, max of them at most into out; returns how
 * many there are. */
unsigned int registry__pythons(const struct registry *r, pid_t *out,
			       unsigned int max);
/* Entries held: pending and Python processes. */
unsigned int registry__size(const struct registry *r);
/* The first reason a process was refused, for the summary. */
const char *registry__first_error(const struct registry *r);

#endif /* __PYSIGHT_REGISTRY_H */
