// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What --native's tables cost for a host's binaries (tools/bench's
 * native section): each ELF file named on stdin, one path a line, is
 * read as pysight reads a binary a process maps (user/native: its
 * .eh_frame compiled to rows, its function names), and one line per
 * file goes to stdout: rows, bytes of rows, bytes of names, and the
 * milliseconds the reading took.  Built by `make .output/native-tables`.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ehframe.h"
#include "elffile.h"
#include "nsyms.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
	char path[4096];

	while (fgets(path, sizeof(path), stdin)) {
		struct ehframe_table t = {};
		struct nsyms *syms = NULL;
		struct elf_file *ef;
		const void *sec;
		uint64_t addr;
		size_t size;
		double t0;

		path[strcspn(path, "\n")] = 0;
		t0 = now_ms();
		if (elffile__open(path, &ef))
			continue;
		if (!elffile__section_view(ef, ".eh_frame", EHFRAME_MAX_SIZE,
					   &sec, &size, &addr))
			ehframe__parse(sec, size, addr, &t);
		if (nsyms__load(ef, &syms))
			syms = NULL;
		printf("%s %zu %zu %zu %.2f\n", path, t.n,
		       t.n * sizeof(struct unwind_row), nsyms__bytes(syms),
		       now_ms() - t0);
		nsyms__free(syms);
		ehframe__free(&t);
		elffile__close(ef);
	}
	return 0;
}
