// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/native/native.c on our own process: the executable mappings,
 * each binary read once for all processes, a frame named by its
 * function and library, and a binary freed when no process maps it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "check.h"
#include "native.h"

static const struct native_map *holding(const struct native_proc *p,
					const void *fn)
{
	return native_proc__find(p, (uint64_t)(uintptr_t)fn);
}

int main(void)
{
	struct native_store *s = native_store__new();
	struct native_proc *p = NULL, *again = NULL, *child = NULL;
	const struct native_map *m;
	const struct unwind_row *row;
	size_t bins, bytes;
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
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	CHECK(native_store__binaries(s) == bins &&
	      native_store__bytes(s) == bytes, "and goes: %zu binaries, "
	      "%zu bytes", native_store__binaries(s),
	      native_store__bytes(s));
	CHECK(native_store__read_proc(s, kid, &child) == -ENOENT, "gone");

	native_store__put_proc(s, p);
	CHECK(native_store__binaries(s) == 0 && native_store__bytes(s) == 0,
	      "nothing held after the last process");
	printf("  our process: %zu binaries, %zu bytes\n", bins, bytes);
	native_store__free(s);
	return check_summary();
}
