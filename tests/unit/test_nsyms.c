// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/native/nsyms.c: native function names by address, on a C++
 * library built here (a namespace, a template, a C function, a static
 * one), on its stripped copy, and on libc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "elffile.h"
#include "nsyms.h"

static const char source[] =
	"namespace burn {\n"
	"template <typename T> struct Grid {\n"
	"  T v[64];\n"
	"  __attribute__((noinline)) T step(int n) {\n"
	"    T s = 0; for (int i = 0; i < n; i++) s += v[i & 63] * i; return s; }\n"
	"};\n"
	"}\n"
	"static __attribute__((noinline)) int hidden(int n) { return n * 3 + 1; }\n"
	"extern \"C\" int burn_outer(int n) {\n"
	"  burn::Grid<long> g{}; return (int)g.step(n) + hidden(n); }\n";

/* name's start in ef, through the symbol table */
static uint64_t addr_of(struct elf_file *ef, const char *name)
{
	uint64_t v = 0, size;

	return elffile__symbol(ef, name, &v, &size) ? 0 : v;
}

/* hidden: where the static function is, read from the unstripped copy */
static void check_lib(const char *path, bool stripped, uint64_t *hidden)
{
	struct elf_file *ef;
	struct nsyms *s = NULL;
	uint64_t outer, start = 0;
	const char *n;

	if (elffile__open(path, &ef)) {
		CHECK(0, "open %s", path);
		return;
	}
	CHECK(nsyms__load(ef, &s) == 0 && nsyms__count(s) >= 2, "%s loads",
	      path);
	outer = addr_of(ef, "burn_outer");
	CHECK(outer, "burn_outer is exported");
	n = nsyms__name(s, outer + 3, &start);
	CHECK(n && !strcmp(n, "burn_outer") && start == outer,
	      "inside burn_outer: %s", n ? n : "(none)");
	n = nsyms__name(s, outer - 1, NULL);
	CHECK(!n || strcmp(n, "burn_outer"), "before burn_outer: %s", n);
	if (!stripped) {
		uint64_t step = addr_of(ef, "_ZN4burn4GridIlE4stepEi");

		n = step ? nsyms__name(s, step + 1, NULL) : NULL;
		CHECK(n && !strcmp(n, "burn::Grid<long>::step"),
		      "demangled without its parameters: %s", n ? n : "-");
		*hidden = addr_of(ef, "_ZL6hiddeni");
		n = nsyms__name(s, *hidden + 1, NULL);
		CHECK(n && !strcmp(n, "hidden"), "a static one: %s",
		      n ? n : "-");
	} else {
		n = nsyms__name(s, *hidden + 1, NULL);
		CHECK(*hidden && !n, "stripped: the static one has no name "
		      "(%s), not its neighbour's", n ? n : "-");
	}
	nsyms__free(s);
	elffile__close(ef);
}

int main(void)
{
	char dir[] = "/tmp/pysight-nsyms-XXXXXX", cmd[2048], src[256],
	     lib[256], bare[256];
	struct elf_file *ef;
	uint64_t hidden = 0;
	struct nsyms *s;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(src, sizeof(src), "%s/burn.cc", dir);
	snprintf(lib, sizeof(lib), "%s/libburn.so", dir);
	snprintf(bare, sizeof(bare), "%s/libbare.so", dir);
	f = fopen(src, "w");
	CHECK(f && fputs(source, f) >= 0, "write source");
	if (f)
		fclose(f);
	snprintf(cmd, sizeof(cmd), "clang++ -O2 -shared -fPIC -o %s %s && "
		 "strip -o %s %s", lib, src, bare, lib);
	CHECK(system(cmd) == 0, "%s", cmd);
	check_lib(lib, false, &hidden);
	check_lib(bare, true, &hidden);

	/* libc: read() by the name a user knows */
	if (!elffile__open("/lib/x86_64-linux-gnu/libc.so.6", &ef)) {
		uint64_t v = addr_of(ef, "read");
		const char *n;

		CHECK(nsyms__load(ef, &s) == 0, "libc loads");
		n = v ? nsyms__name(s, v + 4, NULL) : NULL;
		CHECK(n && !strcmp(n, "read"), "libc's read: %s", n ? n : "-");
		printf("  libc: %zu functions, %zu bytes\n", nsyms__count(s),
		       nsyms__bytes(s));
		nsyms__free(s);
		elffile__close(ef);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "cleanup");
	return check_summary();
}
