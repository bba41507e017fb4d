// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ELF symbol lookup, file-backed reads and version detection.  The test
 * binary is its own fixture: it carries the symbols an interpreter has.
 */
#include <elf.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "elffile.h"
#include "process.h"
#include "procmaps.h"

/* what CPython 3.11.7 exports, and where the debug offsets would sit */
__attribute__((used)) const unsigned long Py_Version = 0x030b07f0;
__attribute__((used)) const char fixture_rodata[16] = "xdebugpy";
/* a pointer the loader relocates (R_X86_64_RELATIVE in this PIE) */
__attribute__((used)) const char *const fixture_pointer = fixture_rodata;

static void test_symbols(void)
{
	struct elf_file *ef;
	uint64_t addr = 0, size = 0, hex = 0;
	char buf[16];

	CHECK(!elffile__open("/proc/self/exe", &ef), "open self");
	CHECK(!elffile__symbol(ef, "Py_Version", &addr, &size), "Py_Version");
	CHECK(size == sizeof(unsigned long), "size %lu", (unsigned long)size);
	CHECK(!elffile__read(ef, addr, &hex, sizeof(hex)), "read Py_Version");
	CHECK(hex == 0x030b07f0, "value %#lx", (unsigned long)hex);
	CHECK(!elffile__symbol(ef, "fixture_rodata", &addr, NULL), "rodata");
	CHECK(!elffile__read(ef, addr, buf, 8) && !memcmp(buf, "xdebugpy", 8),
	      "rodata bytes");
	CHECK(elffile__symbol(ef, "_PyRuntime", &addr, NULL) == -ENOENT,
	      "absent symbol");
	/* undefined (imported) symbols are not definitions */
	CHECK(elffile__symbol(ef, "malloc", &addr, NULL) == -ENOENT,
	      "undefined symbol must not match");
	CHECK(elffile__read(ef, ~0ULL - 4, buf, 8) < 0, "wrapping read");
	CHECK(elffile__read(ef, 0, buf, 8) == -ENOENT, "unmapped address");
	CHECK(!elffile__is_exec(ef), "PIE test binary is ET_DYN");
	elffile__close(ef);
}

static void test_not_elf(void)
{
	char path[] = "/tmp/pysight-notelf-XXXXXX";
	struct elf_file *ef = NULL;
	int fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	CHECK(write(fd, "#!/bin/sh\necho hi\n", 18) == 18, "write");
	close(fd);
	CHECK(elffile__open(path, &ef) == -ENOEXEC, "script is not ELF");
	CHECK(elffile__open("/nonexistent/python3", &ef) == -ENOENT, "missing");
	/* a truncated ELF header */
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(write(fd, "\177ELF\2\1\1", 7) == 7, "write");
	close(fd);
	CHECK(elffile__open(path, &ef) == -ENOEXEC, "truncated ELF");
	unlink(path);
}

