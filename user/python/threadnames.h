/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The names Python gives a process's threads: threading.Thread.name. */
#ifndef __PYSIGHT_THREADNAMES_H
#define __PYSIGHT_THREADNAMES_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

#define THREADNAME_LEN	64	/* bytes kept of a name, with its NUL */
#define THREADNAMES_MAX	PYSIGHT_MAX_THREADS	/* threads read of one process */

struct threadname {
	pid_t ns_tid;		/* Thread.native_id: its own namespace's tid */
	char name[THREADNAME_LEN];
};

/*
 * The named threads of the process: at most max into out, from the
 * threading module's table of live threads (threading._active).  *active
 * caches where that table is: 0 the first time, then kept and passed
 * back.  Returns how many, or -errno: -ENOENT when the process has not
 * imported threading, -ENOTSUP for an interpreter whose objects pysight
 * cannot read, -EFAULT when they do not check out.
 */
int threadnames__read(pid_t pid, const struct py_proc *proc, uint64_t *active,
		      struct threadname *out, int max);

/* tid's id in its own pid namespace, from /proc; 0 when it is gone. */
pid_t threadnames__ns_tid(pid_t pid, pid_t tid);

#endif /* __PYSIGHT_THREADNAMES_H */
