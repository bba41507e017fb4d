// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reads of another process, or of copies made of it earlier.  The
 * window readers touch no process and could sit in lib/, but they decode
 * the target's words in our byte order, true only because remote__read
 * copies from this machine: they stay beside it, where that holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "remote.h"

int remote__read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	/* the kernel faults these too, at the cost of a system call */
	if (!addr || addr >= REMOTE_ADDR_END || len > REMOTE_ADDR_END - addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int remote__read64(pid_t pid, uint64_t addr, uint64_t *out)
{
	struct remote_mem live = { .pid = pid };

	return remote__mem_read64(&live, addr, out);
}

/* The copy holding addr, and in *room its bytes from addr on. */
static const struct remote_copy *copy_of(const struct remote_mem *mem,
					 uint64_t addr, size_t *room)
{
	const struct remote_copy *c;
	int i;

	for (i = 0; i < mem->ncopies; i++) {
		c = &mem->copies[i];
		if (c->addr && addr >= c->addr && addr - c->addr < c->len) {
			*room = c->len - (addr - c->addr);
			return c;
		}
	}
	*room = 0;
	return NULL;
}

/* Note a region read; one read already is not noted twice. */
static void log_region(struct remote_log *log, uint64_t addr, size_t len)
{
	struct remote_copy *grown;
	int i, cap;

	for (i = 0; i < log->n; i++)
		if (log->regions[i].addr == addr && log->regions[i].len == len)
			return;
	if (log->n == log->max) {
		log->over = true;
		return;
	}
	if (log->n == log->cap) {
		cap = log->cap ? 2 * log->cap : 32;
		grown = realloc(log->regions, cap * sizeof(*grown));
		if (!grown) {
			log->over = true;
			return;
		}
		log->regions = grown;
		log->cap = cap;
	}
	log->regions[log->n].addr = addr;
	log->regions[log->n].len = len;
	log->regions[log->n].data = NULL;
	log->n++;
}

void remote_log__free(struct remote_log *log)
{
	free(log->regions);
	memset(log, 0, sizeof(*log));
}

static int by_addr(const void *a, const void *b)
{
	const struct remote_copy *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

#define PAGE_OF(a)	((a) >> 12)

void remote_log__merge(struct remote_log *log, size_t gap)
{
	struct remote_copy *r = log->regions, *last;
	uint64_t end;
	int i, n = 0;

	if (log->n < 2)
		return;
	qsort(r, log->n, sizeof(*r), by_addr);
	for (i = 1; i < log->n; i++) {
		last = &r[n];
		end = last->addr + last->len;
		if (r[i].addr <= end + gap &&
		    PAGE_OF(r[i].addr) == PAGE_OF(end - 1)) {
			if (r[i].addr + r[i].len > end)
				last->len = r[i].addr + r[i].len - last->addr;
			continue;
		}
		r[++n] = r[i];
	}
	log->n = n + 1;
}

size_t remote__size(const struct remote_copy *regions, int n)
{
	size_t size = 0;
	int i;

	for (i = 0; i < n; i++)
		size += regions[i].len;
	return size;
}

int remote__read_all(pid_t pid, struct remote_copy *regions, int n,
		     void *buf, size_t size)
{
	struct iovec local = { buf, size }, remote[REMOTE_IOV_MAX];
	size_t want = 0;
	uint8_t *at = buf;
	ssize_t got;
	int i;

	if (n <= 0 || n > REMOTE_IOV_MAX)
		return -EFAULT;
	for (i = 0; i < n; i++) {
		if (!regions[i].addr || regions[i].addr >= REMOTE_ADDR_END ||
		    regions[i].len > REMOTE_ADDR_END - regions[i].addr ||
		    regions[i].len > size - want)
			return -EFAULT;
		remote[i].iov_base = (void *)(uintptr_t)regions[i].addr;
		remote[i].iov_len = regions[i].len;
		regions[i].data = at;
		at += regions[i].len;
		want += regions[i].len;
	}
	local.iov_len = want;
	got = process_vm_readv(pid, &local, 1, remote, n, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == want ? 0 : -EFAULT;
}

int remote__mem_read(const struct remote_mem *mem, uint64_t addr, void *buf,
		     size_t len)
{
	const struct remote_copy *c;
	size_t room;
	int err;

	if (!mem->copies) {
		err = remote__read(mem->pid, addr, buf, len);
		if (!err && mem->log)
			log_region(mem->log, addr, len);
		return err;
	}
	c = copy_of(mem, addr, &room);
	if (!len || room < len) {
		if (mem->log)
			mem->log->missed++;
		return -EFAULT;
	}
	memcpy(buf, (const uint8_t *)c->data + (addr - c->addr), len);
	return 0;
}

int remote__mem_read64(const struct remote_mem *mem, uint64_t addr,
		       uint64_t *out)
{
	uint64_t v;
	int err = remote__mem_read(mem, addr, &v, sizeof(v));

	/* a short read may have filled part of v */
	*out = err ? 0 : v;
	return err;
}

size_t remote__mem_room(const struct remote_mem *mem, uint64_t addr)
{
	size_t room;

	if (!mem->copies)
		return SIZE_MAX;
	copy_of(mem, addr, &room);
	return room;
}

uint64_t remote__u64(const void *win, size_t size, size_t off)
{
	uint64_t v = 0;

	if (off <= size && size - off >= sizeof(v))
		memcpy(&v, (const uint8_t *)win + off, sizeof(v));
	return v;
}

uint32_t remote__u32(const void *win, size_t size, size_t off)
{
	uint32_t v = 0;

	if (off <= size && size - off >= sizeof(v))
		memcpy(&v, (const uint8_t *)win + off, sizeof(v));
	return v;
}
