// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * threading._active as a hostile target may write it: a table that
 * claims 2^40 entries, tables and lists that loop back on themselves, a
 * name 2^62 characters long, a Thread whose _name is no str.  Objects are
 * fabricated in the fuzzers' fake address space (tests/fuzz/fakemem.h)
 * with the layouts of 3.8 to 3.15, and read back by threadnames__read.
 * Each lie must cost a bounded read, counted here, and name no thread, so
 * that the collector names it by its comm.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "check.h"
#include "pyobj.h"
#include "threadnames.h"

/* 3.13 on, a minor's layout is read from the fixtures' _PyRuntime copies */
static const char *fixtures = "tests/fixtures";
#define FIXTURES fixtures
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../fuzz/layout.h"
#pragma GCC diagnostic pop

/* fakemem's reader under another name: the one the code calls counts */
#define process_vm_readv fakemem_readv
#include "../fuzz/fakemem.h"
#undef process_vm_readv

static unsigned long reads, read_bytes;

ssize_t process_vm_readv(pid_t pid, const struct iovec *local,
			 unsigned long liovcnt, const struct iovec *remote,
			 unsigned long riovcnt, unsigned long flags)
{
	reads++;
	read_bytes += riovcnt == 1 ? remote[0].iov_len : 0;
	return fakemem_readv(pid, local, liovcnt, remote, riovcnt, flags);
}

#define ADDR(p)		((uint64_t)(uintptr_t)(p))
#define HEAP_SIZE	(32u << 20)
#define PID		4242	/* any: fakemem serves every pid */

/* What pyobj.c reads of objects, at offsets every minor shares. */
#define OB_TYPE		8
#define OB_SIZE		16
#define TP_NAME		24
#define TP_FLAGS	168
#define TP_DICTOFFSET	288
#define TYPE_LEN	512	/* a type object: all pyobj reads of one */
#define DICT_KEYS	32
#define MODULE_DICT	16
#define F_MANAGED_DICT	(1UL << 4)
#define F_LONG_SUBCLASS	(1UL << 24)
#define F_DICT_SUBCLASS	(1UL << 29)
#define STATE_ASCII	0x64	/* compact, ASCII, one byte a character */

/* Bounds of one read of a small table: some tens of objects. */
#define SMALL_READS	256
#define SMALL_BYTES	(64u << 10)

static uint8_t heap[HEAP_SIZE] __attribute__((aligned(4096)));
static size_t heap_used;

/* A fabricated interpreter: its layout and its types' addresses. */
struct target {
	int minor;
	struct py_proc proc;
	uint64_t dict_type, int_type, thread_type, module_type;
	uint64_t active;	/* threading._active */
	uint64_t interp, modules;
};

static void put64(uint64_t addr, uint64_t off, uint64_t v)
{
	memcpy((void *)(uintptr_t)(addr + off), &v, sizeof(v));
}

static void put32(uint64_t addr, uint64_t off, uint32_t v)
{
	memcpy((void *)(uintptr_t)(addr + off), &v, sizeof(v));
}

/* len zeroed bytes, 32 past the last object: 3.11 on keep an instance's
 * dict and values pointers before it. */
static uint64_t alloc(size_t len)
{
	uint64_t at = ADDR(heap + heap_used + 32);

	heap_used += 32 + ((len + 15) & ~(size_t)15);
	if (heap_used > HEAP_SIZE) {
		fprintf(stderr, "test heap exhausted\n");
		exit(2);
	}
	return at;
}

static void heap_reset(void)
{
	memset(heap, 0, heap_used);
	heap_used = 0;
	fuzz_segs[0] = (struct fuzz_segment){ ADDR(heap), HEAP_SIZE, heap };
	fuzz_nsegs = 1;
}

/* An object of len bytes of type, its refcount 1. */
static uint64_t new_obj(uint64_t type, size_t len)
{
	uint64_t obj = alloc(len);

	put64(obj, 0, 1);
	put64(obj, OB_TYPE, type);
	return obj;
}

static uint64_t new_type(const char *name, uint64_t flags, uint64_t dictoff)
{
	uint64_t type = new_obj(0, TYPE_LEN), cname = alloc(strlen(name) + 1);

	memcpy((void *)(uintptr_t)cname, name, strlen(name));
	put64(type, TP_NAME, cname);
	put64(type, TP_FLAGS, flags);
	put64(type, TP_DICTOFFSET, dictoff);
	return type;
}

