// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <uthash.h>

#include "clock.h"
#include "elffile.h"
#include "native.h"
#include "nsyms.h"
#include "procmaps.h"
#include "remote.h"
#include "rowpool.h"
#include "utf8.h"

/* a debug file larger than this is not read: libxul's is 1.5 GiB */
/* CPython's eval loop: the binary that defines it is the interpreter */
#define EVAL_LOOP	"_PyEval_EvalFrameDefault"
#define DEBUG_FILE_MAX	(4LL << 30)
/* a process mapping more executable files than this is cut there */
#define MAPS_MAX	4096

/* A binary no process maps is kept this long, and those kept take at
 * most IDLE_BYTES: a host that runs the same short program again and
 * again reads it once, not at every exec. */
#define IDLE_NS		(10 * 1000000000ULL)
#define IDLE_BYTES	(64u << 20)

struct entry {
	struct native_binary bin;
	uint64_t idle_since;	/* ns; 0: mapped by some process */
	UT_hash_handle hh;
};

struct native_store {
	struct entry *bins;
	size_t bytes, idle_bytes;
	unsigned int idle;
	uint64_t keep_ns;	/* IDLE_NS, but for the tests */
	uint64_t loaded;	/* binaries read, in all */
	struct rowpool *pool;
	struct unwind_row *rows;
};

struct native_store *native_store__new(struct rowpool *pool,
				       struct unwind_row *rows)
{
	struct native_store *s = calloc(1, sizeof(*s));

	if (s) {
		s->pool = pool;
		s->rows = rows;
		s->keep_ns = IDLE_NS;
	}
	return s;
}

static size_t bin_bytes(const struct native_binary *b)
{
	return sizeof(struct entry) + b->rows.n * sizeof(*b->rows.rows) +
	       nsyms__bytes(b->syms);
}

static void drop(struct native_store *s, struct entry *e)
{
	HASH_DEL(s->bins, e);
	s->bytes -= bin_bytes(&e->bin);
	if (e->idle_since) {
		s->idle_bytes -= bin_bytes(&e->bin);
		s->idle--;
	}
	if (e->bin.placed)
		rowpool__put(s->pool, e->bin.row_first, (__u32)e->bin.rows.n);
	ehframe__free(&e->bin.rows);
	nsyms__free(e->bin.syms);
	free(e);
}

/* The binary unmapped longest ago, NULL when none is. */
static struct entry *oldest_idle(const struct native_store *s)
{
	struct entry *e, *tmp, *old = NULL;

	HASH_ITER(hh, s->bins, e, tmp)
		if (e->idle_since && (!old || e->idle_since < old->idle_since))
			old = e;
	return old;
}

void native_store__expire(struct native_store *s)
{
	uint64_t now = clock__now_ns();
	struct entry *e, *tmp;

	if (!s || !s->idle)
		return;
	HASH_ITER(hh, s->bins, e, tmp)
		if (e->idle_since && now - e->idle_since >= s->keep_ns)
			drop(s, e);
	while (s->idle_bytes > IDLE_BYTES && (e = oldest_idle(s)))
		drop(s, e);
}

/* No process maps it any more: kept a while, in case one comes. */
static void unmapped(struct native_store *s, struct entry *e)
{
	e->idle_since = clock__now_ns();
	s->idle_bytes += bin_bytes(&e->bin);
	s->idle++;
	native_store__expire(s);
}

void native_store__free(struct native_store *s)
{
	struct entry *e, *tmp;

	if (!s)
		return;
	HASH_ITER(hh, s->bins, e, tmp)
		drop(s, e);
	free(s);
}

/* The regular file at path inside the process's root; for a path under
 * /usr/lib/debug, else inside ours (debug packages are often installed
 * on the host alone): -errno. */
static int open_debug(pid_t pid, const char *path, struct stat *st)
{
	char root[64];
	int rfd, fd = -ENOENT;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0) {
		fd = procmaps__regular_in_root(rfd, path, DEBUG_FILE_MAX, st);
		close(rfd);
	}
	if (fd >= 0 || strncmp(path, "/usr/lib/debug/", 15))
		return fd;
	rfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = procmaps__regular_in_root(rfd, path, DEBUG_FILE_MAX, st);
	close(rfd);
	return fd;
}

/* The debug file at path, if it is b's: the same build-id, or, when b
 * has none, the CRC .gnu_debuglink names.  Its names replace b's when
 * more: true then. */
