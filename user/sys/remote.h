/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Another process's memory: the one module that reads it, and bounds
 * every read.  The process runs on and may be hostile, so any read may
 * fail and every word read is a claim to check.
 */
#ifndef __PYSIGHT_REMOTE_H
#define __PYSIGHT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* above any user address: x86-64 with 5-level paging stops at 2^56 */
#define REMOTE_ADDR_END	(1ULL << 56)
/* regions one process_vm_readv takes at most (the kernel's UIO_MAXIOV) */
#define REMOTE_IOV_MAX	1024

/* len bytes of process pid at addr (process_vm_readv): 0, -EFAULT for a
 * short or faulting read or one outside user space, or -errno. */
int remote__read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* The 8 bytes at addr: 0, or -errno with *out 0. */
int remote__read64(pid_t pid, uint64_t addr, uint64_t *out);

/* Bytes of the target copied earlier, from addr on; addr 0 holds none. */
struct remote_copy {
	uint64_t addr;
	const void *data;
	size_t len;
};

/*
 * The regions a reader read from a process, to read them all again with
 * one system call (remote__read_all): at most max, else over is set and
 * they are not all there.  Their data is unset.
 */
struct remote_log {
	struct remote_copy *regions;
	int n, cap, max;
	bool over;
	int missed;		/* reads of copies that they did not hold */
};

/*
 * Where a reader's bytes come from: process pid, or, when copies is set,
 * those copies alone, never the process (what they were copied from, and
 * maybe the process, is gone).  Readers take one, so their signatures say
 * which memory they read.  log, when set, notes each region read from
 * the process, and counts the reads copies did not hold (a reader may
 * take a failed read as a fact of the target, not a miss of the copies).
 */
struct remote_mem {
	pid_t pid;
	const struct remote_copy *copies;
	int ncopies;
	struct remote_log *log;
};

/*
 * The n regions of process pid at once, one after another into buf of
 * size bytes, each region's data pointed at its bytes: 0, or -EFAULT
 * when any is not read whole (or they do not fit), or -errno.
 */
int remote__read_all(pid_t pid, struct remote_copy *regions, int n,
		     void *buf, size_t size);
/* The bytes n regions take. */
size_t remote__size(const struct remote_copy *regions, int n);
void remote_log__free(struct remote_log *log);
/* The log's regions in address order, those less than gap bytes apart
 * and on the same page made one (a page one is mapped in, the other is). */
void remote_log__merge(struct remote_log *log, size_t gap);

/* As remote__read, from mem: a read that no one copy holds whole faults. */
int remote__mem_read(const struct remote_mem *mem, uint64_t addr, void *buf,
		     size_t len);

/* The 8 bytes at addr in mem: 0, or -errno with *out 0. */
int remote__mem_read64(const struct remote_mem *mem, uint64_t addr,
		       uint64_t *out);

/* How many bytes mem can give from addr on: 0 when none, SIZE_MAX for a
 * live process (only a read says). */
size_t remote__mem_room(const struct remote_mem *mem, uint64_t addr);

/*
 * The word at off in a local copy of size bytes of the target, or 0 when
 * it would end past the copy.  In the host's byte order, which is the
 * target's: remote__read copies from this machine only.
 */
uint64_t remote__u64(const void *win, size_t size, size_t off);
uint32_t remote__u32(const void *win, size_t size, size_t off);

#endif /* __PYSIGHT_REMOTE_H */