/* A compact str of n bytes at s, claiming len characters. */
static uint64_t new_str_len(const struct target *t, const char *s,
			    uint64_t len)
{
	const struct py_offsets *off = &t->proc.off;
	size_t n = strlen(s);
	uint64_t str = new_obj(t->proc.unicode_type_addr,
			       off->unicode_ascii_data + n + 64);

	put64(str, off->unicode_length, len);
	put32(str, off->unicode_state, STATE_ASCII);
	memcpy((void *)(uintptr_t)(str + off->unicode_ascii_data), s, n);
	return str;
}

static uint64_t new_str(const struct target *t, const char *s)
{
	return new_str_len(t, s, strlen(s));
}

/* An int below 2^30: one digit. */
static uint64_t new_int(const struct target *t, uint32_t v)
{
	uint64_t obj = new_obj(t->int_type, 32);

	/* 3.12 on, lv_tag: digits << 3 | sign; before, ob_size */
	put64(obj, OB_SIZE, t->minor >= 12 ? 1 << 3 : 1);
	put32(obj, 24, v);
	return obj;
}

/*
 * A dict of n entries {hash, key, value}, in general (not str-only) keys,
 * whose header claims nentries of them.
 */
static uint64_t new_dict_claiming(const struct target *t, int n,
				  const uint64_t *k, const uint64_t *v,
				  uint64_t nentries)
{
	uint64_t dict, keys, at;
	int log2 = 3, i;

	while ((1 << log2) < 2 * n)
		log2++;
	/* the index: 1 << log2 slots of 4 bytes (any size reads as bytes) */
	keys = alloc(40 + (4u << log2) + 24 * (size_t)n);
	if (t->minor < 11) {
		put64(keys, 8, 1ULL << log2);
		put64(keys, 32, nentries);
		at = keys + 40 +
		     (1ULL << log2) * (log2 < 8 ? 1 : log2 < 16 ? 2 : 4);
	} else {
		((uint8_t *)(uintptr_t)keys)[8] = (uint8_t)log2;
		((uint8_t *)(uintptr_t)keys)[9] = (uint8_t)(log2 + 2);
		put64(keys, 24, nentries);
		at = keys + 32 + (4ULL << log2);
	}
	for (i = 0; i < n; i++) {
		put64(at, 24 * i + 8, k[i]);
		put64(at, 24 * i + 16, v[i]);
	}
	dict = new_obj(t->dict_type, 48);
	put64(dict, OB_SIZE, nentries);		/* ma_used */
	put64(dict, DICT_KEYS, keys);
	return dict;
}

static uint64_t new_dict(const struct target *t, int n, const uint64_t *k,
			 const uint64_t *v)
{
	return new_dict_claiming(t, n, k, v, (uint64_t)n);
}

/* Make dict obj's instance dict: before 3.11 at tp_dictoffset, then
 * (Py_TPFLAGS_MANAGED_DICT) the word 24 bytes before the object. */
static void set_dict(const struct target *t, uint64_t obj, uint64_t dict)
{
	put64(obj, t->minor < 11 ? 16 : -24ULL, dict);
}

static uint64_t new_instance(const struct target *t, uint64_t dict)
{
	uint64_t obj = new_obj(t->thread_type, 64);

	set_dict(t, obj, dict);
	return obj;
}

/* A started Thread's dict, as Thread.__init__ and _set_native_id leave
 * it. */
static uint64_t thread_dict(const struct target *t, uint64_t name,
			    uint64_t native_id)
{
	uint64_t k[4], v[4];

	k[0] = new_str(t, "_target");
	v[0] = new_int(t, 0);
	k[1] = new_str(t, "_name");
	v[1] = name;
	k[2] = new_str(t, "_ident");
	v[2] = new_int(t, 7);
	k[3] = new_str(t, "_native_id");
	v[3] = native_id;
	return new_dict(t, 4, k, v);
}

static uint64_t new_thread(const struct target *t, uint64_t name,
			   uint64_t native_id)
{
	return new_instance(t, thread_dict(t, name, native_id));
}

static uint64_t named(const struct target *t, const char *name, uint32_t tid)
{
	return new_thread(t, new_str(t, name), new_int(t, tid));
}

/* The interpreter of minor, its types made: -1 when there is no layout. */
static int new_target(struct target *t, int minor)
{
	memset(t, 0, sizeof(*t));
	heap_reset();
	t->minor = minor;
	if (fuzz_layout(minor, &t->proc.off))
		return -1;
	t->proc.unicode_type_addr = new_type("str", 0, 0);
	t->dict_type = new_type("dict", F_DICT_SUBCLASS, 0);
	t->int_type = new_type("int", F_LONG_SUBCLASS, 0);
	t->thread_type = new_type("Thread", minor < 11 ? 0 : F_MANAGED_DICT,
				  minor < 11 ? 16 : 0);
	t->module_type = new_type("module", 0, 0);
	return 0;
}

