// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reads of another process, or of copies made of it earlier.  The
 * window readers touch no process and could sit in lib/, but they decode
 * the target's words in our byte order, true only because remote__read
 * copies from this machine: they stay beside it, where that holds.
 */
#include <errno.h>
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
	uint64_t v;
	int err = remote__read(pid, addr, &v, sizeof(v));

	/* a short read may have filled part of v */
	*out = err ? 0 : v;
	return err;
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

int remote__mem_read(const struct remote_mem *mem, uint64_t addr, void *buf,
		     size_t len)
{
	const struct remote_copy *c;
	size_t room;

	if (!mem->copies)
		return remote__read(mem->pid, addr, buf, len);
	c = copy_of(mem, addr, &room);
	if (!len || room < len)
		return -EFAULT;
	memcpy(buf, (const uint8_t *)c->data + (addr - c->addr), len);
	return 0;
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
