/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The files a process maps (/proc/PID/maps), opened as exactly those. */
#ifndef __PYSIGHT_PROCMAPS_H
#define __PYSIGHT_PROCMAPS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <linux/types.h>

#include "pysight.h"

/* A line of /proc/PID/maps that maps a file. */
struct mapping {
	uint64_t start, end, offset;
	unsigned int dev_major, dev_minor;
	uint64_t ino;
	bool exec;		/* mapped executable (r-xp) */
	char path[PATH_MAX];	/* as the process sees it, DELETED cut */
};

/* A read-only descriptor on exactly the file mapped at m (its inode
 * checked), and its stat: -errno.  is_exe: m maps the process's program
 * file, which /proc/PID/exe reaches too.  Opens files of any owner: call
 * it while the privileges to find processes are held. */
int procmaps__open(pid_t pid, const struct mapping *m, bool is_exe,
		   struct stat *st);

/* 0, or -EINVAL when line (which it cuts at its newline) maps no file. */
int procmaps__parse(char *line, struct mapping *m);

/* Each file process pid maps, in address order, given to fn until it
 * returns nonzero: that value, 0 after the last, or -errno when
 * /proc/PID/maps cannot be read. */
int procmaps__each(pid_t pid, int (*fn)(void *ctx, const struct mapping *m),
		   void *ctx);

/* A path as /proc shows a replaced file, "path (deleted)": the mark cut. */
void procmaps__cut_deleted(char *path);

/* The regular file at path inside the root rootfd, of 1 to max bytes,
 * opened read-only (and its stat): nothing else is ever opened, so a
 * planted device or FIFO has no effect.  -EINVAL for another kind of
 * file or size, or -errno. */
int procmaps__regular_in_root(int rootfd, const char *path, uint64_t max,
			      struct stat *st);

/* Open path read-only as seen from the root rootfd, never leaving it
 * (RESOLVE_IN_ROOT): absolute symlinks and ".." stay inside.  -errno. */
int procmaps__open_in_root(int rootfd, const char *path);

/* Kernel dev_t encoding (MKDEV) of a user-space st_dev. */
__u64 procmaps__kernel_dev(dev_t dev);
/* A file's identity as BPF computes it from the inode. */
void procmaps__file_key(const struct stat *st, struct py_binary_key *key);

#endif /* __PYSIGHT_PROCMAPS_H */
