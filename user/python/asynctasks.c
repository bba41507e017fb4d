// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * asyncio tasks read out of another process.  3.14+ the way CPython's own
 * `python -m asyncio pstree` reads them (Modules/_remote_debugging): the
 * layout from the .AsyncioDebug section, the tasks from the circular
 * lists each thread state and the interpreter hold, the edges from
 * task_awaited_by alone.  3.11 to 3.13 have none of these: the tasks are
 * in the WeakSet asyncio registers them in, the edges are rebuilt from
 * what each task awaits (a task, or gather()'s children), and a task's
 * thread is the one running its loop.  Unlike pstree, nothing is stopped
 * and no error ends the read: a torn list is cut and said to be, a task
 * that does not check is dropped, and every walk is bounded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asynctasks.h"
#include "elffile.h"
#include "errmsg.h"
#include "offsets.h"
#include "process.h"
#include "procmaps.h"
#include "pyobj.h"
#include "remote.h"
#include "stackread.h"
#include "symbols.h"

#define MAX_FILES	256	/* mapped files looked into for the section */
#define MAX_SET_SLOTS	4096	/* an awaiters set's table, at most */
#define ASYNC_MAX_MET	(1 << 20)	/* tasks met in one read, at most */
/* a set's table entry: the key, then its hash (setentry) */
#define SET_ENTRY_SIZE	16
/* a coroutine object's head read at once, through its embedded frame
 * (gi_iframe plus the frame's fixed part), with room to spare */
#define CORO_HEAD_MAX	1280
#define MAX_DEPTH_BYTES	65536	/* a coroutine's stack, from its frame */
#define MAX_TASK_SLOTS	(1u << 22)	/* a set of tasks' table, at most */
#define SET_CHUNK	512		/* set entries read at once */
#define MAX_CHILDREN	1024		/* of one gather() */
#define MAX_CURRENT	64		/* loops running a task at once */
#define MAX_EDGES	(1 << 18)	/* "awaited by" rebuilt in one read */
/* 3.11 and 3.12 keep a thread's running loop in its dict, under this */
#define RUNNING_LOOP_KEY "__asyncio_running_event_loop__"

/*
 * Could the file mapped here hold the section?  CPython's tools look in
 * files whose name contains "python" (_asyncio.cpython-314-...so,
 * python3.15, libpython3.15.so); the executable too, for a program that
 * embeds an interpreter with _asyncio built in.  Not every file: opening
 * a mapped device has effects of its own.
 */
static bool may_hold(const struct mapping *m, const char *exe)
{
	const char *base = strrchr(m->path, '/');

	if (m->offset || m->path[0] != '/' || !strncmp(m->path, "/dev/", 5))
		return false;
	base = base ? base + 1 : m->path;
	return strstr(base, "python") || !strcmp(m->path, exe);
}

/* The section of the file mapped at m: 0, -ENOENT, or -errno. */
static int section_of(pid_t pid, const struct mapping *m,
		      struct py_async_offsets *out, char *err, size_t errlen)
{
	unsigned char buf[OFFSETS_ASYNC_SECTION_LEN];
	struct elf_file *ef;
	struct stat st;
	size_t size = 0;
	char why[128];
	int fd, ret;

	fd = procmaps__open(pid, m, false, &st);
	if (fd < 0)
		return fd;
	ret = elffile__open_fd(fd, &ef);
	if (!ret) {
		memset(buf, 0, sizeof(buf));
		ret = elffile__section(ef, OFFSETS_ASYNC_SECTION, buf,
				       sizeof(buf), &size);
		elffile__close(ef);
	}
	close(fd);
	if (ret)
		return -ENOENT;
	ret = offsets__async_from_section(buf, size < sizeof(buf) ?
						       size : sizeof(buf),
					  out, why, sizeof(why));
	if (ret)
		errmsg__set(err, errlen, "%s (in %s)", why, m->path);
	return ret;
}

/* The search through a process's mappings for the section. */
struct locate {
	pid_t pid;
	char exe[PATH_MAX];
	struct {
		__u64 ino;
		unsigned int major, minor;
	} seen[MAX_FILES];		/* the files looked into */
	int n;
	int ret;			/* -ENOENT until one answers */
	struct py_async_offsets *out;
	char *err;
	size_t errlen;
};

static bool seen_file(const struct locate *l, const struct mapping *m)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->seen[i].ino == m->ino &&
		    l->seen[i].major == m->dev_major &&
		    l->seen[i].minor == m->dev_minor)
			return true;
	return false;
}

/* One mapping: 0 to go on, 1 when its file answered (l->ret). */
static int try_mapping(void *ctx, const struct mapping *m)
{
	struct locate *l = ctx;
	int r;

	if (!may_hold(m, l->exe) || seen_file(l, m))
		return 0;
	if (l->n == MAX_FILES)
		return 1;
	l->seen[l->n].ino = m->ino;
	l->seen[l->n].major = m->dev_major;
	l->seen[l->n++].minor = m->dev_minor;
	r = section_of(l->pid, m, l->out, l->err, l->errlen);
	/* a file we may not open, or one gone, is not the answer */
	if (r == -ENOENT || r == -EACCES || r == -EPERM || r == -ESTALE)
		return 0;
	l->ret = r;
	return 1;
}

int asynctasks__locate(pid_t pid, struct py_async_offsets *out, char *err,
		       size_t errlen)
{
	struct locate *l;
	char path[64];
	ssize_t len;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->pid = pid;
	l->ret = -ENOENT;
	l->out = out;
	l->err = err;
	l->errlen = errlen;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	len = readlink(path, l->exe, sizeof(l->exe) - 1);
	l->exe[len > 0 ? len : 0] = 0;
	ret = procmaps__each(pid, try_mapping, l);
	if (ret < 0) {
		errmsg__set(err, errlen, "cannot read /proc/%d/maps: %s", pid,
			    strerror(-ret));
	} else {
		ret = l->ret;
		if (ret == -ENOENT)
			errmsg__set(err, errlen,
				    "process %d has not imported asyncio: no %s section is mapped",
				    pid, OFFSETS_ASYNC_SECTION);
	}
	free(l);
	return ret;
}

/* Does path s end in the path tail, at a '/' or whole? */
static bool ends_with(const char *s, const char *tail)
{
	size_t n = s ? strlen(s) : 0, m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail) &&
	       (n == m || s[n - m - 1] == '/');
}

/*
 * What a pending task waits for, by where it waits: asyncio's own
 * coroutines say it (asyncio.sleep, the locks and queues, to_thread, the
 * streams and the loop's sock_* methods); a task awaited directly is a
 * task; the rest is other.  A task with nothing to wait for waits for
 * the loop.
 */
