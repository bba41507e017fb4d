/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The asyncio tasks of another process: each task's name, state,
 * coroutine chain and who awaits it.  3.14+: where _asyncio's
 * .AsyncioDebug section says they are (each thread's list, and the
 * interpreter's for threads that died).  3.11 to 3.13: the set asyncio
 * itself keeps them in, with who awaits whom rebuilt from what each task
 * awaits.  The lists change under the read: every walk is bounded, every
 * task checked, and a cut list said so.
 */
#ifndef __PYSIGHT_ASYNCTASKS_H
#define __PYSIGHT_ASYNCTASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"
#include "offsets.h"

#define ASYNC_FIRST_MINOR	11	/* coroutines embed their frame */
#define ASYNC_SECTION_MINOR	14	/* .AsyncioDebug appeared in 3.14 */
#define ASYNC_MAX_TASKS		10000	/* per process; more: partial */
#define ASYNC_MAX_CHAIN		64	/* coroutines a task awaits through */
#define ASYNC_MAX_AWAITERS	16	/* kept per task */
#define ASYNC_NAME_LEN		256

/*
 * Find .AsyncioDebug in the files process pid maps (the _asyncio module,
 * or the interpreter that builds it in) and parse it: 0, -ENOENT when no
 * mapped file has it (asyncio not imported yet), or -errno, with why in
 * err.  It opens files of any owner: call it while allowed to.
 */
int asynctasks__locate(pid_t pid, struct py_async_offsets *out, char *err,
		       size_t errlen);

enum async_state {
	ASYNC_RUNNING,		/* its thread's running task */
	ASYNC_WAITING,		/* on its fut_waiter */
	ASYNC_READY,		/* nothing to wait for: scheduled to run */
	ASYNC_DONE,		/* finished or cancelled, not yet unlinked */
};

struct async_task {
	__u64 addr;
	__u64 thread_key;	/* its list's thread (native id); 0: the
				 * interpreter's list */
	char name[ASYNC_NAME_LEN];	/* as the target holds it: escape it */
	int state;			/* enum async_state */
	char awaits[64];		/* the awaited object's type, or "" */
	int status;			/* enum sample_status of the chain */
	int nframes;
	struct py_frame frames[ASYNC_MAX_CHAIN];	/* leaf first */
	int nawaiters;
	__u64 awaiters[ASYNC_MAX_AWAITERS];	/* tasks awaiting it */
	bool awaiters_cut;		/* more, or some unreadable */
	/* the task object's fields as read: what it awaits (fut_waiter), who
	 * awaits it (task_awaited_by) and its name object */
	__u64 waiter, by, name_obj;
	/* the caller's same() said it knows the task as it is: name,
	 * awaits, frames and awaiters were not read */
	bool known;
};

/* A task's place in tasks, by its address. */
struct async_seen {
	__u64 addr;
	int at;
};

struct async_tasks {
	struct async_task *tasks;
	int n;
	int met;		/* tasks met in the lists, kept or not */
	struct async_seen *index;	/* n of them, by address */
	bool partial;		/* a list was cut: torn, looped or too long */
	char why[128];		/* the first cut */
};

/* What reading a process's tasks needs, found once: the section's
 * layout, and the generator's from the interpreter's _Py_DebugOffsets. */
#define ASYNC_TYPES	32	/* type names remembered */
#define ASYNC_TASK_TYPES 8	/* types judged task or not, before 3.14 */
#define ASYNC_LOOPS	16	/* running loops matched to threads */

/* Before 3.14: "child is awaited by parent", as the last read found. */
struct async_edge {
	__u64 child, parent;
	/* the child's coroutine when the edge was read: a task that ended,
	 * and whose memory a new task took, has another */
	__u64 coro;
};

/* A task by its coroutine (before 3.14). */
struct async_coro {
	__u64 coro, task;
};

struct async_layout {
	struct py_async_offsets ao;	/* 3.14+ */
	struct py_gen_offsets go;
	/* 3.11 to 3.13: the facts, and asyncio's objects in the target:
	 * the sets of tasks (_all_tasks or _scheduled_tasks's data, then
	 * _eager_tasks), {loop: running task}, the task type and the
	 * future gather() returns */
	const struct offsets_async_legacy *lo;
	__u64 sets[2], current, ctask, gathering;
	/* pure-Python tasks (_PyTask), whose fields are attributes, and
	 * the str their _state holds while pending (0: none) */
	__u64 pytask, pending;
	struct {
		__u64 type;
		int kind;		/* 0: no task; 1: C; 2: Python */
	} task_types[ASYNC_TASK_TYPES];
	struct async_edge *edges;	/* by child */
	int nedges;
	struct async_coro *coros;	/* by coroutine */
	int ncoros;
	/* type names read, by the type's address: a task's coroutine and
	 * what it awaits are of a few types, read again at every task */
	struct {
		__u64 type;
		char name[48];
	} types[ASYNC_TYPES];
};

/*
 * The layout of process pid (a CPython 3.minor whose facts are proc) with
 * the section ao: 0, or -ENOTSUP (before 3.14), -errno, with why in err.
 * Free it with asynctasks__close().
 */
int asynctasks__layout(pid_t pid, const struct py_proc *proc, int minor,
		       const struct py_async_offsets *ao,
		       struct async_layout *out, char *err, size_t errlen);
/* asynctasks__locate(), then asynctasks__layout(): the same returns. */
int asynctasks__open(pid_t pid, const struct py_proc *proc, int minor,
		     struct async_layout *out, char *err, size_t errlen);

/*
 * Every task of the main interpreter of process pid, thread by thread in
 * the interpreter's order, each list in its order: 0, or -ENOMEM.  What
 * could not be read is cut, and out says so.  Free out with
 * asynctasks__free, whatever it returned.
 */
int asynctasks__read(pid_t pid, const struct py_proc *proc,
		     struct async_layout *l, struct async_tasks *out);
/*
 * As asynctasks__read, but each task met is kept with probability keep
 * (0 < keep <= 1; *seed, rand_r's state), its thread's running task
 * always: a task read costs its name's and coroutines' reads, its
 * meeting only the task's.  out->met says how many there were.  same,
 * when set, is asked of each task kept with what its object holds (a
 * task that awaits the same future, awaited by the same, with the same
 * name, is where it was): true, and the task is marked known and not
 * read further.
 */
typedef bool (*async_same_fn)(void *ctx, __u64 addr, __u64 waiter, __u64 by,
			      __u64 name_obj);
int asynctasks__sample(pid_t pid, const struct py_proc *proc,
		       struct async_layout *l, double keep,
		       unsigned int *seed, async_same_fn same, void *ctx,
		       struct async_tasks *out);

/* A pending task's cause (KIND_AWAIT_*), from its state, what it awaits,
 * and its innermost coroutine's qualname and file (either may be NULL). */
int asynctasks__cause(const struct async_task *t, const char *qualname,
		      const char *file);

/*
 * The task at addr (a running one: its thread's stack has its frames),
 * then the task that awaits it, and the one that awaits that, to a task
 * nobody awaits: at most max into out, out[0] the task.  Each is read as
 * asynctasks__read reads it; the first of its awaiters is followed.  How
 * many, 0 when addr is no task, or -ENOMEM.  *cut: the chain ends early
 * (too long, a loop, an awaiter unreadable).  name_obj and by, when not
 * both 0, are the task's name and task_awaited_by as read before (the
 * task may have ended since): out[0] is made of them, without its
 * coroutines.
 */
int asynctasks__awaiters(pid_t pid, const struct py_proc *proc,
			 struct async_layout *l, __u64 addr, __u64 name_obj,
			 __u64 by, struct async_task *out, int max, bool *cut);
void asynctasks__free(struct async_tasks *t);
void asynctasks__close(struct async_layout *l);

/* The name object and task_awaited_by of the task at addr as it holds
 * them now, in one read: 0, or -EFAULT (no task there). */
int asynctasks__heads(pid_t pid, const struct py_proc *proc,
		      struct async_layout *l, __u64 addr, __u64 *name_obj,
		      __u64 *by);

/*
 * Before 3.14: the task whose coroutine's own frame is at frame (what BPF
 * marks, PY_PROC_F_ASYNC_OUTER): among the tasks the last read met, else
 * among those asyncio says run now; 0 when neither has it.  Who awaits
 * it is as the last read found.
 */
__u64 asynctasks__running(pid_t pid, const struct py_proc *proc,
			  struct async_layout *l, __u64 frame);
/* Before 3.14: the pending tasks asyncio's _current_tasks says run now,
 * with their coroutines, up to max: how many, or -errno. */
int asynctasks__current(pid_t pid, const struct py_proc *proc,
			struct async_layout *l, struct async_coro *out,
			int max);

/* Is the frame at frame the coroutine's of a task the last read met?
 * (No read of the target: to pick a stack's task frame.) */
bool asynctasks__known_frame(const struct async_layout *l, __u64 frame);

/* The index in t->tasks of the task at addr, or -1 (none was read). */
int asynctasks__find(const struct async_tasks *t, __u64 addr);

/* Is task i of t awaited by a task t holds? */
bool asynctasks__has_awaiter(const struct async_tasks *t, int i);

/* Who awaits whom in t, the other way round: the tasks that task i
 * awaits (those whose awaiters name it) are tasks[first[i] ..
 * first[i + 1]), as indexes in t->tasks. */
struct async_awaited {
	int *first, *tasks;
};

/* 0, or -ENOMEM; free it with asynctasks__awaited_free() either way. */
int asynctasks__awaited(const struct async_tasks *t, struct async_awaited *by);
void asynctasks__awaited_free(struct async_awaited *by);

/* "running", "waiting", ... */
const char *asynctasks__state_name(int state);

#endif /* __PYSIGHT_ASYNCTASKS_H */
