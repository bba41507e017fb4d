// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for EV_CODE: the bytes of a code object, its strings
 * and its line table that BPF copies at the object's dealloc, and that
 * the symboliser names the code from when it had not named it yet.  The
 * target sends the record's contents (its memory, copied): every length
 * and address in it is a lie until checked.
 *
 * Input layout: byte 0 picks the minor (3.8 to 3.15: 3.13 on need
 * FIXTURES, the tests' _PyRuntime copies); byte 1's low bit
 * asks the harness to set the record's check to what its own bytes
 * compute, so mutations get past the identity check to the strings and
 * the line table; bytes 2-25 are the code, str and bytes type objects'
 * addresses (little endian); the rest is a struct code_event, zero-padded
 * when short.  The record lives in a heap block of exactly its size, so
 * ASan catches a read past its end.
 *
 * Naming from a record must never read the target: process_vm_readv
 * traps while it runs.  Outside it, for the check, it serves reads from
 * the record's own regions.  The header's tid is the lasti whose line
 * is asked for.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "linetable.h"
#include "offsets.h"
#include "symbols.h"
#include "layout.h"

#define HDR_LEN		26

static const struct code_event *served;

ssize_t process_vm_readv(pid_t pid, const struct iovec *local,
			 unsigned long liovcnt, const struct iovec *remote,
			 unsigned long riovcnt, unsigned long flags)
{
	const uint8_t *data;
	uint64_t addr;
	size_t len, cap;
	int i;

	(void)pid;
	(void)flags;
	if (!served)
		__builtin_trap();	/* a record's naming read the target */
	if (liovcnt != 1 || riovcnt != 1 || local[0].iov_len < remote[0].iov_len) {
		errno = EINVAL;
		return -1;
	}
	addr = (uint64_t)(uintptr_t)remote[0].iov_base;
	len = remote[0].iov_len;
	for (i = 0; i < SNAP__MAX; i++) {
		data = symbols__snapshot_region(served, i, &cap);
		if (served->r[i].addr && addr >= served->r[i].addr &&
		    addr - served->r[i].addr < cap &&
		    len <= cap - (addr - served->r[i].addr)) {
			memcpy(local[0].iov_base, data + (addr - served->r[i].addr), len);
			return (ssize_t)len;
		}
	}
	errno = EFAULT;
	return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct code_event *ev, *alive;
	const struct pysym *sym;
	struct py_proc proc;
	struct symcache *sc;
	uint64_t one = 1;
	uint32_t check;
	size_t len;
	int minor;

	minor = fuzz_proc(data, size, HDR_LEN, &proc);
	if (minor < 0)
		return 0;
	fuzz_types(&proc, data + 2);

	ev = calloc(1, sizeof(*ev));
	alive = malloc(sizeof(*alive));
	sc = symcache__new();
	if (!ev || !alive || !sc)
		goto out;
	len = size - HDR_LEN < sizeof(*ev) ? size - HDR_LEN : sizeof(*ev);
	memcpy(ev, data + HDR_LEN, len);

	if (data[1] & 1) {
		/* as symcache__add_snapshot sees it: refcount 1 */
		*alive = *ev;
		memcpy(alive->code_win, &one, sizeof(one));
		served = alive;
		if (!symbols__code_check(1, &proc, ev->code, &check))
			ev->check = check;
		served = NULL;
	}
	if (symcache__add_snapshot(sc, 1, &proc, ev))
		goto out;
	/* named now: the lookup a sample makes finds it without a read */
	sym = symcache__lookup(sc, 1, &proc, ev->code, ev->check);
	if (!sym)
		__builtin_trap();
	(void)linetable__line(minor, sym->linetable, sym->linetable_len,
			      sym->firstlineno, (int)(ev->hdr.tid & 0xffff));
out:
	symcache__free(sc);
	free(alive);
	free(ev);
	return 0;
}
