// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolise code objects from the target's memory.  Every read is
 * bounded: the target may be mutating or freeing what we look at.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "remote.h"
#include "symbols.h"

#define MAX_STR		1024
#define MAX_LINETABLE	(256 << 10)

/* A code object, by its address and identity check. */
struct sym_key {
	uint64_t code;
	uint32_t check;
	uint32_t pad;
};

struct sym_entry {
	struct sym_key key;
	struct pysym sym;
	UT_hash_handle hh;
};

/* One process's symbols: forgetting a process costs its own entries. */
struct sym_proc {
	pid_t pid;
	struct sym_entry *map;
	UT_hash_handle hh;
};

struct symcache {
	struct sym_proc *procs;
	size_t entries;
	uint64_t misses, stale;
};

struct symcache *symcache__new(void)
{
	return calloc(1, sizeof(struct symcache));
}

static void sym_clear(struct pysym *sym);

static void proc_free(struct symcache *sc, struct sym_proc *p)
{
	struct sym_entry *e, *tmp;

	HASH_ITER(hh, p->map, e, tmp) {
		HASH_DEL(p->map, e);
		sym_clear(&e->sym);
		free(e);
		sc->entries--;
	}
	HASH_DEL(sc->procs, p);
	free(p);
}

void symcache__free(struct symcache *sc)
{
	struct sym_proc *p, *tmp;

	if (!sc)
		return;
	HASH_ITER(hh, sc->procs, p, tmp)
		proc_free(sc, p);
	free(sc);
}

void symcache__forget(struct symcache *sc, pid_t pid)
{
	struct sym_proc *p;

	HASH_FIND_INT(sc->procs, &pid, p);
	if (p)
		proc_free(sc, p);
}

size_t symcache__size(const struct symcache *sc)
{
	return sc->entries;
}

uint64_t symcache__stale(const struct symcache *sc)
{
	return sc->stale;
}

const uint8_t *symbols__snapshot_region(const struct code_event *ev, int i,
					size_t *cap)
{
	static const size_t caps[SNAP__MAX] = {
		[SNAP_CODE] = PYSIGHT_CODE_WINDOW,
		[SNAP_NAME] = PYSIGHT_SNAP_STR, [SNAP_QUAL] = PYSIGHT_SNAP_STR,
		[SNAP_FILE] = PYSIGHT_SNAP_STR, [SNAP_LT] = PYSIGHT_SNAP_LT,
	};
	const uint8_t *data[SNAP__MAX] = {
		ev->code_win, ev->name, ev->qual, ev->file, ev->lt,
	};

	*cap = ev->r[i].len < caps[i] ? ev->r[i].len : caps[i];
	return data[i];
}

/*
 * A freed object keeps its type and fields: only its first word becomes
 * the allocator's free-list link, NULL or the address of another free
 * block in the same pymalloc pool (16 KiB from 3.10, 4 KiB before).  A
 * live object's first word is its refcount (3.14 adds flag bits above
 * bit 32), never that.  glibc's free overwrites the type word instead,
 * which the type checks catch.
 */
static bool looks_alive(const uint8_t *obj, size_t size, uint64_t addr)
{
	uint64_t first = remote__u64(obj, size, 0);

	return first && (first >> 14) != (addr >> 14);
}

/* Read an object's first len bytes: -EFAULT when unreadable or not of
 * type (0: any), -ESTALE when it has been freed. */
static int read_object(const struct remote_mem *mem,
		       const struct py_offsets *off, uint64_t addr,
		       uint64_t type, uint8_t *buf, size_t len)
{
	if (remote__mem_read(mem, addr, buf, len) ||
	    (type && remote__u64(buf, len, off->object_type) != type))
		return -EFAULT;
	return looks_alive(buf, len, addr) ? 0 : -ESTALE;
}

/* Append one code point as UTF-8; out has room for 4 more bytes. */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * A str object as UTF-8.  Compact strings only: code names and file
 * names always are.  The state word's bits are stable from 3.8 to 3.15:
 * interned:2, kind:3, compact:1, ascii:1.
 */
