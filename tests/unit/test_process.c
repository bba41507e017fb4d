// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ELF symbol lookup, file-backed reads and version detection.  The test
 * binary is its own fixture: it carries the symbols an interpreter has.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "elffile.h"
#include "process.h"

/* what CPython 3.11.7 exports, and where the debug offsets would sit */
__attribute__((used)) const unsigned long Py_Version = 0x030b07f0;
__attribute__((used)) const char fixture_rodata[16] = "xdebugpy";

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
	CHECK(process__kernel_dev(makedev(8, 1)) == ((8ULL << 20) | 1),
	      "MKDEV(8, 1)");
	CHECK(process__kernel_dev(makedev(0, 300)) == 300, "minor > 255");
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

	fd = process__open_in_root(root, "/real.so");
	CHECK(fd >= 0, "a file inside: %d", fd);
	close(fd);
	fd = process__open_in_root(root, "/inside.so");
	CHECK(fd >= 0, "an absolute link resolves in the root: %d", fd);
	close(fd);
	CHECK(!access("/etc/hostname", F_OK), "host file exists");
	CHECK(process__open_in_root(root, "/escape.so") == -ENOENT,
	      "absolute link to a host file stays in the root");
	CHECK(process__open_in_root(root, "/../../../../etc/hostname") ==
	      -ENOENT, "dot-dot stays in the root");
	fd = process__open_in_root(root, "/fifo");
	CHECK(fd >= 0, "a fifo opens without hanging");
	close(fd);
	close(root);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK(system(p) == 0, "cleanup");
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
	return check_summary();
}
