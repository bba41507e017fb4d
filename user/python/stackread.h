/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's Python stack read from user space, with process_vm_readv,
 * walked as the BPF side walks it: for threads that are off the CPU (the
 * end of a wall-clock recording, and dump), where BPF cannot read.
 */
#ifndef __PYSIGHT_STACKREAD_H
#define __PYSIGHT_STACKREAD_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

struct stackread {
	__u64 tstate;			/* 0 when none matched */
	__u64 leaf;			/* the frame it ran when read */
	int status;			/* enum sample_status */
	bool again;			/* read at once, as its plan said */
	/* set by the caller (--native): mark where each call of the eval
	 * loop began, as BPF's walk does (PY_LASTI_ENTRY) */
	bool marks;
	int n;
	struct py_frame frames[PYSIGHT_MAX_FRAMES];	/* leaf first */
	__u64 addr[PYSIGHT_MAX_FRAMES];		/* each frame's own address */
};

/*
 * The stack of the thread whose key is thread_key: its tid in its own
 * pid namespace (3.11+), or its thread pointer, the fs base (<= 3.10).
 * Returns the status (ST_COMPLETE, ST_TRUNCATED, ...).
 */
int stackread__thread(pid_t pid, const struct py_proc *proc, __u64 thread_key,
		      struct stackread *out);

/*
 * The same, starting from hint, the thread state found last time, when it
 * still is this thread's: the walk of the thread list costs a read per
 * thread before it (100 threads: 96 us a stack; 1000: 0.8 ms), the check
 * four reads.
 */
int stackread__thread_at(pid_t pid, const struct py_proc *proc,
			 __u64 thread_key, __u64 hint, struct stackread *out);

/*
 * The same for a thread read before, with the plan the last read left
 * (*plan NULL the first time; free it with stackread_plan__free).  A
 * read from user space is some twenty process_vm_readv calls, one for
 * each field of the thread state, each frame and each code object, at
 * 1-1.5 us each: 25 us a stack.  A thread whose stack has not moved since
 * its last read reads the same regions: they are read again all at once,
 * and walked as a live read would walk them, which holds when every read
 * the walk makes is one of them.  When the stack moved, the walk needs
 * one that is not, and the thread is read live, which makes the plan for
 * the next time.  hint: where the first read starts (0: the list's head).
 * A thread whose running frame changed during the read is read again; one
 * still moving gives no frames and ST_ERR_READ_FRAME.
 */
struct stackread_plan;
int stackread__thread_planned(pid_t pid, const struct py_proc *proc,
			      __u64 thread_key, __u64 hint,
			      struct stackread_plan **plan,
			      struct stackread *out);
void stackread_plan__free(struct stackread_plan *p);

/*
 * The same, read until two reads in a row agree on the frames' code
 * objects (a running thread's lines move; its frames do not, unless the
 * stack changed under the read).  0, or -EAGAIN when tries more reads
 * never agreed: out is then the last read, and torn.
 */
int stackread__stable(pid_t pid, const struct py_proc *proc, __u64 thread_key,
		      struct stackread *out, struct stackread *scratch,
		      int tries);

/*
 * fn(ctx, key, tstate) for each thread state of the process, in one walk
 * of its lists (finding each thread's from the head is a read per thread
 * before it: 1,000 threads took 1.5 s, 5,000 took 56 s), until fn returns
 * non-zero: that value.  0 at the end, -EFAULT when unreadable.
 */
int stackread__tstates(pid_t pid, const struct py_proc *proc,
		       int (*fn)(void *ctx, __u64 key, __u64 tstate),
		       void *ctx);

/*
 * The one frame at addr (a coroutine's own, which no thread's chain may
 * hold), read and checked as a walk reads each: appended to out.  0 when
 * kept, 1 when it has no code to name (a shim), or -status.
 */
struct remote_mem;
int stackread__frame(const struct remote_mem *mem, const struct py_proc *proc,
		     __u64 addr, struct stackread *out);

/* The thread state that holds the main interpreter's GIL: 0 when it is
 * free.  -EFAULT when unreadable, -ENOENT without a GIL. */
int stackread__gil_holder(pid_t pid, const struct py_proc *proc,
			  __u64 *holder);

#endif /* __PYSIGHT_STACKREAD_H */
