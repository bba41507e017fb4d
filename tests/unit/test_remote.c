// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/sys/remote.c: reads of a process (our own, here) and of copies of
 * it, and the window reader every decoder of those bytes goes through.
 * Windows sit in heap blocks of exactly their size, so ASan sees a read
 * one byte past the end.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "check.h"
#include "remote.h"

#define ADDR(p)	((uint64_t)(uintptr_t)(p))

/* Every offset near and past the end of a window of size bytes. */
static void window_at(size_t size)
{
	uint8_t *win = malloc(size ? size : 1);
	uint64_t want64;
	uint32_t want32;
	size_t i, off;

	if (!win)
		return;
	for (i = 0; i < size; i++)
		win[i] = (uint8_t)(0xa0 + i);
	for (off = 0; off <= size + 8; off++) {
		if (off + 8 <= size) {
			memcpy(&want64, win + off, 8);
			CHECK(remote__u64(win, size, off) == want64,
			      "u64 at %zu of %zu", off, size);
		} else {
			CHECK(remote__u64(win, size, off) == 0,
			      "u64 at %zu of %zu overruns", off, size);
		}
		if (off + 4 <= size) {
			memcpy(&want32, win + off, 4);
			CHECK(remote__u32(win, size, off) == want32,
			      "u32 at %zu of %zu", off, size);
		} else {
			CHECK(remote__u32(win, size, off) == 0,
			      "u32 at %zu of %zu overruns", off, size);
		}
	}
	/* offsets whose end wraps around: a target's word, or PY_OFF_NONE */
	CHECK(remote__u64(win, size, SIZE_MAX) == 0, "SIZE_MAX");
	CHECK(remote__u64(win, size, SIZE_MAX - 3) == 0, "wraps");
	CHECK(remote__u32(win, size, SIZE_MAX - 1) == 0, "wraps");
	CHECK(remote__u64(win, size, 0xffff) == 0, "PY_OFF_NONE");
	free(win);
}

