// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/native/native.c on our own process: the executable mappings,
 * each binary read once for all processes, a frame named by its
 * function and library, and a binary freed when no process maps it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "check.h"
#include "elffile.h"
#include "native.h"
#include "rowpool.h"

static const struct native_map *holding(const struct native_proc *p,
					const void *fn)
{
	return native_proc__find(p, (uint64_t)(uintptr_t)fn);
}

#define POOL_ROWS	(8u << 20)

/* The pc of the row holding addr, found the way BPF will: the mapping
 * by binary search, then the row; ~0 when none. */
static uint32_t bpf_row(const struct native_maps *m,
			const struct unwind_row *rows, uint64_t addr)
{
	uint32_t lo = 0, hi = m->n, rlo, rhi;
	const struct native_mapping *x = NULL;
	uint64_t vaddr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < m->m[mid].start) {
			hi = mid;
		} else if (addr >= m->m[mid].end) {
			lo = mid + 1;
		} else {
			x = &m->m[mid];
			break;
		}
	}
	if (!x)
		return ~0u;
	vaddr = addr - x->start + x->vaddr;
	rlo = x->row_first;
	rhi = x->row_first + x->row_n;
	if (vaddr < rows[rlo].pc)
		return ~0u;
	while (rhi - rlo > 1) {
		uint32_t mid = rlo + (rhi - rlo) / 2;

		if (rows[mid].pc <= vaddr)
			rlo = mid;
		else
			rhi = mid;
	}
	return rows[rlo].pc;
}

static const char dbg_source[] =
	"static __attribute__((noinline)) int dbg_inner(int n)\n"
	"{ int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }\n"
	"int dbg_outer(int n) { return dbg_inner(n) + 1; }\n";

/* dbg_inner's place in file path's symbols (the debug file's) */
static uint64_t inner_vaddr(const char *path)
{
	struct elf_file *ef;
	uint64_t v = 0, size;

	if (elffile__open(path, &ef))
		return 0;
	if (elffile__symbol(ef, "dbg_inner", &v, &size))
		v = 0;
	elffile__close(ef);
	return v;
}

/* pid's name for dbg_inner, with the library stripped and its names in
 * a debug file */
static void name_inner(struct native_store *s, pid_t pid, uint64_t vaddr,
		       const char *lib, char *name, size_t len)
{
	struct native_proc *p = NULL;
	size_t i;

	snprintf(name, len, "(not mapped)");
	if (native_store__read_proc(s, pid, &p))
		return;
	for (i = 0; i < p->n; i++)
		if (!strcmp(p->maps[i].bin->name, lib) &&
		    vaddr >= p->maps[i].vaddr &&
		    vaddr < p->maps[i].vaddr + (p->maps[i].end - p->maps[i].start))
			native__frame_name(&p->maps[i], p->maps[i].start +
					   (vaddr - p->maps[i].vaddr) + 1,
					   name, len);
	native_store__put_proc(s, p);
}

/*
 * Names from debug files, the library itself stripped: by
 * .gnu_debuglink beside it, in this process; by build-id under the
 * /usr/lib/debug of the root of a child chrooted into a folder of ours.
 */