static char *read_str(const struct remote_mem *mem, const struct py_proc *proc,
		      uint64_t addr)
{
	const struct py_offsets *off = &proc->off;
	uint8_t hdr[64], raw[MAX_STR * 4];
	uint32_t state, kind, i;
	uint64_t len;
	size_t data_off, room, o = 0;
	char *s;

	if (read_object(mem, off, addr, proc->unicode_type_addr, hdr,
			sizeof(hdr)))
		return NULL;
	len = remote__u64(hdr, sizeof(hdr), off->unicode_length);
	state = remote__u32(hdr, sizeof(hdr), off->unicode_state);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	data_off = (state >> 6) & 1 ? off->unicode_ascii_data :
				      off->unicode_compact_data;
	/*
	 * A long name is cut at MAX_STR, but a length no object could have
	 * (ending past user space) is a lie: say [unknown], not the prefix.
	 */
	if (data_off == PY_OFF_NONE || addr >= REMOTE_ADDR_END ||
	    len > (REMOTE_ADDR_END - addr - data_off) / kind)
		return NULL;
	if (len > MAX_STR)
		len = MAX_STR;
	/* from a copy BPF made, a few hundred bytes of text: cut there */
	room = remote__mem_room(mem, addr + data_off) / kind;
	if (len > room)
		len = room;
	if (len && remote__mem_read(mem, addr + data_off, raw, len * kind))
		return NULL;
	s = malloc(len * 4 + 1);
	if (!s)
		return NULL;
	for (i = 0; i < len; i++) {
		uint32_t c;

		if (kind == 1)
			c = raw[i];
		else if (kind == 2)
			c = raw[2 * i] | raw[2 * i + 1] << 8;
		else
			memcpy(&c, raw + 4 * i, 4);
		o += put_utf8(s + o, c);
	}
	s[o] = 0;
	return s;
}

static int read_bytes(const struct remote_mem *mem, const struct py_proc *proc,
		      uint64_t addr, uint8_t **out, size_t *outlen)
{
	const struct py_offsets *off = &proc->off;
	uint8_t hdr[32];
	uint64_t len;

	if (read_object(mem, off, addr, proc->bytes_type_addr, hdr,
			sizeof(hdr)))
		return -EFAULT;
	len = remote__u64(hdr, sizeof(hdr), off->bytes_size);
	if (len > MAX_LINETABLE)
		return -E2BIG;
	/* a table longer than BPF copies: no lines (the function's first
	 * is shown), rather than lines from a cut table */
	if (remote__mem_room(mem, addr + off->bytes_data) < len)
		len = 0;
	*out = malloc(len ? len : 1);
	if (!*out)
		return -ENOMEM;
	if (len && remote__mem_read(mem, addr + off->bytes_data, *out, len)) {
		free(*out);
		*out = NULL;	/* read_symbol's sym_clear frees it too */
		return -EFAULT;
	}
	*outlen = len;
	return 0;
}

char *symbols__read_str(pid_t pid, const struct py_proc *proc, uint64_t addr)
{
	struct remote_mem live = { .pid = pid };

	return read_str(&live, proc, addr);
}

int symbols__read_bytes(pid_t pid, const struct py_proc *proc, uint64_t addr,
			uint8_t **out, size_t *outlen)
{
	struct remote_mem live = { .pid = pid };

	return read_bytes(&live, proc, addr, out, outlen);
}

/* The code object's window and the identity check BPF computes of it;
 * -ESTALE when it has been freed. */
static int read_code_check(const struct remote_mem *mem,
			   const struct py_proc *proc, uint64_t code,
			   uint8_t *win, uint32_t *check)
{
	const struct py_offsets *off = &proc->off;
	struct code_ident id;
	int err;

	err = read_object(mem, off, code, proc->code_type_addr, win,
			  PYSIGHT_CODE_WINDOW);
	if (err)
		return err;
	memset(&id, 0, sizeof(id));
	id.name = remote__u64(win, PYSIGHT_CODE_WINDOW, off->code_name);
	id.file = remote__u64(win, PYSIGHT_CODE_WINDOW, off->code_filename);
	id.first = remote__u32(win, PYSIGHT_CODE_WINDOW, off->code_firstlineno);
	id.qual = remote__u64(win, PYSIGHT_CODE_WINDOW, off->code_qualname);
	id.linetable = remote__u64(win, PYSIGHT_CODE_WINDOW,
				   off->code_linetable);
	/* as BPF does: a failed read leaves 0 */
	if (id.name && remote__mem_read(mem, id.name + off->unicode_hash,
					&id.name_hash, sizeof(id.name_hash)))
		id.name_hash = 0;
	if (id.linetable &&
	    remote__mem_read(mem, id.linetable + off->bytes_size,
			     &id.linetable_len, sizeof(id.linetable_len)))
		id.linetable_len = 0;
	if (id.linetable_len &&
	    remote__mem_read(mem, id.linetable + off->bytes_data, id.lt_head,
			     pysight_lt_head_len(id.linetable_len)))
		memset(id.lt_head, 0, sizeof(id.lt_head));
	*check = pysight_code_check(&id);
	return 0;
}

int symbols__code_check_mem(const struct remote_mem *mem,
			    const struct py_proc *proc, uint64_t code,
			    uint32_t *check)
{
	uint8_t win[PYSIGHT_CODE_WINDOW];

	return read_code_check(mem, proc, code, win, check);
}

int symbols__code_check(pid_t pid, const struct py_proc *proc, uint64_t code,
			uint32_t *check)
{
	struct remote_mem live = { .pid = pid };

	return symbols__code_check_mem(&live, proc, code, check);
}

