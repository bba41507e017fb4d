/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Code object -> qualname, file, line table; cached per process. */
#ifndef __PYSIGHT_SYMBOLS_H
#define __PYSIGHT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"
#include "remote.h"

struct pysym {
	char *qualname;
	char *filename;
	int firstlineno;
	uint8_t *linetable;
	size_t linetable_len;
};

struct symcache;

struct symcache *symcache__new(void);
void symcache__free(struct symcache *sc);

/*
 * The symbol of code object `code` in process pid, read with
 * process_vm_readv.  NULL when it cannot be read or no longer checks as
 * `check` (the object was freed and its address reused).
 */
const struct pysym *symcache__lookup(struct symcache *sc, pid_t pid,
				     const struct py_proc *proc, uint64_t code,
				     uint32_t check);

/* The same, not counted as a miss again: for a sample held for its code,
 * which asks at each pass over the ring. */
const struct pysym *symcache__retry(struct symcache *sc, pid_t pid,
				    const struct py_proc *proc, uint64_t code,
				    uint32_t check);

/* A compact str object as UTF-8 (malloc'd, at most 1024 characters), or
 * NULL when addr is not a live str. */
char *symbols__read_str(pid_t pid, const struct py_proc *proc, uint64_t addr);
/* A bytes object's contents (malloc'd), at most 256 KiB: -EFAULT when
 * addr is not a live bytes object, -E2BIG. */
int symbols__read_bytes(pid_t pid, const struct py_proc *proc, uint64_t addr,
			uint8_t **out, size_t *outlen);

/* The identity check of a live code object, as BPF computes it (the
 * frames read from user space need it too): 0, -EFAULT, -ESTALE. */
int symbols__code_check(pid_t pid, const struct py_proc *proc, uint64_t code,
			uint32_t *check);
/* The same, of the code object in mem. */
int symbols__code_check_mem(const struct remote_mem *mem,
			    const struct py_proc *proc, uint64_t code,
			uint32_t *check);

/*
 * Name a code object from the bytes BPF copied at its dealloc (EV_CODE),
 * when it is not named yet: 0, or -EFAULT when they do not make one.
 */
int symcache__add_snapshot(struct symcache *sc, pid_t pid,
			   const struct py_proc *proc,
			   const struct code_event *ev);

/* Region i (SNAP_CODE...) of an EV_CODE record: its bytes, and in *cap
 * how many of them the record holds (its length, capped by its buffer). */
const uint8_t *symbols__snapshot_region(const struct code_event *ev, int i,
					size_t *cap);

/* Drop every entry of a process that exited or exec'ed. */
void symcache__forget(struct symcache *sc, pid_t pid);

/* Cached symbols, over all processes. */
size_t symcache__size(const struct symcache *sc);

/* Counters for the summary. */
uint64_t symcache__stale(const struct symcache *sc);

#endif /* __PYSIGHT_SYMBOLS_H */