int asynctasks__cause(const struct async_task *t, const char *qualname,
		      const char *file)
{
	static const char *const io_files[] = {
		"asyncio/streams.py", "asyncio/selector_events.py",
		"asyncio/proactor_events.py", "asyncio/sslproto.py",
		"asyncio/base_events.py", "asyncio/unix_events.py",
	};
	size_t i;

	if (t->state == ASYNC_READY)
		return KIND_AWAIT_BUSY;
	if (strstr(t->awaits, "Task"))
		return KIND_AWAIT_TASK;
	if (ends_with(file, "asyncio/tasks.py") && qualname &&
	    !strcmp(qualname, "sleep"))
		return KIND_AWAIT_SLEEP;
	if (ends_with(file, "asyncio/locks.py") ||
	    ends_with(file, "asyncio/queues.py"))
		return KIND_AWAIT_LOCK;
	if (ends_with(file, "asyncio/threads.py"))
		return KIND_AWAIT_EXECUTOR;
	for (i = 0; i < sizeof(io_files) / sizeof(io_files[0]); i++)
		if (ends_with(file, io_files[i]))
			return KIND_AWAIT_IO;
	return KIND_AWAIT_OTHER;
}

const char *asynctasks__state_name(int state)
{
	switch (state) {
	case ASYNC_RUNNING:
		return "running";
	case ASYNC_WAITING:
		return "waiting";
	case ASYNC_READY:
		return "ready";
	case ASYNC_DONE:
		return "done";
	default:
		return "unknown";
	}
}

struct task_head;

/* One read: what a walk needs as it goes. */
struct walk {
	pid_t pid;
	const struct py_proc *proc;
	const struct py_async_offsets *ao;
	const struct py_gen_offsets *go;
	struct async_layout *l;
	struct remote_mem mem;
	struct stackread *scratch;	/* a task's chain, as read */
	struct async_tasks *out;
	size_t cap;
	int err;			/* -ENOMEM stops everything */
	double keep;			/* asynctasks__sample's */
	unsigned int *seed;
	async_same_fn same;
	void *ctx;
	/* before 3.14: the loops threads run, {loop: running task}, and
	 * the pending tasks met in asyncio's sets */
	struct {
		__u64 loop, key;
	} loops[ASYNC_LOOPS];
	int nloops;
	struct {
		__u64 loop, task;
	} cur[MAX_CURRENT];
	int ncur;
	struct task_head *met;
	int nmet;
	size_t metcap;
	int visited;		/* entries of asyncio's sets met */
};

static void cut(struct walk *w, const char *fmt, ...)
{
	va_list ap;

	if (w->out->partial)
		return;
	w->out->partial = true;
	va_start(ap, fmt);
	vsnprintf(w->out->why, sizeof(w->out->why), fmt, ap);
	va_end(ap);
}

static void read_name(struct walk *w, __u64 obj, char *buf, size_t len)
{
	char *s = symbols__read_str(w->pid, w->proc, obj);
	uint64_t mag;
	bool neg;

	if (s) {
		snprintf(buf, len, "%s", s);
		free(s);
		return;
	}
	/* 3.12+ keeps a counter until get_name() asks; CPython's tools
	 * name it as Task.get_name() would */
	if (!pyobj__int(w->pid, w->proc, obj, &mag, &neg))
		snprintf(buf, len, "Task-%s%llu", neg ? "-" : "",
			 (unsigned long long)mag);
	else
		snprintf(buf, len, "[unknown]");
}

/*
 * The coroutine a suspended one awaits, or 0: the value under the top of
 * its frame's stack, tag bits off (_PyGen_yf).  frame holds the frame's
 * first frame_size bytes.
 */
static __u64 awaited_of(struct walk *w, __u64 faddr,
			      const unsigned char *frame)
{
	const struct py_gen_offsets *go = w->go;
	uint64_t sp, slot, yf;

	if (go->frame_stacktop) {
		/* before 3.14: an int count of slots over localsplus */
		int32_t top;

		memcpy(&top, frame + go->frame_stacktop, sizeof(top));
		if (top < go->yf_depth || top > MAX_DEPTH_BYTES / 8)
			return 0;
		sp = faddr + go->frame_localsplus + 8ull * top;
	} else {
		sp = remote__u64(frame, go->frame_size, go->frame_stackpointer);
	}
	slot = sp - 8ull * go->yf_depth;
	/* the stack lies in the coroutine, past the frame's fixed part */
	if (sp < faddr + go->frame_size || slot < faddr ||
	    sp - faddr > MAX_DEPTH_BYTES || slot % 8)
		return 0;
	if (remote__mem_read64(&w->mem, slot, &yf))
		return 0;
	return yf & w->proc->off.code_tag_mask;
}

/* The name of the type at type, remembered by its address: a type lives
 * as long as its objects, and a task's are of a few types. */
static bool type_name(struct walk *w, __u64 type, char *buf, size_t len)
{
	unsigned int i = (type >> 4) % ASYNC_TYPES;
	char *name = w->l->types[i].name;

	if (!type)
		return false;
	if (w->l->types[i].type != type) {
		w->l->types[i].type = 0;
		if (!pyobj__type_name_of(w->pid, type, name,
					 sizeof(w->l->types[i].name)))
			return false;
		w->l->types[i].type = type;
	}
	snprintf(buf, len, "%s", name);
	return true;
}

/* The type name of the object at obj. */
static bool obj_type_name(struct walk *w, __u64 obj, char *buf, size_t len)
{
	uint64_t type;

	return !remote__mem_read64(&w->mem, obj + w->proc->off.object_type,
				   &type) &&
	       type_name(w, type, buf, len);
}

static bool is_coroutine(struct walk *w, __u64 type)
{
	char name[16];

	return type_name(w, type, name, sizeof(name)) &&
	       !strcmp(name, "coroutine");
}

/*
 * The task's coroutines, outermost first as read, kept leaf first: each
 * coroutine's own frame, then what it awaits while that is a coroutine
 * of the same type (CPython's rule: a FutureIter or another awaitable
 * ends the chain).
 */
static void read_chain(struct walk *w, __u64 coro, struct async_task *t)
{
	const struct py_gen_offsets *go = w->go;
	unsigned char head[CORO_HEAD_MAX];
	__u64 type = 0, faddr;
	size_t need = go->gen_iframe + go->frame_size;
	struct stackread *sr = w->scratch;
	int depth, ret, i;
	__s8 state;

	sr->n = 0;
	t->status = ST_COMPLETE;
	for (depth = 0; coro; depth++) {
		if (depth == ASYNC_MAX_CHAIN) {
			t->status = ST_TRUNCATED;
			break;
		}
		if (need > sizeof(head) ||
		    remote__mem_read(&w->mem, coro, head, need)) {
			t->status = ST_ERR_READ_FRAME;
			break;
		}
		/* a coroutine, not any awaitable create_task took (an
		 * abc.Coroutine of Python's is no PyGenObject) */
		if (!depth) {
			type = remote__u64(head, need, w->proc->off.object_type);
			if (!is_coroutine(w, type))
				break;
		} else if (remote__u64(head, need, w->proc->off.object_type) !=
			   type) {
			break;
		}
		state = (__s8)head[go->gen_frame_state];
		if (state == go->state_cleared) {
			/* a pending task's own coroutine is never done with:
			 * this one was freed under the read */
			if (!depth)
				t->status = ST_ERR_READ_FRAME;
			break;
		}
		faddr = coro + go->gen_iframe;
		if (head[go->gen_iframe + w->proc->off.frame_owner] !=
		    go->owner_generator) {
			t->status = ST_ERR_READ_FRAME;
			break;
		}
		ret = stackread__frame(&w->mem, w->proc, faddr, sr);
		if (ret) {
			/* a coroutine's frame has code: this one is gone */
			t->status = ret < 0 ? -ret : ST_ERR_BAD_CODE;
			break;
		}
		if (state < go->state_yield_from ||
		    state > go->state_yield_from_last)
			break;
		coro = awaited_of(w, faddr, head + go->gen_iframe);
	}
	t->nframes = sr->n < ASYNC_MAX_CHAIN ? sr->n : ASYNC_MAX_CHAIN;
	for (i = 0; i < t->nframes; i++)
		t->frames[i] = sr->frames[t->nframes - 1 - i];
}