/* The code object's window, checked against what BPF saw. */
static int read_code(const struct remote_mem *mem, const struct py_proc *proc,
		     uint64_t code, uint32_t check, uint8_t *win)
{
	uint32_t now;
	int err;

	/* -ESTALE: freed since BPF saw it */
	err = read_code_check(mem, proc, code, win, &now);
	if (err)
		return err;
	return now == check ? 0 : -ESTALE;
}

static void sym_clear(struct pysym *sym)
{
	free(sym->qualname);
	free(sym->filename);
	free(sym->linetable);
	memset(sym, 0, sizeof(*sym));
}

/*
 * Read the code object, then what it points to, then the code object
 * again: the target runs on, and a code object freed before or during
 * the reads lets its strings' memory go to other objects (seen: a
 * function named right with a freed decoy's file name).  Both reads
 * must find it alive, so its strings lived throughout.
 */
static int read_symbol(const struct remote_mem *mem,
		       const struct py_proc *proc, uint64_t code,
		       uint32_t check, struct pysym *sym)
{
	const struct py_offsets *off = &proc->off;
	uint8_t win[PYSIGHT_CODE_WINDOW], again[PYSIGHT_CODE_WINDOW];
	uint64_t name, qual, file, lt;
	int err;

	err = read_code(mem, proc, code, check, win);
	if (err)
		return err;
	name = remote__u64(win, sizeof(win), off->code_name);
	qual = remote__u64(win, sizeof(win), off->code_qualname);
	file = remote__u64(win, sizeof(win), off->code_filename);
	lt = remote__u64(win, sizeof(win), off->code_linetable);
	sym->qualname = read_str(mem, proc, qual ? qual : name);
	sym->filename = read_str(mem, proc, file);
	sym->firstlineno = (int)remote__u32(win, sizeof(win),
					    off->code_firstlineno);
	if (!sym->qualname || !sym->filename ||
	    read_bytes(mem, proc, lt, &sym->linetable, &sym->linetable_len)) {
		sym_clear(sym);
		return -EFAULT;
	}
	err = read_code(mem, proc, code, check, again);
	if (!err &&
	    lt != remote__u64(again, sizeof(again), off->code_linetable))
		err = -ESTALE;
	if (err)
		sym_clear(sym);
	return err;
}

/*
 * The symbol from the cache, else read from mem.  A failed read is
 * counted only when count is set: a held sample asks again at each pass
 * over the ring, and a snapshot is a second chance, not a second miss.
 */
static const struct pysym *lookup(struct symcache *sc,
				  const struct remote_mem *mem,
				  const struct py_proc *proc, uint64_t code,
				  uint32_t check, bool count)
{
	struct sym_proc *p;
	struct sym_key key;
	struct sym_entry *e;
	int err;

	memset(&key, 0, sizeof(key));
	key.check = check;
	key.code = code;
	HASH_FIND_INT(sc->procs, &mem->pid, p);
	if (p) {
		HASH_FIND(hh, p->map, &key, sizeof(key), e);
		if (e)
			return &e->sym;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	err = read_symbol(mem, proc, code, check, &e->sym);
	if (err) {
		if (count && err == -ESTALE)
			sc->stale++;
		else if (count)
			sc->misses++;
		free(e);
		return NULL;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			sym_clear(&e->sym);
			free(e);
			return NULL;
		}
		p->pid = mem->pid;
		HASH_ADD_INT(sc->procs, pid, p);
	}
	e->key = key;
	HASH_ADD(hh, p->map, key, sizeof(key), e);
	sc->entries++;
	return &e->sym;
}

const struct pysym *symcache__lookup(struct symcache *sc, pid_t pid,
				     const struct py_proc *proc, uint64_t code,
				     uint32_t check)
{
	struct remote_mem live = { .pid = pid };

	return lookup(sc, &live, proc, code, check, true);
}

const struct pysym *symcache__retry(struct symcache *sc, pid_t pid,
				    const struct py_proc *proc, uint64_t code,
				    uint32_t check)
{
	struct remote_mem live = { .pid = pid };

	return lookup(sc, &live, proc, code, check, false);
}

int symcache__add_snapshot(struct symcache *sc, pid_t pid,
			   const struct py_proc *proc,
			   const struct code_event *ev)
{
	struct remote_copy copies[SNAP__MAX];
	struct remote_mem mem = {
		.pid = pid, .copies = copies, .ncopies = SNAP__MAX,
	};
	uint8_t win[sizeof(ev->code_win)];
	uint64_t one = 1;
	size_t cap;
	int i;

	for (i = 0; i < SNAP__MAX; i++) {
		copies[i].addr = ev->r[i].addr;
		copies[i].data = symbols__snapshot_region(ev, i, &cap);
		copies[i].len = cap;
	}
	/* at its dealloc a code object's refcount is 0: alive, all the
	 * same, when the copy was made */
	memcpy(win, ev->code_win, sizeof(win));
	memcpy(win, &one, sizeof(one));
	copies[SNAP_CODE].data = win;
	return lookup(sc, &mem, proc, ev->code, ev->check, false) ? 0 : -EFAULT;
}