static void test_version_names(void)
{
	static const struct {
		const char *path;
		int ret, major, minor;
	} cases[] = {
		{ "/usr/bin/python3.11", 0, 3, 11 },
		{ "/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0", 0, 3, 8 },
		{ "/usr/lib/x86_64-linux-gnu/libpython3.15.so.1.0", 0, 3, 15 },
		{ "/usr/bin/python2.7", 0, 2, 7 },
		{ "/usr/bin/python3", -ENOENT, 0, 0 },
		{ "/usr/bin/python", -ENOENT, 0, 0 },
		{ "/usr/bin/bash", -ENOENT, 0, 0 },
		{ "/opt/python3.12/bin/node", -ENOENT, 0, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int major = 0, minor = 0;
		int ret = process__version_from_name(cases[i].path, &major,
						     &minor);

		CHECK(ret == cases[i].ret, "%s: ret %d", cases[i].path, ret);
		if (!ret)
			CHECK(major == cases[i].major && minor == cases[i].minor,
			      "%s: %d.%d", cases[i].path, major, minor);
	}
}

static void test_inspect_errors(void)
{
	struct pyproc_info info;
	char err[256];
	int ret;

	ret = process__inspect(NULL, 0x3ffffff0, &info, err, sizeof(err));
	CHECK(ret == -ESRCH, "missing pid: %d", ret);
	CHECK(strstr(err, "no such process"), "message: %s", err);
	/* this test is not a Python process */
	ret = process__inspect(NULL, getpid(), &info, err, sizeof(err));
	CHECK(ret == -ENOEXEC, "self: %d (%s)", ret, err);
	CHECK(strstr(err, "not a Python process"), "message: %s", err);
}

static void test_kernel_dev(void)
{
	CHECK(procmaps__kernel_dev(makedev(8, 1)) == ((8ULL << 20) | 1),
	      "MKDEV(8, 1)");
	CHECK(procmaps__kernel_dev(makedev(0, 300)) == 300, "minor > 255");
}

/* A file truncated after it was opened gives errors, not SIGBUS: the
 * reader does not map it (a container can truncate its files at will). */
static void test_truncated_after_open(void)
{
	char path[] = "/tmp/pysight-trunc-XXXXXX", cmd[128];
	struct elf_file *ef;
	uint64_t addr = 0, hex = 0;
	int fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s", getpid(), path);
	CHECK(system(cmd) == 0, "copy self");
	CHECK(!elffile__open(path, &ef), "open copy");
	CHECK(truncate(path, 4096) == 0, "truncate");
	/* the symbol tables and .rodata now lie past the end */
	CHECK(elffile__symbol(ef, "Py_Version", &addr, NULL) == -ENOENT ||
	      elffile__read(ef, addr, &hex, sizeof(hex)) < 0,
	      "reads past the end fail");
	elffile__close(ef);
	unlink(path);
}

/* A uprobe goes only where the file has code, at offsets that add up. */
static void test_code_offset(void)
{
	struct elf_file *ef;
	uint64_t addr = 0, off = 0;

	CHECK(!elffile__open("/proc/self/exe", &ef), "open self");
	CHECK(!elffile__symbol(ef, "main", &addr, NULL), "main");
	CHECK(!elffile__code_offset(ef, addr, &off) && off, "code: %#lx",
	      (unsigned long)off);
	CHECK(!elffile__symbol(ef, "fixture_rodata", &addr, NULL), "rodata");
	CHECK(elffile__code_offset(ef, addr, &off) == -ENOENT,
	      "data is not code");
	CHECK(elffile__code_offset(ef, ~0ULL - 2, &off) == -ENOENT, "wraps");
	CHECK(elffile__code_offset(ef, 0, &off) == -ENOENT, "address 0");
	elffile__close(ef);
}

/* Paths resolve inside a process's root: an absolute symlink or ".."
 * planted by a container never reaches the host's files. */
static void test_open_in_root(void)
{
	char dir[] = "/tmp/pysight-root-XXXXXX", p[256];
	int root, fd;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(p, sizeof(p), "%s/real.so", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0 && write(fd, "ELF", 3) == 3, "real.so");
	close(fd);
	snprintf(p, sizeof(p), "%s/escape.so", dir);
	CHECK(!symlink("/etc/hostname", p), "absolute symlink out");
	snprintf(p, sizeof(p), "%s/inside.so", dir);
	CHECK(!symlink("/real.so", p), "absolute symlink in");
	snprintf(p, sizeof(p), "%s/fifo", dir);
	CHECK(!mkfifo(p, 0644), "fifo");
	root = open(dir, O_PATH | O_DIRECTORY);
	CHECK(root >= 0, "root");

	fd = procmaps__open_in_root(root, "/real.so");
	CHECK(fd >= 0, "a file inside: %d", fd);
	close(fd);
	fd = procmaps__open_in_root(root, "/inside.so");
	CHECK(fd >= 0, "an absolute link resolves in the root: %d", fd);
	close(fd);
	CHECK(!access("/etc/hostname", F_OK), "host file exists");
	CHECK(procmaps__open_in_root(root, "/escape.so") == -ENOENT,
	      "absolute link to a host file stays in the root");
	CHECK(procmaps__open_in_root(root, "/../../../../etc/hostname") ==
	      -ENOENT, "dot-dot stays in the root");
	fd = procmaps__open_in_root(root, "/fifo");
	CHECK(fd >= 0, "a fifo opens without hanging");
	close(fd);
	close(root);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK(system(p) == 0, "cleanup");
}

/* /proc/PID/maps lines: files only, a replaced file's mark cut. */
static void test_parse_mapping(void)
{
	char anon[] = "7f00-7f10 rw-p 00000000 00:00 0 \n",
	     heap[] = "5000-6000 rw-p 00000000 00:00 0          [heap]\n",
	     file[] = "7f1234560000-7f1234561000 r-xp 00002000 fe:01 131 "
		      "        /usr/lib/x86_64-linux-gnu/libz.so.1.2.13\n",
	     gone[] = "1000-2000 r--p 00001000 08:02 77 /tmp/a b (deleted)\n",
	     junk[] = "not a mapping\n";
	struct mapping m;

	CHECK(procmaps__parse(anon, &m) == -EINVAL, "anonymous");
	CHECK(procmaps__parse(heap, &m) == -EINVAL, "heap");
	CHECK(procmaps__parse(junk, &m) == -EINVAL, "junk");
	CHECK(procmaps__parse(file, &m) == 0 &&
	      m.start == 0x7f1234560000ULL && m.end == 0x7f1234561000ULL &&
	      m.offset == 0x2000 && m.dev_major == 0xfe && m.dev_minor == 1 &&
	      m.ino == 131 && m.exec &&
	      !strcmp(m.path, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"),
	      "a file: %s", m.path);
	CHECK(procmaps__parse(gone, &m) == 0 &&
	      !strcmp(m.path, "/tmp/a b") && !m.exec, "deleted: '%s'", m.path);
}

struct own_maps {
	int n, exe_opened;
	uint64_t last;
	bool ordered;
};

static int own_mapping(void *ctx, const struct mapping *m)
{
	struct own_maps *o = ctx;
	struct stat st;
	int fd;

	o->ordered &= m->start >= o->last;
	o->last = m->start;
	o->n++;
	if (strstr(m->path, "test_process")) {
		fd = procmaps__open(getpid(), m, false, &st);
		if (fd >= 0 && st.st_ino == m->ino) {
			o->exe_opened++;
			close(fd);
		}
	}
	return 0;
}

/* Our own maps, in order; the file mapped opened as that inode. */
static void test_own_mappings(void)
{
	struct own_maps o = { .ordered = true };

	CHECK(procmaps__each(getpid(), own_mapping, &o) == 0, "read");
	CHECK(o.n >= 5 && o.ordered, "%d mappings, in order", o.n);
	CHECK(o.exe_opened >= 1, "our executable opened by its mapping");
	CHECK(procmaps__each(0x7ffffff0, own_mapping, &o) == -ENOENT,
	      "no such process");
}

/*
 * A copy of src at dst without what the loader never reads, so it still
 * runs: cut where its last PT_LOAD ends, or its section headers scribbled
 * over and pointed past the end.
 */
static int strip_sections(const char *src, const char *dst, bool cut)
{
	char cmd[PATH_MAX * 2 + 16], junk[4096];
	uint64_t end = 0, shoff;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	struct stat st;
	int fd, i, ok;

	snprintf(cmd, sizeof(cmd), "cp %s %s", src, dst);
	if (system(cmd))
		return -1;
	fd = open(dst, O_RDWR);
	if (fd < 0 || fstat(fd, &st) || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return -1;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph))
			return -1;
		if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end)
			end = ph.p_offset + ph.p_filesz;
	}
	if (cut) {
		ok = end && end < (uint64_t)st.st_size && !ftruncate(fd, (off_t)end);
	} else {
		memset(junk, 0xa5, sizeof(junk));
		shoff = (uint64_t)st.st_size * 4;
		ok = pwrite(fd, junk, sizeof(junk) < st.st_size - eh.e_shoff ?
			    sizeof(junk) : st.st_size - eh.e_shoff, eh.e_shoff) > 0 &&
		     pwrite(fd, &shoff, sizeof(shoff),
			    offsetof(Elf64_Ehdr, e_shoff)) == sizeof(shoff);
	}
	close(fd);
	return ok ? 0 : -1;
}

