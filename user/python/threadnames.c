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
#include <linux/futex.h>

#include "process.h"
#include "pyobj.h"
#include "symbols.h"
#include "threadnames.h"

/*
 * Attributes looked through in one reading, of all its threads together.
 * Each costs a read of the target, ~0.6 us (process_vm_readv of 64
 * bytes).  A Thread sets _name second and _native_id seventh or eighth
 * (Thread.__init__, Lib/threading.py, 3.8 to 3.15): about 10 a thread.
 * Without a budget a table that lies, of THREADNAMES_MAX threads with
 * 2^16 attributes each, cost 2^28 reads, minutes; with 32 a thread, it
 * costs 2^18 at 8192 threads, 160 ms, and subclasses keep room for their
 * own.
 */
#define ATTRS_MAX	(THREADNAMES_MAX * 32)

struct gather {
	pid_t pid;
	const struct py_proc *proc;
	struct threadname *out;
	int n, max;
	unsigned int attrs_left;
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
	if (g->n >= g->max || !g->attrs_left)
		return 1;
	if (pyobj__attr(g->pid, g->proc, thread, "_native_id", &native,
			&g->attrs_left) ||
	    pyobj__int(g->pid, g->proc, native, &tid, &neg) || neg || !tid ||
	    tid > FUTEX_TID_MASK ||
	    pyobj__attr(g->pid, g->proc, thread, "_name", &name,
			&g->attrs_left))
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
	struct gather g = { pid, proc, out, 0, max, ATTRS_MAX };
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