/* A table of n threads keyed by their idents, claiming nentries. */
static uint64_t new_table(const struct target *t, int n,
			  const uint64_t *threads, uint64_t nentries)
{
	uint64_t *idents = calloc(n + 1, sizeof(*idents)), table;
	int i;

	for (i = 0; i < n; i++)
		idents[i] = new_int(t, 1000 + i);
	table = new_dict_claiming(t, n, idents, threads, nentries);
	free(idents);
	return table;
}

/* _PyRuntime and its one interpreter, whose sys.modules holds threading,
 * whose _active is active. */
static void publish(struct target *t, uint64_t active)
{
	const struct py_offsets *off = &t->proc.off;
	uint64_t k[2], v[2], module;

	t->active = active;
	k[0] = new_str(t, "_active");
	v[0] = active;
	module = new_obj(t->module_type, 32);
	put64(module, MODULE_DICT, new_dict(t, 1, k, v));
	k[0] = new_str(t, "sys");
	v[0] = new_obj(t->module_type, 32);
	k[1] = new_str(t, "threading");
	v[1] = module;
	t->modules = new_dict(t, 2, k, v);

	t->interp = alloc(off->interp_modules + off->interp_next + 8);
	put64(t->interp, off->interp_modules, t->modules);
	t->proc.runtime_addr = alloc(off->runtime_interpreters_head + 8);
	put64(t->proc.runtime_addr, off->runtime_interpreters_head, t->interp);
}

static void publish_threads(struct target *t, int n, const uint64_t *threads)
{
	publish(t, new_table(t, n, threads, (uint64_t)n));
}

/* threadnames__read from scratch, with reads and bytes counted. */
static int read_names(struct target *t, struct threadname *out, int max)
{
	uint64_t active = 0;

	reads = read_bytes = 0;
	return threadnames__read(PID, &t->proc, &active, out, max);
}

static bool has(const struct threadname *v, int n, pid_t tid, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (v[i].ns_tid == tid && !strcmp(v[i].name, s))
			return true;
	return false;
}

static struct threadname got[8];	/* what expect read */

/* Read t: want names, MainThread among them (or an error, when want < 0),
 * in a small read: the count. */
static int expect(struct target *t, const char *what, int want)
{
	int n = read_names(t, got, 8);

	CHECK(want < 0 ? n < 0 : n == want && has(got, n, 100, "MainThread"),
	      "3.%d %s: %d names, not %d", t->minor, what, n, want);
	CHECK(reads <= SMALL_READS && read_bytes <= SMALL_BYTES,
	      "3.%d %s: %lu reads, %lu bytes", t->minor, what, reads,
	      read_bytes);
	return n;
}

/* What a hostile table is measured against: a true one. */
static void test_true(int minor)
{
	struct target t;
	uint64_t th[2];
	int n;

	if (new_target(&t, minor))
		return;
	th[0] = named(&t, "MainThread", 100);
	th[1] = named(&t, "worker-1", 101);
	publish_threads(&t, 2, th);
	n = expect(&t, "true table", 2);
	CHECK(has(got, n, 101, "worker-1"), "3.%d: worker-1 not named", minor);
}

/* Tables whose headers claim more than there is. */
static void test_huge(int minor)
{
	struct target t;
	uint64_t th[2], keys;

	if (new_target(&t, minor))
		return;
	th[0] = named(&t, "MainThread", 100);
	th[1] = named(&t, "worker-1", 101);
	publish(&t, new_table(&t, 2, th, 1ULL << 40));
	expect(&t, "2^40 entries", -1);

	/* the largest index a header may claim, full: past the mapping */
	publish_threads(&t, 2, th);
	memcpy(&keys, (void *)(uintptr_t)(t.active + DICT_KEYS), 8);
	if (minor < 11) {
		put64(keys, 8, 1ULL << 26);
	} else {
		((uint8_t *)(uintptr_t)keys)[8] = 26;
		((uint8_t *)(uintptr_t)keys)[9] = 28;
	}
	put64(keys, minor < 11 ? 32 : 24, 1ULL << 26);
	expect(&t, "2^26 entries", -1);
}