/* Is the object at obj a task?  fut_is_task is 1 only in a Task (a
 * Future has the same head, with 0 there). */
static bool is_task(struct walk *w, __u64 obj)
{
	unsigned char b = 0;

	return obj && !remote__mem_read(&w->mem, obj + w->ao->task_is_task,
					&b, 1) && b == 1;
}

static void add_awaiter(struct walk *w, struct async_task *t, __u64 obj)
{
	if (!is_task(w, obj))
		return;
	if (t->nawaiters == ASYNC_MAX_AWAITERS) {
		t->awaiters_cut = true;
		return;
	}
	t->awaiters[t->nawaiters++] = obj;
}

/*
 * The header of the set at set, checked: its table has mask + 1 slots, a
 * power of two below max, and used of them hold keys.  False when it
 * does not read as one.
 */
static bool set_head(struct walk *w, __u64 set, uint64_t max, uint64_t *used,
		     uint64_t *mask, uint64_t *table)
{
	const struct py_gen_offsets *go = w->go;

	return !remote__mem_read64(&w->mem, set + go->set_used, used) &&
	       !remote__mem_read64(&w->mem, set + go->set_mask, mask) &&
	       !remote__mem_read64(&w->mem, set + go->set_table, table) &&
	       *mask < max && !(*mask & (*mask + 1)) && *used <= *mask + 1;
}

/* The awaiters in a set: its table's live keys, at most used of them. */
static void read_awaiter_set(struct walk *w, struct async_task *t, __u64 set)
{
	uint64_t used, mask, table, entry[2];
	char type[16];
	uint64_t i, found = 0;

	if (!obj_type_name(w, set, type, sizeof(type)) ||
	    strcmp(type, "set") ||
	    !set_head(w, set, MAX_SET_SLOTS, &used, &mask, &table)) {
		t->awaiters_cut = true;
		return;
	}
	for (i = 0; i <= mask && found < used; i++) {
		if (remote__mem_read(&w->mem, table + SET_ENTRY_SIZE * i, entry,
				     sizeof(entry))) {
			t->awaiters_cut = true;
			return;
		}
		if (!entry[0])
			continue;
		found++;
		/* the dummy of a removed key is no task, and is skipped */
		add_awaiter(w, t, entry[0]);
	}
}

/* A task object's fields, as read in one go. */
struct task_head {
	__u64 addr, waiter, by, name, coro, loop;
	__u64 callback0;	/* before 3.14: its first done-callback */
	bool by_is_set;		/* 3.14+: by is a set of awaiters */
	bool done;
	bool frames_known;	/* the sample holds its frames: read none */
};

/* The first of the tasks that await child, by the last read's edges:
 * its index in l->edges, or -1 (3.11 to 3.13). */
static int first_edge(const struct async_layout *l, __u64 child)
{
	int lo = 0, hi = l->nedges, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (l->edges[mid].child < child)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->nedges && l->edges[lo].child == child ? lo : -1;
}

/* The first task the last read found awaiting the task at child that
 * runs coro, or 0. */
static __u64 parent_of(const struct async_layout *l, __u64 child,
		       __u64 coro)
{
	int e;

	for (e = first_edge(l, child);
	     e >= 0 && e < l->nedges && l->edges[e].child == child; e++)
		if (l->edges[e].coro == coro)
			return l->edges[e].parent;
	return 0;
}

/* The head of the 3.14+ task whose object is tb. */
static void head_314(const struct py_async_offsets *ao, __u64 addr,
		     const unsigned char *tb, struct task_head *h)
{
	size_t n = ao->task_size;

	memset(h, 0, sizeof(*h));
	h->addr = addr;
	h->waiter = remote__u64(tb, n, ao->task_coro - 8);
	h->by = remote__u64(tb, n, ao->task_awaited_by);
	h->by_is_set = tb[ao->task_awaited_by_is_set];
	h->name = remote__u64(tb, n, ao->task_name);
	h->coro = remote__u64(tb, n, ao->task_coro);
	h->done = remote__u32(tb, n, ao->task_is_task - 4);
	h->loop = 0;
}

enum { TASK_NONE, TASK_C, TASK_PY };

/* Before 3.14: is the type at type a task's?  TASK_C: _asyncio.Task, or
 * a class derived from it that keeps its layout; TASK_PY: asyncio's
 * pure-Python Task (_PyTask) or one derived from it.  Judged once per
 * type. */
static int task_type(struct walk *w, __u64 type)
{
	struct async_layout *l = w->l;
	uint64_t size = 0;
	unsigned int i = (type >> 4) % ASYNC_TASK_TYPES;

	if (type == l->ctask)
		return TASK_C;
	if (!type)
		return TASK_NONE;
	if (l->task_types[i].type != type) {
		int c = pyobj__type_is(w->pid, type, l->ctask, &size);
		int py = c == 1 || !l->pytask ? 0 :
			 pyobj__type_is(w->pid, type, l->pytask, &size);

		/* a type that did not read is judged again next time */
		if (c < 0 || py < 0)
			return TASK_NONE;
		l->task_types[i].type = type;
		l->task_types[i].kind =
			c == 1 ? (size >= l->lo->task_size &&
				  size < PY_TASK_SIZE_MAX ? TASK_C : TASK_NONE) :
			py == 1 ? TASK_PY : TASK_NONE;
	}
	return l->task_types[i].kind;
}

/* An attribute of a pure-Python task; 0 for None or none. */
static __u64 py_field(struct walk *w, __u64 obj, const char *name,
		      unsigned int *left)
{
	uint64_t v = 0;
	char type[16];

	if (pyobj__attr(w->pid, w->proc, obj, name, &v, left) ||
	    (obj_type_name(w, v, type, sizeof(type)) &&
	     !strcmp(type, "NoneType")))
		return 0;
	return v;
}

/* The head of the pure-Python task at addr: its attributes. */
static bool head_py(struct walk *w, __u64 addr, struct task_head *h)
{
	unsigned int left = 256;	/* entries of its dict, for all */
	__u64 state;

	memset(h, 0, sizeof(*h));
	h->addr = addr;
	/* _state is the class's 'PENDING' until the task is done: a done
	 * one (asyncio's set keeps them until collected) is read no more */
	state = py_field(w, addr, "_state", &left);
	h->done = state && state != w->l->pending;
	if (h->done)
		return true;
	h->coro = py_field(w, addr, "_coro", &left);
	if (!h->coro)
		return false;
	h->waiter = py_field(w, addr, "_fut_waiter", &left);
	h->name = py_field(w, addr, "_name", &left);
	h->loop = py_field(w, addr, "_loop", &left);
	h->by = parent_of(w->l, addr, h->coro);
	return true;
}

