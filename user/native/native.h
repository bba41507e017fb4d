/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --native: what user space knows of the native code processes map.
 * A binary (by inode and mtime, as BPF keys Python binaries) is read
 * once however many processes map it: its unwind rows and its function
 * names.  A process is its executable mappings, each pointing at its
 * binary; a binary no process maps any more is freed.
 */
#ifndef __PYSIGHT_NATIVE_H
#define __PYSIGHT_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "ehframe.h"
#include "pysight.h"

#define NATIVE_BUILD_ID_MAX	64	/* sha256 ids are 32 */
#define NATIVE_NAME_MAX		64

struct nsyms;

struct native_binary {
	struct py_binary_key key;
	__u8 build_id[NATIVE_BUILD_ID_MAX];
	int build_id_len;		/* 0: none */
	char build_id_hex[2 * NATIVE_BUILD_ID_MAX + 1];	/* "": none */
	char name[NATIVE_NAME_MAX];	/* base name, escaped */
	struct ehframe_table rows;	/* empty: no .eh_frame */
	struct nsyms *syms;		/* NULL: no symbols */
	unsigned int refs;		/* mappings that use it */
	bool placed;			/* rows in the pool, from row_first */
	__u32 row_first;
	/* CPython's interpreter (it defines the eval loop): the loop's
	 * function by its symbol, and the largest function by .eh_frame,
	 * which is the loop's body where the symbol is a stub (3.14 built
	 * by Debian); virtual addresses, [lo, hi) */
	bool interp;
	uint64_t eval_lo, eval_hi, loop_lo, loop_hi;
};

/* An executable mapping: [start, end) holds the binary's code from
 * virtual address vaddr on. */
struct native_map {
	uint64_t start, end, vaddr;
	struct native_binary *bin;
};

struct native_proc {
	pid_t pid;
	struct native_map *maps;	/* by start */
	size_t n;
	unsigned int unreadable;	/* mappings whose file did not open */
};

struct native_store;
struct rowpool;

/* rows, when set, is the array of pool's capacity that BPF searches:
 * each binary's rows are copied to their place in it. */
struct native_store *native_store__new(struct rowpool *pool,
				       struct unwind_row *rows);
void native_store__free(struct native_store *s);

/* pid's executable file mappings, each binary read the first time any
 * process maps it: 0, or -errno when /proc/PID/maps cannot be read. */
int native_store__read_proc(struct native_store *s, pid_t pid,
			    struct native_proc **out);
/* The process is gone or read again: its binaries lose a user. */
void native_store__put_proc(struct native_store *s, struct native_proc *p);

/* Binaries held, the bytes their rows and names take, those whose
 * rows found no room in the pool, and those no process maps (kept ten
 * seconds, 64 MiB of them at most, in case one maps them again). */
size_t native_store__binaries(const struct native_store *s);
unsigned int native_store__unmapped(const struct native_store *s);
/* Binaries read from their files since the store began. */
uint64_t native_store__loaded(const struct native_store *s);
/* Let go of the unmapped binaries kept long enough (call now and then). */
void native_store__expire(struct native_store *s);
/* Keep unmapped binaries ns, not ten seconds (the tests: 0). */
void native_store__keep_unmapped(struct native_store *s, uint64_t ns);
size_t native_store__bytes(const struct native_store *s);
size_t native_store__unplaced(const struct native_store *s);

/* p's mappings as BPF reads them (the first NATIVE_MAPS_MAX), those of
 * binaries without rows in the pool with none: how many. */
unsigned int native_proc__bpf_maps(const struct native_proc *p,
				   struct native_maps *out);

/* The mapping that holds addr, NULL when none does. */
const struct native_map *native_proc__find(const struct native_proc *p,
					   uint64_t addr);

/*
 * p's native stack from the registers start, walked in user space as BPF
 * walks it (for threads off the CPU, whose registers the sweep read):
 * the pcs into out (PY_LASTI_NATIVE entries, leaf first), at most max:
 * how many, and why the walk ended in *stop (enum native_stop).
 */
int native_proc__unwind(const struct native_proc *p,
			const struct pysight_unwind *start,
			struct py_frame *out, int max, __u32 *stop);

/* Is addr in CPython's eval loop (_PyEval_EvalFrameDefault)?  Each of
 * its frames runs Python frames, which --native shows in its place. */
bool native__in_eval(const struct native_map *m, uint64_t addr);

/* addr as the profile keeps a frame of it: the binary's own virtual
 * address of the function that holds it, or of addr when none does. */
uint64_t native__frame_addr(const struct native_map *m, uint64_t addr);

/* The function that holds addr (escaped), NULL when none does. */
const char *native__function(const struct native_map *m, uint64_t addr);

/* addr as a frame: "function [library]", or "[library]+0x1a2b" (the
 * offset in the binary) when no function covers it. */
void native__frame_name(const struct native_map *m, uint64_t addr,
			char *buf, size_t len);

#endif /* __PYSIGHT_NATIVE_H */
