// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python's thread names, as py-spy shows them: up to 3.13 CPython never
 * tells the kernel, so every thread's comm is the process's ("python3"),
 * while the program calls them MainThread, ThreadPoolExecutor-0_3 or
 * what it chose.  threading keeps its live Thread objects in the dict
 * threading._active, keyed by get_ident(); each knows its _name and, from
 * 3.8, its _native_id: the tid that the thread's own pid namespace gives
 * it, by which the samples' threads are matched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process.h"
#include "pyobj.h"
#include "symbols.h"
#include "threadnames.h"

struct gather {
	pid_t pid;
	const struct py_proc *proc;
	struct threadname *out;
	int n, max;
};

/* Cut s to fit len bytes, not inside a UTF-8 sequence. */
static void copy_name(char *dst, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len) {
		n = len - 1;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = 0;
}

static int one_thread(uint64_t key, uint64_t thread, void *ctx)
{
	struct gather *g = ctx;
	uint64_t name, native, tid;
	bool neg;
	char *s;

	(void)key;
	if (g->n >= g->max)
		return 1;
	if (pyobj__attr(g->pid, g->proc, thread, "_native_id", &native) ||
	    pyobj__int(g->pid, g->proc, native, &tid, &neg) || neg || !tid ||
	    tid > 0x3fffffff ||
	    pyobj__attr(g->pid, g->proc, thread, "_name", &name))
		return 0;	/* not started yet, or not one we can read */
	s = symbols__read_str(g->pid, g->proc, name);
	if (!s)
		return 0;
	if (*s) {
		g->out[g->n].ns_tid = (pid_t)tid;
		copy_name(g->out[g->n].name, sizeof(g->out[g->n].name), s);
		g->n++;
	}
	free(s);
	return 0;
}

int threadnames__read(pid_t pid, const struct py_proc *proc, uint64_t *active,
		      struct threadname *out, int max)
{
	struct gather g = { pid, proc, out, 0, max };
	int err;

	if (!pyobj__supported(proc))
		return -ENOTSUP;
	if (!*active) {
		err = pyobj__module_global(pid, proc, "threading", "_active",
					   active);
		if (err)
			return err;
	}
	err = pyobj__dict_items(pid, proc, *active, THREADNAMES_MAX,
				one_thread, &g);
	if (err < 0)
		*active = 0;	/* look it up again next time */
	return err < 0 ? err : g.n;
}

pid_t threadnames__ns_tid(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	pid_t ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!ns && fgets(line, sizeof(line), f))
		ns = process__nspid(line);
	fclose(f);
	return ns;
}