/* Before 3.14: the head of the C task at addr, whose object is tb (the
 * task's task_size bytes). */
static void head_legacy(struct walk *w, __u64 addr, const unsigned char *tb,
			struct task_head *h)
{
	const struct offsets_async_legacy *lo = w->l->lo;
	size_t n = lo->task_size;

	memset(h, 0, sizeof(*h));
	h->addr = addr;
	h->waiter = remote__u64(tb, n, lo->fut_waiter);
	h->name = remote__u64(tb, n, lo->task_name);
	h->coro = remote__u64(tb, n, lo->task_coro);
	h->loop = remote__u64(tb, n, lo->fut_loop);
	h->done = remote__u32(tb, n, lo->fut_state);
	h->callback0 = remote__u64(tb, n, lo->fut_callback0);
	h->by = parent_of(w->l, addr, h->coro);
}

/* Before 3.14: the task at addr, C or Python, read and checked. */
static bool legacy_head(struct walk *w, __u64 addr, struct task_head *h)
{
	unsigned char tb[PY_TASK_SIZE_MAX];
	size_t n = w->l->lo->task_size;
	uint64_t type;
	bool whole;

	/* a Python task may be smaller than a C one, at a mapping's end */
	whole = !remote__mem_read(&w->mem, addr, tb, n);
	if (whole)
		type = remote__u64(tb, n, w->proc->off.object_type);
	else if (remote__mem_read64(&w->mem, addr + w->proc->off.object_type,
				    &type))
		return false;
	switch (task_type(w, type)) {
	case TASK_C:
		if (!whole)
			return false;
		head_legacy(w, addr, tb, h);
		return true;
	case TASK_PY:
		return head_py(w, addr, h);
	default:
		return false;
	}
}

/* The task object at addr, read and checked: false for none. */
static bool read_head(struct walk *w, __u64 addr, struct task_head *h)
{
	unsigned char tb[PY_TASK_SIZE_MAX];
	size_t size = w->l->lo ? w->l->lo->task_size : w->ao->task_size;

	if (!addr || size > sizeof(tb))
		return false;
	if (w->l->lo)
		return legacy_head(w, addr, h);
	if (remote__mem_read(&w->mem, addr, tb, size))
		return false;
	if (tb[w->ao->task_is_task] != 1)
		return false;
	head_314(w->ao, addr, tb, h);
	return true;
}

/* The tasks awaiting t: task_awaited_by (3.14+), else the edges. */
static void read_awaiters(struct walk *w, const struct task_head *h,
			  struct async_task *t)
{
	int e;

	if (w->l->lo) {
		for (e = first_edge(w->l, h->addr);
		     e >= 0 && e < w->l->nedges && w->l->edges[e].child == h->addr;
		     e++) {
			if (w->l->edges[e].coro != h->coro)
				continue;
			if (t->nawaiters == ASYNC_MAX_AWAITERS) {
				t->awaiters_cut = true;
				return;
			}
			t->awaiters[t->nawaiters++] = w->l->edges[e].parent;
		}
	} else if (h->by && h->by_is_set) {
		read_awaiter_set(w, t, h->by);
	} else if (h->by) {
		add_awaiter(w, t, h->by);
	}
}

static void read_task_as(struct walk *w, const struct task_head *h,
			 __u64 thread_key, __u64 running,
			 struct async_task *t)
{
	memset(t, 0, sizeof(*t));
	t->addr = h->addr;
	t->thread_key = thread_key;
	t->waiter = h->waiter;
	t->by = h->by;
	t->name_obj = h->name;
	if (running && h->addr == running)
		t->state = ASYNC_RUNNING;
	else if (h->done)
		t->state = ASYNC_DONE;
	else if (h->waiter)
		t->state = ASYNC_WAITING;
	else
		t->state = ASYNC_READY;
	if (w->same && t->state != ASYNC_RUNNING &&
	    w->same(w->ctx, h->addr, h->waiter, h->by, h->name)) {
		t->known = true;
		return;
	}
	read_name(w, h->name, t->name, sizeof(t->name));
	if (h->waiter && t->state == ASYNC_WAITING &&
	    !obj_type_name(w, h->waiter, t->awaits, sizeof(t->awaits)))
		snprintf(t->awaits, sizeof(t->awaits), "[unknown]");
	if (!h->frames_known)
		read_chain(w, h->coro, t);
	read_awaiters(w, h, t);
}

/*
 * The task as its head h was read, its name, coroutines and awaiters
 * read after: the task runs on meanwhile.  Once its head reads the same
 * again, they go together; a task that moved is read once more (a task
 * read as it started, Task-91, was shown awaiting the lock its handler
 * took after it named the task "locked").
 */
static void read_task(struct walk *w, const struct task_head *h,
		      __u64 thread_key, __u64 running, struct async_task *t)
{
	struct task_head again;

	read_task_as(w, h, thread_key, running, t);
	if (t->known || !h->coro || h->frames_known ||
	    !read_head(w, h->addr, &again) ||
	    (again.name == h->name && again.waiter == h->waiter &&
	     again.coro == h->coro))
		return;
	if (w->l->lo)
		again.by = h->by;	/* the edges this read made */
	read_task_as(w, &again, thread_key, running, t);
}

/* Room in the array *v, of *cap elements of size bytes, for one past n:
 * doubled when full.  0, or -ENOMEM (*v as it was). */
static int grow(void *v, size_t n, size_t *cap, size_t size)
{
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*(void **)v, (*cap ? *cap * 2 : 64) * size);
	if (!nv)
		return -ENOMEM;
	*(void **)v = nv;
	*cap = *cap ? *cap * 2 : 64;
	return 0;
}

static struct async_task *new_task(struct walk *w)
{
	struct async_tasks *o = w->out;

	w->err = grow(&o->tasks, o->n, &w->cap, sizeof(*o->tasks));
	return w->err ? NULL : &o->tasks[o->n++];
}

/*
 * The circular list whose sentinel is at head: each node's task, until
 * the walk is back at head.  A node whose back link does not name the
 * node before it was unlinked or reused under the read: the list is cut
 * there, as at a NULL link, a loop or a task that does not check.
 */