/* What the loader reads is all a section-less file keeps: its exported
 * symbols, data and relocations, found through PT_DYNAMIC, say what the
 * whole file says. */
static void test_sectionless(void)
{
	static const char *const names[] = { "Py_Version", "fixture_rodata",
					     "fixture_pointer", "main" };
	char path[] = "/tmp/pysight-nosec-XXXXXX", buf[16], self[64];
	struct elf_file *whole, *ef;
	uint64_t want, got, size, ptr, off_w, off_g;
	size_t i;
	int fd, cut;

	/* not /proc/self/exe: cp would copy itself */
	snprintf(self, sizeof(self), "/proc/%d/exe", getpid());
	CHECK(!elffile__open(self, &whole), "open self");
	for (cut = 0; cut < 2; cut++) {
		fd = mkstemp(path);
		CHECK(fd >= 0, "mkstemp");
		close(fd);
		CHECK(!strip_sections(self, path, cut), "strip a copy");
		CHECK(!elffile__open(path, &ef), "%s: opens",
		      cut ? "cut" : "scribbled");
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			want = got = size = 0;
			CHECK(!elffile__symbol(whole, names[i], &want, NULL), "%s",
			      names[i]);
			CHECK(!elffile__symbol(ef, names[i], &got, &size) &&
			      got == want && size,
			      "%s without sections: %#lx, size %lu (want %#lx)",
			      names[i], (unsigned long)got, (unsigned long)size,
			      (unsigned long)want);
		}
		CHECK(!elffile__symbol(ef, "fixture_rodata", &got, NULL) &&
		      !elffile__read(ef, got, buf, 8) && !memcmp(buf, "xdebugpy", 8),
		      "rodata bytes from the segments");
		CHECK(!elffile__symbol(ef, "fixture_pointer", &got, NULL) &&
		      !elffile__read_pointer(ef, got, &ptr) &&
		      !elffile__symbol(whole, "fixture_rodata", &want, NULL) &&
		      ptr == want, "relocated pointer %#lx (want %#lx)",
		      (unsigned long)ptr, (unsigned long)want);
		CHECK(!elffile__symbol(ef, "main", &got, NULL) &&
		      !elffile__code_offset(ef, got, &off_g) &&
		      !elffile__code_offset(whole, got, &off_w) && off_g == off_w,
		      "code offset");
		CHECK(elffile__symbol(ef, "malloc", &got, NULL) == -ENOENT,
		      "an import is not a definition");
		CHECK(elffile__symbol(ef, "_PyRuntime", &got, NULL) == -ENOENT,
		      "absent symbol");
		CHECK(elffile__read(ef, ~0ULL - 4, buf, 8) < 0, "wrapping read");
		elffile__close(ef);
		unlink(path);
		memcpy(path + strlen(path) - 6, "XXXXXX", 6);
	}
	elffile__close(whole);
}

