/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fake target's address space for the harnesses that read one: the
 * harness's own process_vm_readv (the executable's definition wins over
 * libc's and over ASan's weak interceptor) serves a read that lies wholly
 * in one of the segments, and faults everywhere else, so the code that
 * reads a live target runs unchanged.
 */
#ifndef PYSIGHT_FUZZ_FAKEMEM_H
#define PYSIGHT_FUZZ_FAKEMEM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "le.h"

#define FUZZ_MAX_SEGS	4096

struct fuzz_segment {
	uint64_t addr;
	size_t len;
	const uint8_t *data;
};

static struct fuzz_segment fuzz_segs[FUZZ_MAX_SEGS];
static int fuzz_nsegs;

#define FUZZ_SEG_HDR	12	/* an address (8 bytes), a length (4) */

/*
 * The segments of an input's tail, as tools/fuzz-seeds writes them: each
 * an address, a length and its bytes, to the end.  A segment cut short by
 * the end is its bytes up to the end.
 */
static inline void fuzz_map_segments(const uint8_t *p, size_t left)
{
	struct fuzz_segment *s;
	uint32_t len;

	for (fuzz_nsegs = 0; fuzz_nsegs < FUZZ_MAX_SEGS && left >= FUZZ_SEG_HDR;
	     fuzz_nsegs++) {
		s = &fuzz_segs[fuzz_nsegs];
		s->addr = fuzz_le64(p);
		len = fuzz_le32(p + 8);
		p += FUZZ_SEG_HDR;
		left -= FUZZ_SEG_HDR;
		s->len = len < left ? len : left;
		s->data = p;
		p += s->len;
		left -= s->len;
	}
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local,
			 unsigned long liovcnt, const struct iovec *remote,
			 unsigned long riovcnt, unsigned long flags)
{
	const struct fuzz_segment *s;
	uint64_t addr;
	size_t len;
	int i;

	(void)pid;
	(void)flags;
	if (liovcnt != 1 || riovcnt != 1 || local[0].iov_len < remote[0].iov_len) {
		errno = EINVAL;
		return -1;
	}
	addr = (uint64_t)(uintptr_t)remote[0].iov_base;
	len = remote[0].iov_len;
	for (i = 0; i < fuzz_nsegs; i++) {
		s = &fuzz_segs[i];
		if (addr >= s->addr && addr - s->addr <= s->len &&
		    len <= s->len - (addr - s->addr)) {
			memcpy(local[0].iov_base, s->data + (addr - s->addr), len);
			return (ssize_t)len;
		}
	}
	errno = EFAULT;
	return -1;
}

#endif