static void walk_list(struct walk *w, __u64 head, __u64 thread_key,
		      __u64 running)
{
	const struct py_async_offsets *ao = w->ao;
	unsigned char tb[PY_TASK_SIZE_MAX];
	struct pysight_loop l;
	uint64_t prev = head, node, back;
	struct task_head h;
	struct async_task *t;

	if (remote__mem_read64(&w->mem, head + PY_LLIST_NEXT, &node)) {
		cut(w, "a task list is unreadable");
		return;
	}
	pysight_loop_start(&l, node);
	while (node != head && !w->err) {
		if (w->out->n >= ASYNC_MAX_TASKS) {
			cut(w, "more than %d tasks", ASYNC_MAX_TASKS);
			return;
		}
		if (!node || node < ao->task_node) {
			cut(w, "a task list ends without its head (changed while read)");
			return;
		}
		/* the task's object holds the node: one read for both */
		if (remote__mem_read(&w->mem, node - ao->task_node, tb,
				     ao->task_size)) {
			cut(w, "a task list holds something not a task");
			return;
		}
		back = remote__u64(tb, ao->task_size,
				   ao->task_node + PY_LLIST_PREV);
		if (back != prev) {
			cut(w, "a task list changed while read");
			return;
		}
		if (tb[ao->task_is_task] != 1) {
			cut(w, "a task list holds something not a task");
			return;
		}
		if (++w->out->met > ASYNC_MAX_MET) {
			cut(w, "more than %d tasks", ASYNC_MAX_MET);
			return;
		}
		if (w->keep >= 1 || node - ao->task_node == running ||
		    rand_r(w->seed) < w->keep * ((double)RAND_MAX + 1)) {
			t = new_task(w);
			if (!t)
				return;
			head_314(ao, node - ao->task_node, tb, &h);
			read_task(w, &h, thread_key, running, t);
		}
		prev = node;
		node = remote__u64(tb, ao->task_size,
				   ao->task_node + PY_LLIST_NEXT);
		if (pysight_loop_seen(&l, node)) {
			cut(w, "a task list loops");
			return;
		}
	}
}

static int thread_tasks(void *ctx, __u64 key, __u64 tstate)
{
	struct walk *w = ctx;
	uint64_t running = 0;

	remote__mem_read64(&w->mem, tstate + w->ao->tstate_running_task,
			   &running);
	walk_list(w, tstate + w->ao->tstate_tasks_head, key, running);
	return w->err;
}

/*
 * Before 3.14.  A thread's running loop: 3.13 keeps it in the thread
 * state, 3.12 in the thread's dict, 3.11 there in a holder.
 */
static int legacy_thread(void *ctx, __u64 key, __u64 tstate)
{
	struct walk *w = ctx;
	const struct offsets_async_legacy *lo = w->l->lo;
	uint64_t loop = 0, dict;

	if (w->nloops == ASYNC_LOOPS)
		return 0;
	if (lo->tstate_running_loop != PY_OFF_NONE) {
		if (remote__mem_read64(&w->mem, tstate + lo->tstate_running_loop,
				       &loop))
			loop = 0;
	} else if (!remote__mem_read64(&w->mem, tstate + lo->tstate_dict,
				       &dict) && dict &&
		   !pyobj__dict_get(w->pid, w->proc, dict, RUNNING_LOOP_KEY,
				    &loop) &&
		   lo->holder_loop != PY_OFF_NONE &&
		   remote__mem_read64(&w->mem, loop + lo->holder_loop, &loop)) {
		loop = 0;
	}
	if (loop) {
		w->loops[w->nloops].loop = loop;
		w->loops[w->nloops++].key = key;
	}
	return 0;
}

/* _current_tasks's entries: a loop, and the task it runs now. */
static int legacy_current(uint64_t key, uint64_t value, void *ctx)
{
	struct walk *w = ctx;

	if (w->ncur == MAX_CURRENT)
		return 1;
	w->cur[w->ncur].loop = key;
	w->cur[w->ncur++].task = value;
	return 0;
}

static void add_met(struct walk *w, const struct task_head *h)
{
	w->err = grow(&w->met, w->nmet, &w->metcap, sizeof(*w->met));
	if (!w->err)
		w->met[w->nmet++] = *h;
}

/*
 * The pending tasks of one of asyncio's sets: the WeakSet's data (weak,
 * each key a weak reference whose referent is the task, None once it
 * died) or _eager_tasks (the tasks themselves).  Finished tasks stay in
 * the WeakSet until collected: only pending ones are met.
 */
static void legacy_set(struct walk *w, __u64 set, bool weak)
{
	const struct offsets_async_legacy *lo = w->l->lo;
	uint64_t used, mask, table, entry[SET_CHUNK * 2], i, k, n, obj;
	struct task_head h;

	if (!set)
		return;
	if (!set_head(w, set, MAX_TASK_SLOTS, &used, &mask, &table)) {
		cut(w, "asyncio's set of tasks is unreadable");
		return;
	}
	for (i = 0; i <= mask && !w->err; i += n) {
		n = mask + 1 - i < SET_CHUNK ? mask + 1 - i : SET_CHUNK;
		if (remote__mem_read(&w->mem, table + SET_ENTRY_SIZE * i, entry,
				     n * SET_ENTRY_SIZE)) {
			cut(w, "asyncio's set of tasks changed while read");
			return;
		}
		for (k = 0; k < n && !w->err; k++) {
			obj = entry[2 * k];
			/* a removed key's dummy has the hash -1, as no key */
			if (!obj || entry[2 * k + 1] == (uint64_t)-1)
				continue;
			/* done tasks stay until collected: each entry met
			 * counts, not only the pending */
			if (++w->visited > ASYNC_MAX_MET) {
				cut(w, "more than %d tasks", ASYNC_MAX_MET);
				return;
			}
			if (weak &&
			    remote__mem_read64(&w->mem, obj + lo->weakref_object,
					       &obj))
				continue;
			if (!legacy_head(w, obj, &h) || h.done)
				continue;
			if (w->nmet >= ASYNC_MAX_MET) {
				cut(w, "more than %d tasks", ASYNC_MAX_MET);
				return;
			}
			add_met(w, &h);
		}
	}
}

