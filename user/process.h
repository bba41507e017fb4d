/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Inspecting a process: is it CPython, which version, where are its
 * interpreter facts.  Everything comes from /proc and the ELF files. */
#ifndef __PYSIGHT_PROCESS_H
#define __PYSIGHT_PROCESS_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

struct pyproc_info {
	struct py_proc proc;		/* what BPF needs */
	struct py_binary_key exe_key;	/* the executable's inode */
	bool exe_reusable;		/* facts hold for any process of exe */
	int major, minor, micro;
	char interp_path[PATH_MAX];	/* file holding _PyRuntime, as mapped */
	char interp_open[PATH_MAX + 64]; /* how to open it from here */
	struct py_binary_key interp_key; /* its inode */
	__u64 code_free_offset;		/* file offset of code_dealloc, or 0 */
};

/*
 * 0 on success.  Otherwise -errno and a one-line reason in err:
 *   -ESRCH    no such process
 *   -ENOEXEC  not a Python process
 *   -ENOTSUP  Python, but unsupported (version, free-threaded, stripped)
 *   -EAGAIN   looks like Python but libpython is not mapped yet: retry
 *   -EACCES   /proc says no
 */
int process__inspect(pid_t pid, struct pyproc_info *info, char *err,
		     size_t errlen);

/* Version from a file name like python3.11, libpython3.8.so.1.0. */
int process__version_from_name(const char *path, int *major, int *minor);

/* Kernel dev_t encoding (MKDEV) of a user-space st_dev. */
__u64 process__kernel_dev(dev_t dev);

#endif /* __PYSIGHT_PROCESS_H */