static void test_window(void)
{
	size_t sizes[] = { 0, 3, 4, 7, 8, 9, 16, 128, 192 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		window_at(sizes[i]);
}

static void test_read(void)
{
	static const uint64_t word = 0x1122334455667788ULL;
	pid_t pid = getpid();
	uint64_t v = 1;
	char buf[8];

	CHECK(!remote__read64(pid, ADDR(&word), &v) && v == word, "own word");
	v = 1;
	CHECK(remote__read64(pid, 0, &v) == -EFAULT && !v, "NULL");
	v = 1;
	CHECK(remote__read64(pid, REMOTE_ADDR_END, &v) == -EFAULT && !v,
	      "past user space");
	CHECK(remote__read(pid, REMOTE_ADDR_END - 4, buf, 8) == -EFAULT,
	      "ends past user space");
	CHECK(remote__read(pid, UINT64_MAX - 2, buf, 8) == -EFAULT, "wraps");
}

/* A word half in a page, half in a hole: a short read, *out stays 0. */
static void test_short_read(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map;
	uint64_t v = 1;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return;
	memset(map, 0xee, page);
	munmap(map + page, page);
	CHECK(remote__read64(getpid(), ADDR(map + page - 4), &v) == -EFAULT &&
	      !v, "short read gave %#llx", (unsigned long long)v);
	munmap(map, page);
}

/* Copies serve what they hold whole, and never send a read elsewhere. */
static void test_copies(void)
{
	static const uint8_t live[16] = { 1, 2, 3 };
	uint8_t a[16], b[4], out[16];
	struct remote_copy copies[] = {
		{ 0x1000, a, sizeof(a) },
		{ 0, live, sizeof(live) },	/* addr 0: holds nothing */
		{ 0x2000, b, 2 },		/* only 2 of b's bytes copied */
	};
	struct remote_mem mem = { getpid(), copies, 3, NULL };
	struct remote_mem self = { .pid = getpid() };
	size_t i;

	for (i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)i;
	memset(b, 0x55, sizeof(b));
	CHECK(!remote__mem_read(&mem, 0x1004, out, 12) && out[0] == 4 &&
	      out[11] == 15, "inside a copy");
	CHECK(remote__mem_read(&mem, 0x1008, out, 9) == -EFAULT,
	      "past a copy's end");
	CHECK(remote__mem_read(&mem, 0x1000, out, 0) == -EFAULT, "empty");
	CHECK(remote__mem_read(&mem, 0x2000, out, 3) == -EFAULT,
	      "past a copy's length");
	CHECK(remote__mem_read(&mem, ADDR(live), out, 4) == -EFAULT,
	      "a copy never falls back to the process");
	CHECK(remote__mem_room(&mem, 0x1004) == 12, "room inside");
	CHECK(remote__mem_room(&mem, 0x1010) == 0, "room at the end");
	CHECK(remote__mem_room(&mem, 0x2001) == 1, "room of a cut copy");
	CHECK(remote__mem_room(&mem, 0) == 0, "room at NULL");
	CHECK(!remote__mem_read(&self, ADDR(live), out, 4) && out[2] == 3,
	      "no copies: the process");
	CHECK(remote__mem_room(&self, ADDR(live)) == SIZE_MAX, "live room");
}

/*
 * A live read with a log notes each region once; merged, regions on one
 * page less than the gap apart are one; read all at once they give the
 * bytes a read of each would, and a walk over them as copies needs no
 * process.  One region in a hole fails the whole read.
 */
static void test_log(void)
{
	long page = sysconf(_SC_PAGESIZE);
	struct remote_log log = { .max = 8 };
	struct remote_mem live = { .pid = getpid(), .log = &log };
	struct remote_mem copies = { .pid = -1 };
	uint8_t *map, buf[4096], out[8];
	uint64_t v;
	int i;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return;
	for (i = 0; i < 3 * page; i++)
		map[i] = (uint8_t)(i * 7);
	CHECK(!remote__mem_read64(&live, ADDR(map + 64), &v), "read 1");
	CHECK(!remote__mem_read64(&live, ADDR(map + 16), &v), "read 2");
	CHECK(!remote__mem_read64(&live, ADDR(map + 64), &v), "read 1 again");
	CHECK(!remote__mem_read(&live, ADDR(map + page - 4), out, 4), "read 3");
	CHECK(!remote__mem_read(&live, ADDR(map + page + 8), out, 8), "read 4");
	CHECK(log.n == 4, "regions noted once each: %d", log.n);
	remote_log__merge(&log, 256);
	/* 16..24 and 64..72 merge; page-4..page is far; page+8 is the next
	 * page, never merged across */
	CHECK(log.n == 3 && log.regions[0].addr == ADDR(map + 16) &&
	      log.regions[0].len == 56, "merged: %d regions, first %zu bytes",
	      log.n, log.n ? log.regions[0].len : 0);
	CHECK(remote__size(log.regions, log.n) == 56 + 4 + 8, "size");
	memset(buf, 0, sizeof(buf));
	CHECK(!remote__read_all(getpid(), log.regions, log.n, buf, sizeof(buf)),
	      "read all");
	copies.copies = log.regions;
	copies.ncopies = log.n;
	CHECK(!remote__mem_read64(&copies, ADDR(map + 64), &v) &&
	      !memcmp(&v, map + 64, 8), "a read again from the copies");
	CHECK(!remote__mem_read64(&copies, ADDR(map + 40), &v) &&
	      !memcmp(&v, map + 40, 8), "inside a merged gap");
	copies.log = &log;
	log.missed = 0;
	CHECK(remote__mem_read64(&copies, ADDR(map + 2 * page), &v) ==
	      -EFAULT && log.missed == 1,
	      "not read: no process behind copies, and the miss counted");
	copies.log = NULL;
	CHECK(remote__read_all(getpid(), log.regions, log.n, buf, 10) ==
	      -EFAULT, "too small a buffer");
	for (i = 0; i < 9; i++)
		remote__mem_read64(&live, ADDR(map + 2 * page + 512 * i), &v);
	CHECK(log.over && log.n == 8, "the log stops at max");
	munmap(map + 2 * page, page);
	CHECK(remote__read_all(getpid(), log.regions, log.n, buf, sizeof(buf)) ==
	      -EFAULT, "a region unmapped since");
	remote_log__free(&log);
	munmap(map, 2 * page);
}

int main(void)
{
	test_log();
	test_window();
	test_read();
	test_short_read();
	test_copies();
	return check_summary();
}