static bool try_debug_file(struct native_binary *b, pid_t pid,
			   const char *path, bool by_crc, uint32_t crc)
{
	__u8 id[NATIVE_BUILD_ID_MAX];
	struct nsyms *syms = NULL;
	struct elf_file *ef;
	bool used = false;
	struct stat st;
	int fd, n;

	fd = open_debug(pid, path, &st);
	if (fd < 0)
		return false;
	if (!elffile__open_fd(fd, &ef)) {
		n = elffile__build_id(ef, id, sizeof(id));
		if ((b->build_id_len ?
		     n == b->build_id_len && !memcmp(id, b->build_id, n) :
		     by_crc && elffile__crc32(fd, (uint64_t)st.st_size) ==
				crc) &&
		    !nsyms__load(ef, &syms) &&
		    nsyms__count(syms) > nsyms__count(b->syms)) {
			nsyms__free(b->syms);
			b->syms = syms;
			syms = NULL;
			used = true;
		}
		nsyms__free(syms);
		elffile__close(ef);
	}
	close(fd);
	return used;
}

/*
 * Names from a separate debug file (Debian's -dbgsym packages, or
 * objcopy --only-keep-debug): by build-id under /usr/lib/debug/.build-id,
 * else where .gnu_debuglink says, in gdb's places: beside the binary, in
 * its .debug folder, under /usr/lib/debug.
 */
static void read_debug_names(struct native_binary *b, struct elf_file *ef,
			     pid_t pid, const char *path)
{
	char p[PATH_MAX + 512], link[256], dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	uint32_t crc;
	size_t len;
	int i;

	if (b->build_id_len > 1) {
		len = (size_t)snprintf(p, sizeof(p),
				       "/usr/lib/debug/.build-id/%02x/",
				       b->build_id[0]);
		for (i = 1; i < b->build_id_len && len + 3 < sizeof(p); i++)
			len += (size_t)snprintf(p + len, sizeof(p) - len,
						"%02x", b->build_id[i]);
		snprintf(p + len, sizeof(p) - len, ".debug");
		if (try_debug_file(b, pid, p, false, 0))
			return;
	}
	if (elffile__debuglink(ef, link, sizeof(link), &crc) || !slash)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	snprintf(p, sizeof(p), "%s/%s", dir, link);
	if (strcmp(p, path) && try_debug_file(b, pid, p, true, crc))
		return;
	snprintf(p, sizeof(p), "%s/.debug/%s", dir, link);
	if (try_debug_file(b, pid, p, true, crc))
		return;
	snprintf(p, sizeof(p), "/usr/lib/debug%s/%s", dir, link);
	try_debug_file(b, pid, p, true, crc);
}

static void read_binary(struct native_binary *b, struct elf_file *ef,
			pid_t pid, const char *path)
{
	int i;
	const void *sec;
	uint64_t addr;
	size_t size;
	const char *base = strrchr(path, '/');

	utf8__escape(b->name, sizeof(b->name), base ? base + 1 : path);
	b->build_id_len = elffile__build_id(ef, b->build_id,
					    sizeof(b->build_id));
	if (b->build_id_len < 0)
		b->build_id_len = 0;
	if (b->build_id_len > NATIVE_BUILD_ID_MAX)
		b->build_id_len = NATIVE_BUILD_ID_MAX;
	for (i = 0; i < b->build_id_len; i++)
		snprintf(b->build_id_hex + 2 * i, 3, "%02x", b->build_id[i]);
	if (!elffile__section_view(ef, ".eh_frame", EHFRAME_MAX_SIZE, &sec,
				   &size, &addr))
		ehframe__parse(sec, size, addr, &b->rows);
	if (nsyms__load(ef, &b->syms))
		b->syms = NULL;
	if (!elffile__has_symtab(ef))
		read_debug_names(b, ef, pid, path);
	if (!nsyms__find(b->syms, EVAL_LOOP, &b->eval_lo, &b->eval_hi)) {
		b->interp = true;
		b->loop_lo = b->rows.largest_pc;
		b->loop_hi = (uint64_t)b->rows.largest_pc + b->rows.largest_len;
	}
}

/* The binary of the file ef (stat st) maps, read when new. */
/*
 * e's rows into the pool BPF searches, if they can fit: binaries no
 * process maps give theirs up for them.  Tried again each time a process
 * maps e, as others' rows may have gone since.
 */