/*
 * A file with more program headers than read_headers() keeps (64), no
 * sections, and its one code segment last: libelf still has its program
 * headers, and both the code offset and a read through the segments use
 * them.
 */
static void test_many_phdrs(void)
{
	enum { NPH = 70, SEG = 0x1000 };
	char path[] = "/tmp/pysight-phdrs-XXXXXX", buf[8];
	static uint8_t file[2 * SEG];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)file;
	Elf64_Phdr *ph = (Elf64_Phdr *)(file + sizeof(*eh));
	struct elf_file *ef;
	uint64_t off = 0;
	int fd, i;

	memset(file, 0, sizeof(file));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = NPH;
	for (i = 0; i < NPH; i++)
		ph[i].p_type = PT_NOTE;
	ph[NPH - 1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				    .p_offset = SEG, .p_vaddr = 0x400000 + SEG,
				    .p_filesz = SEG, .p_memsz = SEG, .p_align = SEG };
	memcpy(file + SEG + 0x10, "deepcode", 8);
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, file, sizeof(file)) == sizeof(file),
	      "write %s", path);
	close(fd);
	CHECK(!elffile__open(path, &ef), "%d program headers open", NPH);
	CHECK(!elffile__code_offset(ef, 0x400000 + SEG + 0x10, &off) &&
	      off == SEG + 0x10, "code offset %#lx", (unsigned long)off);
	CHECK(!elffile__read(ef, 0x400000 + SEG + 0x10, buf, 8) &&
	      !memcmp(buf, "deepcode", 8), "read through the last segment");
	CHECK(elffile__read(ef, 0x400000 + 2 * SEG - 4, buf, 8) < 0,
	      "a read past the segment's end");
	elffile__close(ef);
	unlink(path);
}

