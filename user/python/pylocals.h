/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A frame's local variables in another process, for dump --locals. */
#ifndef __PYSIGHT_PYLOCALS_H
#define __PYSIGHT_PYLOCALS_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

struct pylocal {
	char name[64];
	char value[128];	/* 42, 'text', None, <list of 3>, <Foo at 0x..> */
};

/*
 * The bound locals of the frame at frame (its code object code), in the
 * order the code declares them: at most max into out.  Returns how many,
 * or -errno: -ENOTSUP when the interpreter's layout lacks what it takes,
 * -EFAULT when the frame or code cannot be read.
 */
int pylocals__read(pid_t pid, const struct py_proc *proc, uint64_t frame,
		   uint64_t code, struct pylocal *out, int max);

#endif /* __PYSIGHT_PYLOCALS_H */