static void place(struct native_store *s, struct entry *e)
{
	size_t n = e->bin.rows.n;
	struct entry *old;

	if (e->bin.placed || !s->pool || !s->rows || !n ||
	    n > rowpool__capacity(s->pool))
		return;
	while (rowpool__largest_free(s->pool) < n && (old = oldest_idle(s)) &&
	       old != e)
		drop(s, old);
	if (!rowpool__alloc(s->pool, (__u32)n, &e->bin.row_first)) {
		memcpy(s->rows + e->bin.row_first, e->bin.rows.rows,
		       n * sizeof(*e->bin.rows.rows));
		e->bin.placed = true;
	}
}

static struct native_binary *get_binary(struct native_store *s,
					struct elf_file *ef,
					const struct stat *st, pid_t pid,
					const char *path)
{
	struct py_binary_key key;
	struct entry *e;

	procmaps__file_key(st, &key);
	HASH_FIND(hh, s->bins, &key, sizeof(key), e);
	if (e && e->idle_since) {	/* mapped again */
		e->idle_since = 0;
		s->idle_bytes -= bin_bytes(&e->bin);
		s->idle--;
	}
	if (e) {
		place(s, e);
		return &e->bin;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->bin.key = key;
	read_binary(&e->bin, ef, pid, path);
	s->loaded++;
	place(s, e);
	HASH_ADD(hh, s->bins, bin.key, sizeof(e->bin.key), e);
	s->bytes += bin_bytes(&e->bin);
	return &e->bin;
}

struct reading {
	struct native_store *s;
	struct native_proc *p;
	size_t cap;
	int err;
};

static int one_mapping(void *ctx, const struct mapping *m)
{
	struct reading *r = ctx;
	struct native_proc *p = r->p;
	struct native_binary *b;
	struct elf_file *ef;
	uint64_t vaddr;
	struct stat st;
	int fd;

	if (!m->exec || m->end <= m->start)
		return 0;
	if (p->n == MAPS_MAX)
		return 1;
	fd = procmaps__open(p->pid, m, false, &st);
	if (fd < 0) {
		p->unreadable++;
		return 0;
	}
	if (elffile__open_fd(fd, &ef)) {
		close(fd);
		return 0;	/* not ELF: no code to name */
	}
	if (elffile__offset_vaddr(ef, m->offset, &vaddr)) {
		p->unreadable++;
		goto out;
	}
	if (p->n == r->cap) {	/* before the binary: it must get a user */
		size_t cap = r->cap ? r->cap * 2 : 32;
		struct native_map *v = realloc(p->maps, cap * sizeof(*v));

		if (!v) {
			r->err = -ENOMEM;
			goto out;
		}
		p->maps = v;
		r->cap = cap;
	}
	b = get_binary(r->s, ef, &st, p->pid, m->path);
	if (!b) {
		r->err = -ENOMEM;
		goto out;
	}
	b->refs++;
	p->maps[p->n++] = (struct native_map){ m->start, m->end, vaddr, b };
out:
	elffile__close(ef);
	close(fd);
	return r->err ? 1 : 0;
}

int native_store__read_proc(struct native_store *s, pid_t pid,
			    struct native_proc **out)
{
	struct reading r = { .s = s };
	int err;

	r.p = calloc(1, sizeof(*r.p));
	if (!r.p)
		return -ENOMEM;
	r.p->pid = pid;
	err = procmaps__each(pid, one_mapping, &r);
	if (err < 0 || r.err) {
		native_store__put_proc(s, r.p);
		return err < 0 ? err : r.err;
	}
	*out = r.p;
	return 0;
}

void native_store__put_proc(struct native_store *s, struct native_proc *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		struct native_binary *b = p->maps[i].bin;

		if (!--b->refs)
			unmapped(s, (struct entry *)((char *)b -
						     offsetof(struct entry,
							      bin)));
	}
	free(p->maps);
	free(p);
}

size_t native_store__binaries(const struct native_store *s)
{
	return HASH_COUNT(s->bins);
}

size_t native_store__bytes(const struct native_store *s)
{
	return s->bytes;
}

unsigned int native_store__unmapped(const struct native_store *s)
{
	return s->idle;
}

void native_store__keep_unmapped(struct native_store *s, uint64_t ns)
{
	s->keep_ns = ns;
	native_store__expire(s);
}