/* Real interpreters with their sections gone: the same facts. */
static void test_sectionless_interpreters(void)
{
	const char *patterns[] = { "/usr/bin/python3.11",
		"/root/.pyenv/versions/3.12*/lib/libpython3.12.so.1.0" };
	char path[] = "/tmp/pysight-nosec-XXXXXX", err[512];
	struct pyproc_info a, b;
	size_t i, tested = 0;
	glob_t g;
	int fd, cut, ra, rb;

	for (i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		if (glob(patterns[i], 0, NULL, &g) || !g.gl_pathc) {
			printf("  (no %s here)\n", patterns[i]);
			continue;
		}
		for (cut = 0; cut < 2; cut++) {
			fd = open(g.gl_pathv[0], O_RDONLY);
			memset(&a, 0, sizeof(a));
			ra = process__facts_of_fd(fd, g.gl_pathv[0], &a, err, sizeof(err));
			close(fd);
			fd = mkstemp(path);
			close(fd);
			CHECK(!strip_sections(g.gl_pathv[0], path, cut), "strip");
			fd = open(path, O_RDONLY);
			memset(&b, 0, sizeof(b));
			rb = process__facts_of_fd(fd, path, &b, err, sizeof(err));
			close(fd);
			CHECK(!ra && !rb, "%s, %s: %d then %d (%s)", g.gl_pathv[0],
			      cut ? "cut" : "scribbled", ra, rb, err);
			CHECK(a.major == b.major && a.minor == b.minor &&
			      a.proc.off.version_hex == b.proc.off.version_hex &&
			      a.proc.runtime_addr == b.proc.runtime_addr &&
			      a.proc.code_type_addr == b.proc.code_type_addr &&
			      a.proc.unicode_type_addr == b.proc.unicode_type_addr &&
			      a.proc.bytes_type_addr == b.proc.bytes_type_addr &&
			      a.code_free_offset && a.code_free_offset == b.code_free_offset,
			      "%s, %s: facts differ (code_dealloc %#llx vs %#llx)",
			      g.gl_pathv[0], cut ? "cut" : "scribbled",
			      (unsigned long long)a.code_free_offset,
			      (unsigned long long)b.code_free_offset);
			unlink(path);
			memcpy(path + strlen(path) - 6, "XXXXXX", 6);
			tested++;
		}
		globfree(&g);
	}
	CHECK(tested, "no interpreter to strip");
}

int main(void)
{
	test_symbols();
	test_not_elf();
	test_version_names();
	test_inspect_errors();
	test_kernel_dev();
	test_truncated_after_open();
	test_code_offset();
	test_open_in_root();
	test_parse_mapping();
	test_own_mappings();
	test_sectionless();
	test_sectionless_interpreters();
	test_many_phdrs();
	return check_summary();
}