static int by_head(const void *pa, const void *pb)
{
	const struct task_head *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int by_edge(const void *pa, const void *pb)
{
	const struct async_edge *a = pa, *b = pb;

	if (a->child != b->child)
		return a->child < b->child ? -1 : 1;
	return a->parent < b->parent ? -1 : a->parent > b->parent;
}

/* The pending task at addr among those met, or NULL. */
static const struct task_head *met_find(const struct walk *w, __u64 addr)
{
	struct task_head key = { .addr = addr };

	return w->nmet ? bsearch(&key, w->met, w->nmet, sizeof(key),
				 by_head) : NULL;
}

struct edges {
	struct async_edge *e;
	size_t n, cap;
};

/* 0, or -ENOMEM; past MAX_EDGES the rest are left out, and said to be
 * (many tasks awaiting one gather() of many each await all of them) */
static int add_edge(struct edges *es, struct walk *w, __u64 child,
		    __u64 parent)
{
	const struct task_head *c = met_find(w, child);

	if (!c || !met_find(w, parent) || child == parent)
		return 0;
	if (es->n == MAX_EDGES) {
		cut(w, "more than %d awaits", MAX_EDGES);
		return 0;
	}
	if (grow(&es->e, es->n, &es->cap, sizeof(*es->e)))
		return -ENOMEM;
	es->e[es->n++] = (struct async_edge){ child, parent, c->coro };
	return 0;
}

/* The tasks of a gather() that parent awaits: its _children list. */
static int gather_edges(struct walk *w, struct edges *es, __u64 fut,
			__u64 parent)
{
	uint64_t list, size, items, child[64];
	unsigned int left = 64;
	uint64_t i, k, n;
	int ret = 0;

	if (pyobj__attr(w->pid, w->proc, fut, "_children", &list, &left) ||
	    remote__mem_read64(&w->mem, list + 16, &size) ||
	    remote__mem_read64(&w->mem, list + w->l->lo->list_items, &items) ||
	    size > MAX_CHILDREN)
		return 0;
	for (i = 0; i < size && !ret; i += n) {
		n = size - i < 64 ? size - i : 64;
		if (remote__mem_read(&w->mem, items + 8 * i, child, 8 * n))
			return 0;
		for (k = 0; k < n && !ret; k++)
			ret = add_edge(es, w, child[k], parent);
	}
	return ret;
}

/* A TaskGroup's child: its first done-callback is the group's bound
 * _on_task_done, and the group names its parent task. */
#define METHOD_SELF	24	/* PyMethodObject im_self */
static int group_edge(struct walk *w, struct edges *es,
		      const struct task_head *child)
{
	uint64_t group, parent;
	unsigned int left = 64;
	char type[16];

	if (!obj_type_name(w, child->callback0, type, sizeof(type)) ||
	    strcmp(type, "method") ||
	    remote__mem_read64(&w->mem, child->callback0 + METHOD_SELF,
			       &group) ||
	    !obj_type_name(w, group, type, sizeof(type)) ||
	    strcmp(type, "TaskGroup") ||
	    pyobj__attr(w->pid, w->proc, group, "_parent_task", &parent,
			&left))
		return 0;
	return add_edge(es, w, child->addr, parent);
}

static int by_coro(const void *pa, const void *pb)
{
	const struct async_coro *a = pa, *b = pb;

	return a->coro < b->coro ? -1 : a->coro > b->coro;
}

/*
 * Who awaits whom, rebuilt: a task awaits what its fut_waiter holds, a
 * task itself or a gather() of tasks; a TaskGroup's parent awaits its
 * children.  (shield(), wait() and as_completed() leave no trace to read
 * before 3.14: their tasks have no awaiter.)  Kept in l for the reads
 * that follow a task's awaiters up.
 */
static int legacy_edges(struct walk *w)
{
	struct edges es = { 0 };
	struct async_coro *coros;
	uint64_t type;
	size_t j, u;
	int i, ret = 0;

	for (i = 0; i < w->nmet && !ret; i++) {
		const struct task_head *m = &w->met[i];

		if (m->callback0)
			ret = group_edge(w, &es, m);
		if (ret || !m->waiter ||
		    remote__mem_read64(&w->mem,
				       m->waiter + w->proc->off.object_type,
				       &type))
			continue;
		if (type == w->l->gathering)
			ret = gather_edges(w, &es, m->waiter, m->addr);
		else if (task_type(w, type))
			ret = add_edge(&es, w, m->waiter, m->addr);
	}
	if (ret) {
		free(es.e);
		return ret;
	}
	if (es.n)
		qsort(es.e, es.n, sizeof(*es.e), by_edge);
	for (j = u = 0; j < es.n; j++)
		if (!u || by_edge(&es.e[j], &es.e[u - 1]))
			es.e[u++] = es.e[j];
	free(w->l->edges);
	w->l->edges = es.e;
	w->l->nedges = (int)u;
	/* and each task by its coroutine, for the samples to come */
	coros = malloc((w->nmet + 1) * sizeof(*coros));
	if (!coros)
		return -ENOMEM;
	for (i = 0; i < w->nmet; i++)
		coros[i] = (struct async_coro){ w->met[i].coro, w->met[i].addr };
	qsort(coros, w->nmet, sizeof(*coros), by_coro);
	free(w->l->coros);
	w->l->coros = coros;
	w->l->ncoros = w->nmet;
	return 0;
}

/* Before 3.14: asyncio's sets of tasks, each pending task met once, then
 * read as walk_list reads the lists of 3.14. */
static void legacy_read(struct walk *w)
{
	struct async_layout *l = w->l;
	struct async_task *t;
	__u64 running, key;
	int i, j, k;

	if (stackread__tstates(w->pid, w->proc, legacy_thread, w) < 0)
		cut(w, "the thread list is unreadable");
	if (pyobj__dict_items(w->pid, w->proc, l->current, MAX_CURRENT,
			      legacy_current, w) < 0)
		cut(w, "asyncio's running tasks are unreadable");
	legacy_set(w, l->sets[0], true);
	legacy_set(w, l->sets[1], false);
	if (w->err)
		return;
	if (w->nmet)
		qsort(w->met, w->nmet, sizeof(*w->met), by_head);
	for (i = k = 0; i < w->nmet; i++)
		if (!k || w->met[i].addr != w->met[k - 1].addr)
			w->met[k++] = w->met[i];
	w->nmet = k;
	w->out->met = k;
	w->err = legacy_edges(w);
	for (i = 0; i < w->nmet && !w->err; i++) {
		struct task_head *h = &w->met[i];

		running = key = 0;
		for (j = 0; j < w->ncur; j++)
			if (w->cur[j].loop == h->loop)
				running = w->cur[j].task;
		for (j = 0; j < w->nloops; j++)
			if (w->loops[j].loop == h->loop)
				key = w->loops[j].key;
		if (w->keep < 1 && h->addr != running &&
		    rand_r(w->seed) >= w->keep * ((double)RAND_MAX + 1))
			continue;
		if (w->out->n >= ASYNC_MAX_TASKS) {
			cut(w, "more than %d tasks", ASYNC_MAX_TASKS);
			return;
		}
		t = new_task(w);
		if (!t)
			return;
		h->by = parent_of(l, h->addr, h->coro);
		read_task(w, h, key, running, t);
	}
}

/* Order by address, then by when the task was met. */
static int by_addr(const void *pa, const void *pb)
{
	const struct async_seen *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->at - b->at;
}

/*
 * The index by address, each task once: a task moved from its thread's
 * list to the interpreter's under the read is met twice, and the first
 * meeting stands.
 */
static int index_tasks(struct async_tasks *o)
{
	struct async_seen *s;
	int *to, i, k;

	s = malloc((o->n + 1) * sizeof(*s));
	to = malloc((o->n + 1) * sizeof(*to));
	if (!s || !to) {
		free(s);
		free(to);
		return -ENOMEM;
	}
	for (i = 0; i < o->n; i++) {
		s[i] = (struct async_seen){ o->tasks[i].addr, i };
		to[i] = 0;
	}
	qsort(s, o->n, sizeof(*s), by_addr);
	for (i = 1; i < o->n; i++)
		if (s[i].addr == s[i - 1].addr)
			to[s[i].at] = -1;
	for (i = k = 0; i < o->n; i++)
		if (!to[i]) {
			to[i] = k;
			o->tasks[k++] = o->tasks[i];
		}
	for (i = k = 0; i < o->n; i++)
		if (to[s[i].at] >= 0)
			s[k++] = (struct async_seen){ s[i].addr, to[s[i].at] };
	o->n = k;
	o->index = s;
	free(to);
	return 0;
}

int asynctasks__find(const struct async_tasks *t, __u64 addr)
{
	int lo = 0, hi = t->index ? t->n : 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->index[mid].addr == addr)
			return t->index[mid].at;
		if (t->index[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

bool asynctasks__has_awaiter(const struct async_tasks *t, int i)
{
	int j;

	for (j = 0; j < t->tasks[i].nawaiters; j++)
		if (asynctasks__find(t, t->tasks[i].awaiters[j]) >= 0)
			return true;
	return false;
}

int asynctasks__awaited(const struct async_tasks *t, struct async_awaited *by)
{
	int i, j, p, *fill;

	by->first = calloc(t->n + 2, sizeof(int));
	by->tasks = malloc((t->n * ASYNC_MAX_AWAITERS + 1) * sizeof(int));
	fill = calloc(t->n + 1, sizeof(int));
	if (!by->first || !by->tasks || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (i = 0; i < t->n; i++)
		for (j = 0; j < t->tasks[i].nawaiters; j++) {
			p = asynctasks__find(t, t->tasks[i].awaiters[j]);
			if (p >= 0)
				by->first[p + 1]++;
		}
	for (i = 0; i < t->n; i++)
		by->first[i + 1] += by->first[i];
	for (i = 0; i < t->n; i++)
		for (j = 0; j < t->tasks[i].nawaiters; j++) {
			p = asynctasks__find(t, t->tasks[i].awaiters[j]);
			if (p >= 0)
				by->tasks[by->first[p] + fill[p]++] = i;
		}
	free(fill);
	return 0;
}

void asynctasks__awaited_free(struct async_awaited *by)
{
	free(by->first);
	free(by->tasks);
	by->first = by->tasks = NULL;
}

int asynctasks__layout(pid_t pid, const struct py_proc *proc, int minor,
		       const struct py_async_offsets *ao,
		       struct async_layout *out, char *err, size_t errlen)
{
	unsigned char *dbg;
	int ret;

	if (minor < ASYNC_SECTION_MINOR) {
		errmsg__set(err, errlen, "Python 3.%d has no %s", minor,
			    OFFSETS_ASYNC_SECTION);
		return -ENOTSUP;
	}
	memset(out, 0, sizeof(*out));
	out->ao = *ao;
	/* _PyRuntime begins with _Py_DebugOffsets, in memory as in the file */
	dbg = malloc(OFFSETS_DEBUG_MAX);
	if (!dbg)
		return -ENOMEM;
	ret = remote__read(pid, proc->runtime_addr, dbg, OFFSETS_DEBUG_MAX);
	if (ret)
		errmsg__set(err, errlen, "cannot read _PyRuntime: %s",
			    strerror(-ret));
	else
		ret = offsets__gen_from_debug(dbg, OFFSETS_DEBUG_MAX, minor,
					      &out->go, err, errlen);
	free(dbg);
	return ret;
}

/* A global of asyncio.tasks that must be there once asyncio is: 0, or
 * -ENOENT (not imported yet), -errno. */
static int tasks_global(pid_t pid, const struct py_proc *proc,
			const char *name, uint64_t *value, char *err,
			size_t errlen)
{
	int ret = pyobj__module_global(pid, proc, "asyncio.tasks", name, value);

	if (ret == -ENOENT)
		errmsg__set(err, errlen,
			    "process %d has not imported asyncio (no asyncio.tasks.%s)",
			    pid, name);
	else if (ret)
		errmsg__set(err, errlen,
			    "cannot read asyncio.tasks.%s of process %d: %s",
			    name, pid, strerror(-ret));
	return ret;
}

/*
 * Before 3.14: the facts of 3.minor, checked against the target's own
 * Task and Future types, and asyncio's objects found through the module
 * asyncio.tasks (the same objects _asyncio keeps in C).
 */
static int layout_legacy(pid_t pid, const struct py_proc *proc, int minor,
			 struct async_layout *out, char *err, size_t errlen)
{
	const struct offsets_async_legacy *lo = offsets__async_legacy(minor);
	uint64_t fut = 0, ws = 0, size = 0, v[4] = { 0 };
	unsigned int left = 64;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!lo) {
		errmsg__set(err, errlen,
			    "Python 3.%d: asyncio tasks are read from Python 3.%d on (a coroutine has no frame of its own before)",
			    minor, ASYNC_FIRST_MINOR);
		return -ENOTSUP;
	}
	ret = tasks_global(pid, proc, "_CTask", &v[0], err, errlen);
	if (ret)
		return ret;
	out->ctask = v[0];
	if (pyobj__type_is(pid, v[0], v[0], &size) != 1 ||
	    size != lo->task_size ||
	    pyobj__module_global(pid, proc, "_asyncio", "Future", &fut) ||
	    pyobj__type_is(pid, fut, fut, &size) != 1 ||
	    size != lo->future_size) {
		errmsg__set(err, errlen,
			    "process %d: its _asyncio Task and Future are not the %u and %u bytes of CPython 3.%d's",
			    pid, lo->task_size, lo->future_size, minor);
		return -EINVAL;
	}
	ret = tasks_global(pid, proc, "_current_tasks", &v[1], err, errlen);
	if (!ret)
		ret = tasks_global(pid, proc, minor == 11 ? "_all_tasks" :
				   "_scheduled_tasks", &ws, err, errlen);
	if (!ret && minor > 11)
		ret = tasks_global(pid, proc, "_eager_tasks", &v[2], err,
				   errlen);
	if (ret)
		return ret;
	out->current = v[1];
	out->sets[1] = v[2];
	/* a WeakSet keeps its weak references in the set .data */
	if (pyobj__attr(pid, proc, ws, "data", &v[3], &left)) {
		errmsg__set(err, errlen,
			    "process %d: asyncio's WeakSet of tasks has no readable data",
			    pid);
		return -EINVAL;
	}
	/* optional: without it, no task awaits a gather()'s children */
	out->sets[0] = v[3];
	if (!pyobj__module_global(pid, proc, "asyncio.tasks",
				  "_GatheringFuture", &v[0]))
		out->gathering = v[0];
	/* and without these, pure-Python tasks are not read */
	if (!pyobj__module_global(pid, proc, "asyncio.tasks", "_PyTask",
				  &v[0]) &&
	    !pyobj__module_global(pid, proc, "asyncio.futures", "_PENDING",
				  &v[1])) {
		out->pytask = v[0];
		out->pending = v[1];
	}
	out->lo = lo;
	out->go = (struct py_gen_offsets){
		.gen_iframe = lo->gen_iframe,
		.gen_frame_state = lo->gen_frame_state,
		.frame_size = lo->frame_size,
		.frame_stacktop = lo->frame_stacktop,
		.frame_localsplus = lo->frame_localsplus,
		.set_used = lo->set_used,
		.set_table = lo->set_table,
		.set_mask = lo->set_mask,
		.state_yield_from = lo->state_await,
		.state_yield_from_last = lo->state_await,
		.state_cleared = lo->state_cleared,
		.owner_generator = lo->owner_generator,
		.yf_depth = 1,		/* _PyFrame_StackPeek */
	};
	return 0;
}

int asynctasks__open(pid_t pid, const struct py_proc *proc, int minor,
		     struct async_layout *out, char *err, size_t errlen)
{
	struct py_async_offsets ao;
	int ret;

	if (minor < ASYNC_SECTION_MINOR)
		return layout_legacy(pid, proc, minor, out, err, errlen);
	ret = asynctasks__locate(pid, &ao, err, errlen);
	return ret ? ret : asynctasks__layout(pid, proc, minor, &ao, out, err,
					       errlen);
}

int asynctasks__read(pid_t pid, const struct py_proc *proc,
		     struct async_layout *l, struct async_tasks *out)
{
	return asynctasks__sample(pid, proc, l, 1.0, NULL, NULL, NULL, out);
}

int asynctasks__sample(pid_t pid, const struct py_proc *proc,
		       struct async_layout *l, double keep,
		       unsigned int *seed, async_same_fn same, void *ctx,
		       struct async_tasks *out)
{
	struct walk w = {
		.pid = pid, .proc = proc, .ao = &l->ao, .go = &l->go, .l = l,
		.mem = { .pid = pid }, .out = out, .keep = seed ? keep : 1.0,
		.seed = seed, .same = same, .ctx = ctx,
	};
	uint64_t interp;
	int ret;

	memset(out, 0, sizeof(*out));
	w.scratch = calloc(1, sizeof(*w.scratch));
	if (!w.scratch)
		return -ENOMEM;
	if (l->lo) {
		legacy_read(&w);
		free(w.met);
		free(w.scratch);
		return w.err ? w.err : index_tasks(out);
	}
	ret = stackread__tstates(pid, proc, thread_tasks, &w);
	if (ret < 0 && !w.err)
		cut(&w, "the thread list is unreadable");
	/* then the tasks of threads that exited, as CPython lists them */
	if (!w.err &&
	    !remote__mem_read64(&w.mem, proc->runtime_addr +
				proc->off.runtime_interpreters_head, &interp) &&
	    interp)
		walk_list(&w, interp + l->ao.interp_tasks_head, 0, 0);
	free(w.scratch);
	return w.err ? w.err : index_tasks(out);
}

int asynctasks__heads(pid_t pid, const struct py_proc *proc,
		      struct async_layout *l, __u64 addr, __u64 *name_obj,
		      __u64 *by)
{
	struct async_tasks none = { 0 };
	struct walk w = {
		.pid = pid, .proc = proc, .ao = &l->ao, .go = &l->go, .l = l,
		.mem = { .pid = pid }, .out = &none,
	};
	struct task_head h;

	if (!read_head(&w, addr, &h))
		return -EFAULT;
	*name_obj = h.name;
	*by = h.by;
	return 0;
}

int asynctasks__awaiters(pid_t pid, const struct py_proc *proc,
			 struct async_layout *l, __u64 addr, __u64 name_obj,
			 __u64 by, struct async_task *out, int max, bool *cut)
{
	char type[16];
	struct async_tasks none = { 0 };
	struct walk w = {
		.pid = pid, .proc = proc, .ao = &l->ao, .go = &l->go, .l = l,
		.mem = { .pid = pid }, .out = &none,
	};
	struct task_head h, now;
	int n = 0, i;

	*cut = false;
	w.scratch = calloc(1, sizeof(*w.scratch));
	if (!w.scratch)
		return -ENOMEM;
	while (addr) {
		if (n == max) {
			*cut = true;
			break;
		}
		for (i = 0; i < n && out[i].addr != addr; i++)
			;
		if (!n && (name_obj || by)) {
			h = (struct task_head){ .addr = addr, .name = name_obj,
						.by = by, .frames_known = true };
			/* before 3.14 the edges are a read's: they hold while
			 * the task runs the coroutine they were read with */
			if (l->lo && read_head(&w, addr, &now))
				h.coro = now.coro;
			h.by_is_set = by && obj_type_name(&w, by, type,
							  sizeof(type)) &&
				      !strcmp(type, "set");
		} else if (i < n || !read_head(&w, addr, &h)) {
			*cut = n > 0;
			break;
		}
		read_task(&w, &h, 0, n ? 0 : addr, &out[n]);
		addr = out[n].nawaiters ? out[n].awaiters[0] : 0;
		n++;
	}
	free(w.scratch);
	return n;
}

struct current {
	struct walk *w;
	struct async_coro *out;
	int n, max;
};

static int current_item(uint64_t loop, uint64_t task, void *ctx)
{
	struct current *x = ctx;
	struct task_head h;

	(void)loop;
	if (x->n < x->max && legacy_head(x->w, task, &h) && !h.done && h.coro)
		x->out[x->n++] = (struct async_coro){ h.coro, task };
	return x->n == x->max;
}

int asynctasks__current(pid_t pid, const struct py_proc *proc,
			struct async_layout *l, struct async_coro *out,
			int max)
{
	struct async_tasks none = { 0 };
	struct walk w = {
		.pid = pid, .proc = proc, .go = &l->go, .l = l,
		.mem = { .pid = pid }, .out = &none,
	};
	struct current x = { &w, out, 0, max };
	int ret;

	if (!l->lo)
		return -ENOTSUP;
	ret = pyobj__dict_items(pid, proc, l->current, MAX_CURRENT,
				current_item, &x);
	return ret < 0 ? ret : x.n;
}

__u64 asynctasks__running(pid_t pid, const struct py_proc *proc,
			  struct async_layout *l, __u64 frame)
{
	struct async_tasks none = { 0 };
	struct walk w = {
		.pid = pid, .proc = proc, .go = &l->go, .l = l,
		.mem = { .pid = pid }, .out = &none,
	};
	struct async_coro key = { frame - l->go.gen_iframe, 0 }, *e;
	struct async_coro cur[MAX_CURRENT];
	struct task_head h;
	int n, k;

	if (!l->lo || frame < l->go.gen_iframe)
		return 0;
	e = l->ncoros ? bsearch(&key, l->coros, l->ncoros, sizeof(key),
				by_coro) : NULL;
	/* the task is still pending and runs that coroutine (a task that
	 * ended keeps its coroutine, whose memory a new one may have taken:
	 * 3.11's fast request was shown as the db one that ended) */
	if (e && legacy_head(&w, e->task, &h) && !h.done && h.coro == key.coro)
		return e->task;
	n = asynctasks__current(pid, proc, l, cur, MAX_CURRENT);
	for (k = 0; k < n; k++)
		if (cur[k].coro == key.coro)
			return cur[k].task;
	return 0;
}

bool asynctasks__known_frame(const struct async_layout *l, __u64 frame)
{
	struct async_coro key = { frame - l->go.gen_iframe, 0 };

	return l->lo && l->ncoros && frame >= l->go.gen_iframe &&
	       bsearch(&key, l->coros, l->ncoros, sizeof(key), by_coro);
}

void asynctasks__close(struct async_layout *l)
{
	free(l->edges);
	free(l->coros);
	l->edges = NULL;
	l->coros = NULL;
	l->nedges = l->ncoros = 0;
}

void asynctasks__free(struct async_tasks *t)
{
	free(t->tasks);
	free(t->index);
	t->tasks = NULL;
	t->index = NULL;
	t->n = 0;
}