static void test_debug_files(struct native_store *s)
{
	char dir[] = "/tmp/pysight-native-XXXXXX", cmd[4096], name[256],
	     path[512];
	uint64_t vaddr;
	int ready[2];
	pid_t kid;
	FILE *f;
	char c;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/dbg.c", dir);
	f = fopen(path, "w");
	CHECK(f && fputs(dbg_source, f) >= 0, "write source");
	if (f)
		fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; for l in link id; do "
		 "clang -O2 -g -shared -fPIC -Wl,--build-id -o lib$l.so dbg.c; "
		 "objcopy --only-keep-debug lib$l.so lib$l.so.debug; "
		 "strip --strip-all lib$l.so; done; "
		 "objcopy --add-gnu-debuglink=liblink.so.debug liblink.so; "
		 "cp liblink.so.debug libzero.so.debug; "
		 "clang -O2 -shared -fPIC -o libzero.so dbg.c; strip libzero.so; "
		 "objcopy --add-gnu-debuglink=libzero.so.debug libzero.so; "
		 "rm libzero.so.debug; ln -s /dev/zero libzero.so.debug; "
		 "id=$(readelf -n libid.so | sed -n 's/.*Build ID: //p'); "
		 "d=root/usr/lib/debug/.build-id/$(echo $id | cut -c1-2); "
		 "mkdir -p $d; mv libid.so.debug $d/$(echo $id | cut -c3-).debug",
		 dir);
	CHECK(system(cmd) == 0, "build: %s", cmd);

	snprintf(path, sizeof(path), "%s/liblink.so.debug", dir);
	vaddr = inner_vaddr(path);
	snprintf(path, sizeof(path), "%s/liblink.so", dir);
	CHECK(vaddr && dlopen(path, RTLD_NOW), "dlopen %s", path);
	name_inner(s, getpid(), vaddr, "liblink.so", name, sizeof(name));
	CHECK(!strcmp(name, "dbg_inner [liblink.so]"), "by debuglink: %s",
	      name);

	/* a debug link to /dev/zero: no name, and no hang */
	snprintf(path, sizeof(path), "%s/libzero.so", dir);
	CHECK(dlopen(path, RTLD_NOW), "dlopen %s", path);
	name_inner(s, getpid(), vaddr, "libzero.so", name, sizeof(name));
	CHECK(!strncmp(name, "[libzero.so]+0x", 15), "a link to /dev/zero: %s",
	      name);

	CHECK(!pipe(ready), "pipe");
	kid = fork();
	if (kid == 0) {
		snprintf(path, sizeof(path), "%s/libid.so", dir);
		if (!dlopen(path, RTLD_NOW))
			_exit(1);
		snprintf(path, sizeof(path), "%s/root", dir);
		if (chroot(path) || chdir("/"))
			_exit(2);
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(ready[1]);
	CHECK(read(ready[0], &c, 1) == 1, "the child chrooted");
	close(ready[0]);
	/* the same code, so the same place as liblink's */
	name_inner(s, kid, vaddr, "libid.so", name, sizeof(name));
	CHECK(!strcmp(name, "dbg_inner [libid.so]"), "by build-id in the "
	      "process's root: %s", name);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "cleanup");
}