uint64_t native_store__loaded(const struct native_store *s)
{
	return s->loaded;
}

size_t native_store__unplaced(const struct native_store *s)
{
	const struct entry *e, *tmp;
	size_t n = 0;

	HASH_ITER(hh, s->bins, e, tmp)
		n += e->bin.rows.n && !e->bin.placed;
	return n;
}

unsigned int native_proc__bpf_maps(const struct native_proc *p,
				   struct native_maps *out)
{
	size_t i;

	out->n = 0;
	out->pad = 0;
	for (i = 0; i < p->n && out->n < NATIVE_MAPS_MAX; i++) {
		const struct native_map *m = &p->maps[i];

		/* a binary without rows in the pool is still known code:
		 * its frames are walked by frame pointers where they can be */
		out->m[out->n++] = (struct native_mapping){
			.start = m->start, .end = m->end, .vaddr = m->vaddr,
			.row_first = m->bin->placed ? m->bin->row_first : 0,
			.row_n = m->bin->placed ? (__u32)m->bin->rows.n : 0,
		};
	}
	return out->n;
}

const struct native_map *native_proc__find(const struct native_proc *p,
					   uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {	/* /proc/PID/maps is in address order */
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

int native_proc__unwind(const struct native_proc *p,
			const struct pysight_unwind *start,
			struct py_frame *out, int max, __u32 *stop)
{
	struct pysight_unwind u = *start;
	const struct native_map *m;
	const struct unwind_row *r;
	struct unwind_row fp;
	uint64_t look, ra, bp = 0;
	__u64 cfa = 0;
	int n = 0;

	*stop = NATIVE_DEEP;
	while (n < max) {
		out[n].code = u.pc;
		out[n].lasti = PY_LASTI_NATIVE;
		out[n].check = 0;
		look = pysight_unwind_lookup(u.pc, n++);
		m = native_proc__find(p, look);
		r = m ? ehframe__find(&m->bin->rows,
				      look - m->start + m->vaddr) : NULL;
		/* no rule here (no row, or a gap between FDEs) */
		if ((!r || r->cfa == UNW_CFA_NONE) && pysight_unwind_fp(&u, &fp))
			r = &fp;
		*stop = !r ? (m ? NATIVE_NO_ROW : NATIVE_NO_MAPPING) :
			     pysight_unwind_cfa(r, &u, &cfa);
		if (*stop)
			break;
		if (remote__read64(p->pid, cfa - 8, &ra) ||
		    (r->rbp == UNW_RBP_CFA &&
		     remote__read64(p->pid, cfa + r->rbp_off, &bp))) {
			*stop = NATIVE_READ;
			break;
		}
		*stop = pysight_unwind_next(r, &u, cfa, ra, bp);
		if (*stop)
			break;
		*stop = NATIVE_DEEP;
	}
	return n;
}

bool native__in_eval(const struct native_map *m, uint64_t addr)
{
	uint64_t vaddr = addr - m->start + m->vaddr;
	const char *fn;
	size_t n = sizeof(EVAL_LOOP) - 1;

	if (!m->bin->interp)
		return false;
	if ((vaddr >= m->bin->eval_lo && vaddr < m->bin->eval_hi) ||
	    (vaddr >= m->bin->loop_lo && vaddr < m->bin->loop_hi))
		return true;
	/* gcc may split its cold paths into a function of their own */
	fn = native__function(m, addr);
	return fn && !strncmp(fn, EVAL_LOOP, n) && fn[n] == '.';
}

uint64_t native__frame_addr(const struct native_map *m, uint64_t addr)
{
	uint64_t vaddr = addr - m->start + m->vaddr, start;

	return nsyms__name(m->bin->syms, vaddr, &start) ? start : vaddr;
}

const char *native__function(const struct native_map *m, uint64_t addr)
{
	return nsyms__name(m->bin->syms, addr - m->start + m->vaddr, NULL);
}

void native__frame_name(const struct native_map *m, uint64_t addr,
			char *buf, size_t len)
{
	uint64_t vaddr = addr - m->start + m->vaddr;
	const char *fn = native__function(m, addr);

	if (fn)
		snprintf(buf, len, "%s [%s]", fn, m->bin->name);
	else
		snprintf(buf, len, "[%s]+0x%" PRIx64, m->bin->name, vaddr);
}
