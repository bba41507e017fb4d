/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cgroup v2: where it is mounted, what a path names, a task's cgroup. */
#ifndef __PYSIGHT_CGROUP_H
#define __PYSIGHT_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct cgroup_ref {
	uint64_t id;		/* the directory's inode: BPF's cgroup id */
	unsigned int level;	/* 0 for the root */
	char path[PATH_MAX];	/* relative to the v2 mount, "/" for the root */
};

/* The v2 hierarchy's mount point: /sys/fs/cgroup on a pure v2 host,
 * /sys/fs/cgroup/unified on a hybrid one.  -ENOENT on a v1-only host. */
int cgroup__v2_mount(char *buf, size_t len);

/* --cgroup PATH: a full path, or one relative to the v2 mount.  -errno
 * with a one-line reason naming the path in err. */
int cgroup__resolve(const char *arg, struct cgroup_ref *out, char *err,
		    size_t errlen);

/* The v2 cgroup of pid, relative to the mount (its "0::" line). */
int cgroup__path_of_pid(pid_t pid, char *path, size_t len);
/* The same from a /proc/PID/cgroup open at f: 0, or -ENOENT. */
int cgroup__path_in(FILE *f, char *path, size_t len);
/* The same, only when that cgroup's id is id (pid may have moved
 * since): 0, or -errno. */
int cgroup__of_pid(pid_t pid, uint64_t id, char *path, size_t len);

/* Call fn for each cgroup under the v2 mount (depth first, at most 32
 * deep).  fn returns non-zero to stop. */
int cgroup__walk(int (*fn)(const struct cgroup_ref *cg, void *ctx), void *ctx);

#endif /* __PYSIGHT_CGROUP_H */
