/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Inspecting a process: is it CPython, which version, where are its
 * interpreter facts.  Everything comes from /proc and the ELF files. */
#ifndef __PYSIGHT_PROCESS_H
#define __PYSIGHT_PROCESS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

struct pyproc_info {
	struct py_proc proc;		/* what BPF needs */
	struct py_binary_key exe_key;	/* the executable's identity */
	bool exe_known;			/* exe_key is set, Python or not */
	bool exe_reusable;		/* facts hold for any process of exe */
	int major, minor, micro;
	char interp_path[PATH_MAX];	/* file holding _PyRuntime, as mapped */
	int interp_fd;			/* open on that inode; -1 */
	struct py_binary_key interp_key; /* its identity */
	__u64 code_free_offset;		/* file offset of code_dealloc, or 0 */
};

/* What each interpreter file says, kept by identity so a host starting
 * many processes parses each binary once. */
struct interp_cache;

struct interp_cache *interp_cache__new(void);
void interp_cache__free(struct interp_cache *c);

/*
 * 0 on success, with interp_fd open: process__release() closes it.
 * Otherwise -errno and a one-line reason in err:
 *   -ESRCH    no such process
 *   -ENOEXEC  not a Python process
 *   -ENOTSUP  Python, but unsupported (version, free-threaded, stripped)
 *   -EAGAIN   looks like Python but libpython is not mapped yet, or its
 *             file changed under us: retry
 *   -EACCES   /proc says no
 * c may be NULL (no caching).
 */
int process__inspect(struct interp_cache *c, pid_t pid,
		     struct pyproc_info *info, char *err, size_t errlen);
void process__release(struct pyproc_info *info);

/* What inspecting an interpreter file learns, from the file open at fd
 * (named path in errors): 0, -ENOENT (not an interpreter), or -ENOTSUP
 * with why in err.  For tests and the ELF fuzzer. */
int process__facts_of_fd(int fd, const char *path, struct pyproc_info *info,
			 char *err, size_t errlen);
/* Version from a file name like python3.11, libpython3.8.so.1.0. */
int process__version_from_name(const char *path, int *major, int *minor);

/*
 * The facts of an executable about to be run, for any process of it:
 * 0 when path is a regular file, a CPython executable holding its own
 * _PyRuntime and loaded at fixed addresses (not position-independent),
 * with interp_fd open; else -errno.  Cached in c like an inspection.
 */
int process__exec_facts(struct interp_cache *c, const char *path,
			struct pyproc_info *info);

/* The id in the innermost pid namespace that a /proc status "NSpid:"
 * line gives (a task's ids are listed outermost first); 0 when none. */
pid_t process__nspid(const char *line);

/* fn(pid, ctx) for every process in /proc but ourselves, until fn
 * returns non-zero (that value is returned); -errno when /proc cannot be
 * read.  The one walk of /proc. */
int process__each(int (*fn)(pid_t pid, void *ctx), void *ctx);

#endif /* __PYSIGHT_PROCESS_H */