int main(void)
{
	struct rowpool *pool = rowpool__new(POOL_ROWS);
	struct unwind_row *rows = calloc(POOL_ROWS, sizeof(*rows));
	struct native_store *s = native_store__new(pool, rows);
	static struct native_maps bpf;
	struct native_proc *p = NULL, *again = NULL, *child = NULL;
	const struct native_map *m;
	const struct unwind_row *row;
	size_t bins, bytes;
	uint64_t loaded;
	char name[256];
	pid_t kid;

	CHECK(s && native_store__read_proc(s, getpid(), &p) == 0 && p,
	      "our maps");
	if (!p)
		return check_summary();
	CHECK(p->n >= 3 && !p->unreadable, "%zu executable mappings, %u "
	      "unreadable", p->n, p->unreadable);

	/* getppid: one ASan does not wrap */
	m = holding(p, (const void *)getppid);
	CHECK(m && !strcmp(m->bin->name, "libc.so.6"), "getppid is libc's: %s",
	      m ? m->bin->name : "-");
	if (m) {
		uint64_t a = (uint64_t)(uintptr_t)getppid + 2;

		native__frame_name(m, a, name, sizeof(name));
		CHECK(!strcmp(name, "getppid [libc.so.6]"), "named %s", name);
		row = ehframe__find(&m->bin->rows, a - m->start + m->vaddr);
		CHECK(row && row->cfa == UNW_CFA_RSP, "getppid has a rule");
		CHECK(m->bin->build_id_len == 20, "libc's build-id");
		/* as BPF will find it: the mapping, then the row in the pool */
		CHECK(native_proc__bpf_maps(p, &bpf) >= 3, "maps for BPF: %u",
		      bpf.n);
		CHECK(m->bin->placed && bpf_row(&bpf, rows, a) ==
		      ehframe__find(&m->bin->rows, a - m->start + m->vaddr)->pc,
		      "the pool's row is the table's");
	}
	m = holding(p, (const void *)main);
	native__frame_name(m, (uint64_t)(uintptr_t)main + 1, name,
			   sizeof(name));
	CHECK(m && !strcmp(name, "main [test_native]"), "our main: %s", name);
	CHECK(!holding(p, (const void *)&s), "the stack is no binary's");

	/* a second look shares every binary */
	bins = native_store__binaries(s);
	bytes = native_store__bytes(s);
	CHECK(native_store__read_proc(s, getpid(), &again) == 0 &&
	      native_store__binaries(s) == bins &&
	      native_store__bytes(s) == bytes, "read once: %zu binaries, "
	      "%zu bytes", bins, bytes);
	native_store__put_proc(s, again);

	/* another process: its own binaries come and go with it */
	kid = fork();
	if (kid == 0) {
		execl("/usr/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(200000);
	CHECK(native_store__read_proc(s, kid, &child) == 0 && child &&
	      native_store__binaries(s) == bins + 1, "sleep adds itself: %zu",
	      native_store__binaries(s));
	native_store__put_proc(s, child);
	/* kept a while unmapped: mapped again, it is not read again */
	loaded = native_store__loaded(s);
	CHECK(native_store__binaries(s) == bins + 1 &&
	      native_store__unmapped(s) == 1, "sleep kept unmapped: %zu, %u",
	      native_store__binaries(s), native_store__unmapped(s));
	CHECK(native_store__read_proc(s, kid, &child) == 0 &&
	      native_store__loaded(s) == loaded &&
	      native_store__unmapped(s) == 0, "and taken back, not read: "
	      "%llu read", (unsigned long long)native_store__loaded(s));
	native_store__put_proc(s, child);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	native_store__keep_unmapped(s, 0);
	CHECK(native_store__binaries(s) == bins &&
	      native_store__bytes(s) == bytes, "and goes: %zu binaries, "
	      "%zu bytes", native_store__binaries(s),
	      native_store__bytes(s));
	CHECK(native_store__read_proc(s, kid, &child) == -ENOENT, "gone");

	native_store__put_proc(s, p);
	test_debug_files(s);
	CHECK(native_store__binaries(s) == 0 && native_store__bytes(s) == 0,
	      "nothing held after the last process");
	{
		/* a pool too small for libc: its rows stay out, and BPF is
		 * given their mappings without rows (frame pointers there) */
		struct rowpool *tiny = rowpool__new(20000);
		struct native_store *t = native_store__new(tiny, rows);
		struct native_proc *q = NULL;
		unsigned int bare = 0, k;

		native_store__keep_unmapped(t, 0);
		CHECK(native_store__read_proc(t, getpid(), &q) == 0 &&
		      native_store__unplaced(t) > 0 &&
		      native_proc__bpf_maps(q, &bpf) == q->n, "%zu binaries "
		      "without room, %u of %zu mappings for BPF",
		      native_store__unplaced(t), bpf.n, q ? q->n : 0);
		for (k = 0; k < bpf.n; k++)
			bare += !bpf.m[k].row_n;
		CHECK(bare > 0 && bare < bpf.n, "%u mappings without rows", bare);
		native_store__put_proc(t, q);
		CHECK(rowpool__used(tiny) == 0, "tiny pool empty again");
		native_store__free(t);
		rowpool__free(tiny);
	}
	CHECK(rowpool__used(pool) == 0 && native_store__unplaced(s) == 0,
	      "the pool is empty again: %u rows", rowpool__used(pool));
	printf("  our process: %zu binaries, %zu bytes\n", bins, bytes);
	native_store__free(s);
	rowpool__free(pool);
	free(rows);
	return check_summary();
}