/* Tables, objects and lists that lead back to themselves. */
static void test_loops(int minor)
{
	struct target t;
	uint64_t th[3], k, v;

	if (new_target(&t, minor))
		return;
	th[0] = named(&t, "MainThread", 100);
	/* a Thread whose __dict__ is the table, one whose _name is itself */
	th[1] = new_instance(&t, 0);
	th[2] = new_instance(&t, 0);
	set_dict(&t, th[2], thread_dict(&t, th[2], new_int(&t, 102)));
	publish_threads(&t, 3, th);
	set_dict(&t, th[1], t.active);
	expect(&t, "Thread's dict the table, Thread its _name", 1);

	put64(t.active, DICT_KEYS, t.active);
	expect(&t, "the table its own keys", -1);

	/* sys.modules["threading"] is sys.modules */
	publish_threads(&t, 1, th);
	k = new_str(&t, "threading");
	v = t.modules;
	put64(t.interp, t.proc.off.interp_modules, new_dict(&t, 1, &k, &v));
	expect(&t, "sys.modules[\"threading\"] sys.modules", -1);

	/* the list of interpreters, whose main one is the last, a loop */
	publish_threads(&t, 1, th);
	put64(t.interp, t.proc.off.interp_next, t.interp);
	expect(&t, "interpreters in a loop", 1);
}

/* Names that cannot be, or cannot be read. */
static void test_names(int minor)
{
	static uint8_t tail[256] __attribute__((aligned(16)));
	struct target t;
	uint64_t th[8], str;

	if (new_target(&t, minor))
		return;
	th[0] = named(&t, "MainThread", 100);
	/* 2^62 characters: more than user space holds, not a prefix */
	th[1] = new_thread(&t, new_str_len(&t, "long", 1ULL << 62),
			   new_int(&t, 101));
	/* 2^20, whose text stops where its mapping does */
	str = new_str_len(&t, "cut", 1ULL << 20);
	memset(tail, 0, sizeof(tail));
	memcpy(tail, (void *)(uintptr_t)str, t.proc.off.unicode_ascii_data + 3);
	fuzz_segs[fuzz_nsegs++] = (struct fuzz_segment){
		ADDR(tail), t.proc.off.unicode_ascii_data + 64, tail };
	th[2] = new_thread(&t, ADDR(tail), new_int(&t, 102));
	/* _name no str: an int, the table, a type, unmapped, past user space */
	th[3] = new_thread(&t, new_int(&t, 5), new_int(&t, 103));
	th[4] = new_thread(&t, 0, new_int(&t, 104));
	th[5] = new_thread(&t, t.int_type, new_int(&t, 105));
	th[6] = new_thread(&t, 0x1000, new_int(&t, 106));
	th[7] = new_thread(&t, -8ULL, new_int(&t, 107));
	publish_threads(&t, 8, th);
	set_dict(&t, th[4], thread_dict(&t, t.active, new_int(&t, 104)));
	expect(&t, "names that are none", 1);

	/* _native_id no int, or no tid */
	new_target(&t, minor);
	th[0] = named(&t, "MainThread", 100);
	th[1] = new_thread(&t, new_str(&t, "a"), new_str(&t, "101"));
	th[2] = new_thread(&t, new_str(&t, "b"), new_int(&t, 0));
	th[3] = new_thread(&t, new_str(&t, "c"), 0x1000);
	publish_threads(&t, 4, th);
	expect(&t, "native ids that are none", 1);
}

/*
 * A full table, every entry the same Thread, whose dict holds 2^16
 * attributes and neither _name nor _native_id: the most a target can
 * make each lookup cost.  Read whole, that was 2^28 reads of the target,
 * minutes; it must stay within 64 a thread (2^19 at 8192 threads, about
 * 0.3 s).
 */
static void test_heavy(int minor)
{
	static struct threadname v[THREADNAMES_MAX];
	int nattrs = 1 << 16, i, n;
	uint64_t *k = calloc(nattrs, sizeof(*k));
	uint64_t *val = calloc(nattrs, sizeof(*val));
	struct target t;
	char name[32];

	if (!k || !val || new_target(&t, minor))
		goto out;
	for (i = 0; i < nattrs; i++) {
		snprintf(name, sizeof(name), "attr_%d", i);
		k[i] = new_str(&t, name);
		val[i] = k[i];
	}
	val[0] = new_instance(&t, new_dict(&t, nattrs, k, val));
	for (i = 1; i < THREADNAMES_MAX; i++)
		val[i] = val[0];
	publish_threads(&t, THREADNAMES_MAX, val);
	n = read_names(&t, v, THREADNAMES_MAX);
	CHECK(n == 0, "3.%d heavy: %d names", minor, n);
	CHECK(reads <= THREADNAMES_MAX * 64u && read_bytes <= (32u << 20),
	      "3.%d heavy: %lu reads, %lu bytes", minor, reads, read_bytes);
out:
	free(k);
	free(val);
}

int main(int argc, char **argv)
{
	int minor;

	if (argc > 1)
		fixtures = argv[1];
	for (minor = 8; minor <= 15; minor++) {
		test_true(minor);
		test_huge(minor);
		test_loops(minor);
		test_names(minor);
		test_heavy(minor);
	}
	return check_summary();
}
