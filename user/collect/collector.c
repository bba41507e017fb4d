// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF events into a profile.  A sample carries a stack hash, and the
 * first time BPF sends a hash it sends its frames too: those are named
 * then, while their code objects are alive, and the named stack is kept
 * per process under its hash.  Later samples of the hash add weight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "asynctasks.h"
#include "cgroup.h"
#include "clock.h"
#include "collector.h"
#include "container.h"
#include "filename.h"
#include "hashfree.h"
#include "htab.h"
#include "ksyms.h"
#include "linetable.h"
#include "log.h"
#include "native.h"
#include "registry.h"
#include "rowpool.h"
#include "remote.h"
#include "sampler.h"
#include "schedstat.h"
#include "stackread.h"
#include "sweep.h"
#include "symbols.h"

/* A stack with [unknown] frames, until BPF sends it again (rare). */
struct provisional {
	__u64 hash;
	const struct pstack *stack;
	UT_hash_handle hh;
};

struct thread_ref {
	pid_t tid;
	pid_t ns_tid;		/* in the process's pid namespace, 0: gone */
	bool python;		/* named by Python, not by its comm */
	const struct pthread *thread;
	UT_hash_handle hh;
};

/* Python's names of a process's threads, read again at most each wait. */
struct pynames {
	struct threadname *v;
	int n;
	bool never;		/* the interpreter's objects cannot be read */
	uint64_t active;	/* threading._active in the process */
	uint64_t next;		/* ns: no reading before */
	unsigned int wait;	/* s: doubles while a thread is not found */
};

/* What the collector keeps per process; dropped at exit and exec. */
struct cproc {
	pid_t pid;
	struct htab64 refs;	/* BPF's stack hash -> its named pstack */
	/* the sweep: thread key -> thread state, as the walk of the tick
	 * tstates_tick (1-based) found them, for first reads */
	struct htab64 tstates;
	uint64_t tstates_tick;
	struct provisional *provisional;
	struct thread_ref *threads;
	struct pynames names;
	struct ctasks *tasks;	/* --asyncio, once the process is 3.14+ */
	struct native_proc *native;	/* --native: its mappings, read at
					 * native_ns (0: never) */
	uint64_t native_ns, native_wait;
	bool native_unset;		/* BPF has not got them (its map
					 * was full): asked again */
	UT_hash_handle hh;
};

/* ms between looks for _asyncio's section: from the first, doubling */
#define TASKS_WAIT_FIRST	100
#define TASKS_WAIT_MAX		8000
#define TASK_CHAIN_MAX	32	/* tasks awaiting tasks, shown at most */
#define TASKS_LOOPS	16	/* loops (threads) a process's held test knows */
#define TASKS_MAX_GAP_NS	60000000000ULL	/* a read weighs this at most */
#define TASKS_PROCS	1024	/* processes whose tasks a tick reads */
/* task reads take at most 1/TASKS_DUTY of a CPU, apart from the sweep's
 * own (sweep__wait): with many tasks that move, they come less often
 * than the sweep's ticks, each weighing the time since the last */
#define TASKS_DUTY	200

/*
 * A running task's stack above its own frames, as the last sample of it
 * found it: the tasks awaiting it, and its [task NAME].  Good while the
 * task's name and awaited_by read the same, for TASK_SEEN_NS: the tasks
 * awaiting a running one are suspended, and their frames do not move.
 */
struct task_seen {
	__u64 task, name, by;
	uint64_t at_ns;
	const struct pstack *above;	/* NULL: no task awaits it */
	const struct pframe *frame;
	bool cut;
};

#define TASK_SEEN	8
#define TASK_SEEN_NS	(200 * 1000000ULL)
#define EDGES_EVERY_NS	(1000 * 1000000ULL)
#define EDGES_MISS_NS	(50 * 1000000ULL)
#define EDGES_DUTY	100

/*
 * A pending task as the last read met it: while it awaits the same
 * future, awaited by the same, under the same name, its coroutines are
 * suspended where they were, and its stack and cause are the same.
 */
struct task_known {
	__u64 addr, waiter, by, name_obj;
	const struct pstack *stack;	/* root first, its own frames last */
	int kind;			/* KIND_AWAIT_*, while it waits */
	uint64_t read;			/* the read that last met it */
	UT_hash_handle hh;
};

/* reads a task may go unmet before it is forgotten: with a share read,
 * most are met every few reads */
#define TASK_KNOWN_READS	64

/* --asyncio: a process's tasks, from the time its layout is found. */
struct ctasks {
	struct async_layout l;
	bool found;		/* BPF marks its samples' tasks */
	bool never;		/* it cannot have any: said once */
	uint64_t next_ns;	/* no look for the section before */
	unsigned int wait;	/* ms between looks, doubling to a limit */
	/* wall and off modes: the last read of its tasks (ns), and how
	 * many it met */
	uint64_t last_ns;
	int met;
	/* each loop's thread as the sweep's last record of it said: off
	 * the CPU since (ktime ns), 0 on it */
	struct {
		__u64 key;
		uint64_t off_since;
		bool blocked;		/* off the CPU by its own call, not
					 * preempted */
		uint64_t busy;		/* this read: ns of dt the loop was held */
		bool held;		/* held at the last read */
	} loops[TASKS_LOOPS];
	int nloops;
	struct task_seen seen[TASK_SEEN];	/* by the task's address */
	struct task_known *known;
	uint64_t reads;			/* reads of every task so far */
	/* before 3.14: when who awaits whom was last read (ns), and the
	 * least time to the next read, 100 times what it took */
	uint64_t edges_ns, edges_cost;
};


/*
 * A sample with a frame we could not name, held for the code object's
 * EV_CODE: the object was freed before we read it, and its dealloc sends
 * its bytes after the sample.  That record can miss the pass over the
 * ring that read the sample (a pass stops at a record BPF is still
 * writing), so a held sample waits at least one more pass and up to
 * DEFER_NS.  The samples of its process that follow wait behind it, so
 * they keep their order.
 */
struct deferred {
	struct deferred *next;
	uint64_t since_ns;
	size_t size;
	pid_t pid;
	bool passed;		/* a pass over the ring has ended since */
	_Alignas(8) unsigned char data[];
};

#define MAX_DEFERRED	256
#define MAX_DEFERRED_PID 64	/* so one process cannot take them all */
#define DEFER_NS	(100 * 1000000ULL)

/* A Python stack with a kernel stack below it (--kernel-stacks). */
struct with_kernel {
	struct {
		const struct pstack *python;
		__s64 kstack;
	} key;
	const struct pstack *stack;
	UT_hash_handle hh;
};

/* A cgroup id's path and container, found once. */
struct cgroup_seen {
	uint64_t id;
	const struct pcgroup *cgroup;
	UT_hash_handle hh;
};

struct collector {
	struct collector_opts o;
	struct cgroup_seen *cgroups;
	struct sampler *sampler;	/* NULL offline */
	struct registry *reg;
	struct symcache *syms;
	struct profile *prof;
	struct cproc *procs;
	struct with_kernel *kstacks;
	struct ksyms *ksyms;		/* loaded at the first kernel stack */
	uint64_t unknown_stacks, unknown_frames, forgotten_stacks;
	uint64_t name_reads;
	uint64_t closed_intervals;	/* read from user space at the end */
	uint64_t codes_named;		/* from EV_CODE */
	struct deferred *deferred;
	unsigned int ndeferred;
	bool replaying;
	/* the sampled sweep (--offcpu=sweep): its threads, its next tick,
	 * the mean time between ticks, and a buffer for stacks */
	struct sweep *sweep;
	uint64_t next_tick_ns, tick_ns, next_all_ns;
	uint64_t sweep_slowed, sweep_max_ns;	/* ticks that waited longer */
	struct sweep_budget sweep_budget;
	bool sweep_last;		/* the last tick: every record is final */
	unsigned int seed;
	struct stackread *sweep_sr;
	uint64_t sweeps, sweep_ns, sweep_read_ns, sweep_records, sweep_reads;
	uint64_t sweep_reads_again, sweep_reads_stale;
	struct async_task *chain;	/* --asyncio: TASK_CHAIN_MAX of them */
	uint64_t task_samples, task_cut;
	/* wall and off modes: task reads, their time (ns), those that read
	 * a share of the tasks, the tasks read, and task samples added */
	uint64_t task_ticks, task_ns, task_sampled, task_reads, task_adds;
	/* task reads have a budget of their own (TASKS_DUTY), so that many
	 * tasks slow their reads, not the threads' sweep */
	struct sweep_budget tasks_budget;
	uint64_t next_tasks_ns;
	/* --native: the binaries processes map, their rows placed in the
	 * pool BPF searches */
	struct native_store *natives;
	struct rowpool *rowpool;
	uint64_t native_stops[NATIVE__MAX];
	uint64_t native_reads;
};

static int on_event(void *ctx, const void *data, size_t size)
{
	return collector__handle(ctx, data, size);
}

static struct collector *alloc(const struct collector_opts *o)
{
	struct collector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = *o;
	c->syms = symcache__new();
	c->prof = profile__new(o->mode == MODE_CPU ? UNIT_SAMPLES :
						     UNIT_NANOSECONDS);
	if (!c->syms || !c->prof) {
		collector__free(c);
		return NULL;
	}
	profile__meta(c->prof)->mode = o->mode;
	profile__meta(c->prof)->rate_hz = o->rate_hz;
	return c;
}

struct collector *collector__new_offline(const struct collector_opts *o)
{
	struct collector *c = alloc(o);

	if (c && !(c->reg = registry__new(NULL, false))) {
		collector__free(c);
		return NULL;
	}
	return c;
}

/* --native: unwind rows for 2 Mi ranges of code (32 MiB; libpython
 * takes about 100 Ki, numpy's OpenBLAS about ...), and the processes
 * BPF can walk at once (8 KiB each) */
#define NATIVE_POOL_ROWS	(1u << 21)
#define NATIVE_PROCS		256

static int native_open(struct collector *c)
{
	struct unwind_row *rows;
	uint32_t n;

	rows = sampler__native_rows(c->sampler, &n);
	if (!rows)
		return -ENODEV;
	c->rowpool = rowpool__new(n);
	c->natives = c->rowpool ? native_store__new(c->rowpool, rows) : NULL;
	return c->natives ? 0 : -ENOMEM;
}

int collector__open(const struct collector_opts *o, struct collector **out,
		    char *err, size_t errlen)
{
	struct sampler_opts so = {
		.native_rows = o->native ? NATIVE_POOL_ROWS : 0,
		.native_procs = o->native ? NATIVE_PROCS : 0,
		.rate_hz = o->rate_hz,
		.mode = o->mode,
		.filter_pids = o->filter_pids,
		.gil_only = o->gil_only,
		.kernel_stacks = o->kernel_stacks,
		.sweep = o->sweep && o->mode != MODE_CPU,
		.cgroups = o->cgroups,
		.ncgroups = o->ncgroups,
	};
	struct collector *c = alloc(o);
	int ret;

	if (!c)
		return -ENOMEM;
	ret = sampler__open(&so, on_event, c, &c->sampler, err, errlen);
	if (ret) {
		collector__free(c);
		return ret;
	}
	c->reg = registry__new(c->sampler, o->mode != MODE_CPU);
	if (!c->reg || (o->native && native_open(c))) {
		collector__free(c);
		return -ENOMEM;
	}
	/* now, while kallsyms shows addresses: the capability that lets it
	 * (CAP_SYSLOG) is dropped once setup is over */
	if (o->kernel_stacks)
		c->ksyms = ksyms__load(NULL);
	*out = c;
	return 0;
}

static void native_forget(struct collector *c, struct cproc *cp);

static void cproc_free(struct cproc *cp)
{
	if (cp->tasks) {
		HASH_FREE_ALL(cp->tasks->known);
		asynctasks__close(&cp->tasks->l);
	}
	free(cp->tasks);
	htab64__free(&cp->refs);
	htab64__free(&cp->tstates);
	HASH_FREE_ALL(cp->provisional);
	HASH_FREE_ALL(cp->threads);
	free(cp->names.v);
	free(cp);
}

/* What was found of threads, kernel stacks and cgroups, to be found
 * again when next sampled. */
static void forget_found(struct collector *c)
{
	struct cproc *cp, *cpt;

	HASH_ITER(hh, c->procs, cp, cpt) {
		HASH_FREE_ALL(cp->threads);
		if (cp->tasks) {
			memset(cp->tasks->seen, 0, sizeof(cp->tasks->seen));
			HASH_FREE_ALL(cp->tasks->known);
		}
	}
	HASH_FREE_ALL(c->kstacks);
	HASH_FREE_ALL(c->cgroups);
}

void collector__free(struct collector *c)
{
	struct cproc *cp, *tmp;

	if (!c)
		return;
	while (c->deferred) {
		struct deferred *d = c->deferred;

		c->deferred = d->next;
		free(d);
	}
	forget_found(c);
	HASH_ITER(hh, c->procs, cp, tmp) {
		HASH_DEL(c->procs, cp);
		native_forget(c, cp);
		cproc_free(cp);
	}
	native_store__free(c->natives);
	rowpool__free(c->rowpool);
	ksyms__free(c->ksyms);
	sweep__free(c->sweep);
	free(c->sweep_sr);
	free(c->chain);
	sampler__destroy(c->sampler);
	registry__free(c->reg);
	symcache__free(c->syms);
	profile__free(c->prof);
	free(c);
}

static bool tasks_ready(struct collector *c, struct cproc *cp,
			const struct pyproc *pp);
static struct cproc *cproc_get(struct collector *c, pid_t pid);

int collector__add_pid(struct collector *c, pid_t pid, char *err,
		       size_t errlen)
{
	int ret = registry__add(c->reg, pid, err, errlen);
	const struct pyproc *pp;
	struct cproc *cp;

	if (!ret && c->sampler)
		ret = sampler__add_target(c->sampler, pid);
	/* its tasks from its first sample, when it runs asyncio already */
	if (!ret && c->o.asyncio && (pp = registry__get(c->reg, pid)) &&
	    (cp = cproc_get(c, pid)))
		tasks_ready(c, cp, pp);
	return ret;
}

int collector__add_target(struct collector *c, pid_t pid)
{
	return sampler__add_target(c->sampler, pid);
}

int collector__expect_exe(struct collector *c, const char *path, pid_t pid)
{
	return registry__expect_exe(c->reg, path, pid);
}

static int handle_sample(struct collector *c, const void *data, size_t size);
static bool all_named(struct collector *c, const struct pyproc *pp,
		      const struct py_frame *frames, int nframes, bool again);

/* How many samples of pid are held. */
static unsigned int deferred_of(const struct collector *c, pid_t pid)
{
	const struct deferred *d;
	unsigned int n = 0;

	for (d = c->ndeferred ? c->deferred : NULL; d; d = d->next)
		n += d->pid == pid;
	return n;
}

static int defer(struct collector *c, const void *data, size_t size,
		 pid_t pid)
{
	struct deferred *d = malloc(sizeof(*d) + size), **end;

	if (!d)
		return -ENOMEM;
	d->next = NULL;
	d->since_ns = clock__now_ns();
	d->passed = false;
	d->size = size;
	d->pid = pid;
	memcpy(d->data, data, size);
	for (end = &c->deferred; *end; end = &(*end)->next)
		;
	*end = d;
	c->ndeferred++;
	return 0;
}

/* Is a sample of pid held before `end`? */
static bool held_before(const struct collector *c, const struct deferred *end,
			pid_t pid)
{
	const struct deferred *d;

	for (d = c->deferred; d != end; d = d->next)
		if (d->pid == pid)
			return true;
	return false;
}

/*
 * At the end of a pass: does d, its process's first held sample, wait on?
 * Yes while a frame is not named and its code's EV_CODE may still come:
 * until one more pass has ended, and for DEFER_NS.  Marks the pass.
 */
static bool keep_waiting(struct collector *c, struct deferred *d,
			 uint64_t now)
{
	const struct sample_event *ev = (const void *)d->data;
	const struct pyproc *pp;
	bool wait = !d->passed || now - d->since_ns < DEFER_NS;

	d->passed = true;
	if (!wait || !ev->has_frames)
		return false;
	pp = registry__get(c->reg, d->pid);
	return pp && !all_named(c, pp, (const struct py_frame *)(ev + 1),
				ev->nframes, true);
}

/*
 * The samples held back, of pid (0: all), in order.  force: now, named or
 * not (the process exited or exec'ed, holds too many, or the recording
 * ends).  Otherwise, at the
 * end of a pass over the ring, a sample whose code may still come waits
 * on (see struct deferred), and so do its process's later ones.
 */
static void replay(struct collector *c, pid_t pid, bool force)
{
	struct deferred **at = &c->deferred, *d;
	uint64_t now = clock__now_ns();
	bool was = c->replaying;

	if (!c->ndeferred)
		return;
	c->replaying = true;
	while ((d = *at)) {
		if ((pid && d->pid != pid) ||
		    (!force && (held_before(c, d, d->pid) ||
				keep_waiting(c, d, now)))) {
			at = &d->next;
			continue;
		}
		*at = d->next;
		c->ndeferred--;
		handle_sample(c, d->data, d->size);
		free(d);
	}
	c->replaying = was;
}

static int sweep_poll(struct collector *c, int max_ms);
static int poll_once(struct collector *c, int max_ms);

int collector__poll(struct collector *c, int max_ms)
{
	native_store__expire(c->natives);
	if (c->sweep)
		return sweep_poll(c, max_ms);
	return poll_once(c, max_ms);
}

static int poll_once(struct collector *c, int max_ms)
{
	/* new stacks and processes wake us; known stacks wait for the
	 * tick, which retries of early inspections want shorter */
	int ret = sampler__poll(c->sampler,
				registry__retrying(c->reg) && max_ms > 5 ?
					5 : max_ms);

	replay(c, 0, false);
	registry__tick(c->reg);
	sampler__jitter(c->sampler);
	sampler__adapt(c->sampler);
	return ret;
}

int collector__drain(struct collector *c)
{
	int ret = sampler__poll(c->sampler, 0);

	replay(c, 0, false);
	return ret;
}

void collector__flush(struct collector *c)
{
	uint64_t until = clock__now_ns() + DEFER_NS;
	int n;

	/* what is left in the ring, and the code the held samples wait
	 * for; records keep coming on a busy host, so not for long */
	while (c->sampler && clock__now_ns() < until) {
		n = sampler__poll(c->sampler, c->ndeferred ? 1 : 0);
		replay(c, 0, false);
		if (n <= 0 && !c->ndeferred)
			break;
	}
	replay(c, 0, true);
}

struct profile *collector__profile(struct collector *c)
{
	return c->prof;
}

/*
 * The stacks the collector has named, each in order: its copy interned in
 * q when q is set, else its copy from out[] put in its place.  The same
 * walk twice, so a rebase that runs out of memory halfway changes
 * nothing.  Only stacks are carried over, since BPF sends a stack's
 * frames once; threads, cgroups and kernel stacks are found again when
 * next sampled, so those of threads that ended go with the old profile.
 */
static int walk_stacks(struct collector *c, struct profile *q,
		       const struct pstack **out)
{
	struct provisional *pv, *pvt;
	struct cproc *cp, *cpt;
	size_t k = 0, i;

	HASH_ITER(hh, c->procs, cp, cpt) {
		for (i = 0; i < cp->refs.cap; i++) {
			struct htab64_slot *r = &cp->refs.slots[i];

			if (!r->value)
				continue;
			if (q && !(out[k] = profile__copy_stack(q, r->value)))
				return -ENOMEM;
			if (!q)
				r->value = (void *)out[k];
			k++;
		}
		HASH_ITER(hh, cp->provisional, pv, pvt) {
			if (q && !(out[k] = profile__copy_stack(q, pv->stack)))
				return -ENOMEM;
			if (!q)
				pv->stack = out[k];
			k++;
		}
	}
	return (int)k;
}

struct profile *collector__rebase(struct collector *c)
{
	struct profile *q, *old = c->prof;
	const struct pstack **moved;
	struct cproc *cp, *cpt;
	size_t n = 0;
	int got;

	if (profile__nentries(old))
		return NULL;
	HASH_ITER(hh, c->procs, cp, cpt)
		n += cp->refs.n + HASH_COUNT(cp->provisional);
	q = profile__new(profile__unit(old));
	moved = calloc(n ? n : 1, sizeof(*moved));
	if (!q || !moved || (got = walk_stacks(c, q, moved)) < 0 ||
	    (size_t)got != n) {
		profile__free(q);
		free(moved);
		return NULL;
	}
	*profile__meta(q) = *profile__meta(old);
	walk_stacks(c, NULL, moved);
	free(moved);
	forget_found(c);
	if (c->sweep) {
		sweep__forget_stacks(c->sweep);
		c->next_all_ns = 0;	/* every thread's stack, again */
	}
	c->prof = q;
	return old;
}

const struct pyproc *collector__process(struct collector *c, pid_t pid)
{
	return registry__get(c->reg, pid);
}

static struct cproc *cproc_get(struct collector *c, pid_t pid)
{
	struct cproc *cp;

	HASH_FIND_INT(c->procs, &pid, cp);
	if (cp)
		return cp;
	cp = calloc(1, sizeof(*cp));
	if (!cp)
		return NULL;
	cp->pid = pid;
	HASH_ADD_INT(c->procs, pid, cp);
	return cp;
}

/* The process's stacks BPF was told it need not send again. */
static void forget_stacks(struct collector *c, const struct cproc *cp)
{
	__u64 *hashes;
	size_t i, n = 0;

	if (!c->sampler || !cp->refs.n)
		return;
	hashes = malloc(cp->refs.n * sizeof(*hashes));
	if (!hashes)
		return;		/* the map is an LRU: they age out */
	for (i = 0; i < cp->refs.cap; i++)
		if (cp->refs.slots[i].value)
			hashes[n++] = cp->refs.slots[i].key;
	sampler__forget_stacks(c->sampler, hashes, n);
	free(hashes);
}

/* BPF walks the process's native stacks no more: its binaries lose a
 * user (and the rows of those it was the last of, their place). */
static void native_forget(struct collector *c, struct cproc *cp)
{
	if (!cp->native)
		return;
	sampler__delete_native(c->sampler, cp->pid);
	native_store__put_proc(c->natives, cp->native);
	cp->native = NULL;
}

/* A process exited or exec'ed: what we named for it is stale. */
static void forget_process(struct collector *c, pid_t pid)
{
	struct cproc *cp;

	symcache__forget(c->syms, pid);
	HASH_FIND_INT(c->procs, &pid, cp);
	if (!cp)
		return;
	HASH_DEL(c->procs, cp);
	forget_stacks(c, cp);
	native_forget(c, cp);
	cproc_free(cp);
}

static const struct pframe *python_frame(struct collector *c,
					 const struct pyproc *pp,
					 const struct py_frame *f)
{
	const struct pframe *pf;
	const struct pysym *sym;
	const char *file;
	int line = 0;

	sym = symcache__lookup(c->syms, pp->pid, &pp->proc, f->code, f->check);
	if (!sym) {
		c->unknown_frames++;
		return profile__frame(c->prof, "[unknown]", NULL, 0, 0,
				      PFRAME_PSEUDO);
	}
	/*
	 * An instruction the table gives no line (3.10 on: a module's import
	 * machinery, cleanup code) is shown at the code's first line, as
	 * CPython itself places a frame that has not yet run one: by line,
	 * every row of Python code then has a line, whatever the sample hit.
	 */
	if (!c->o.nolineno) {
		line = f->lasti < 0 ? sym->firstlineno :
			linetable__line(pp->minor, sym->linetable,
					sym->linetable_len, sym->firstlineno,
					f->lasti);
		if (line <= 0)
			line = sym->firstlineno > 0 ? sym->firstlineno : 0;
	}
	file = c->o.full_filenames ? sym->filename :
		filename__shorten(sym->filename, pp->cwd);
	pf = profile__frame(c->prof, sym->qualname, file, line,
			    sym->firstlineno, PFRAME_PYTHON);
	/* the short name no longer says whose code it is */
	if (pf && pf->origin == ORIGIN_UNKNOWN)
		profile__frame_origin(c->prof, pf,
				      filename__origin(sym->filename));
	return pf;
}

static const struct pstack *find_named(const struct cproc *cp, __u64 hash)
{
	return htab64__get(&cp->refs, hash);
}

static struct provisional *find_provisional(const struct cproc *cp,
					    __u64 hash)
{
	struct provisional *p;

	HASH_FIND(hh, cp->provisional, &hash, sizeof(hash), p);
	return p;
}

static int set_provisional(struct cproc *cp, __u64 hash,
			   const struct pstack *s)
{
	struct provisional *p = find_provisional(cp, hash);

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->hash = hash;
		HASH_ADD(hh, cp->provisional, hash, sizeof(hash), p);
	}
	p->stack = s;
	return 0;
}

#define STACK_MAX	(PYSIGHT_MAX_FRAMES + 1 + PYSIGHT_NATIVE_FRAMES)

static bool entry_mark(const struct py_frame *f)
{
	return f->lasti == PY_LASTI_ENTRY;
}

static const struct pframe *native_frame(struct collector *c,
					 const struct native_map *m,
					 uint64_t pc)
{
	char name[NATIVE_NAME_MAX + 1024];
	const struct pframe *f;

	if (!m)
		return profile__frame(c->prof, "[unknown native]", NULL, 0, 0,
				      PFRAME_PSEUDO);
	native__frame_name(m, pc, name, sizeof(name));
	f = profile__frame(c->prof, name, NULL, 0, 0, PFRAME_NATIVE);
	if (f && !f->binary)
		profile__frame_native(c->prof, f, m->bin->name,
				      m->bin->build_id_hex,
				      native__frame_addr(m, pc));
	return f;
}

/* The Python frames one call of the eval loop ran, leaf first, from
 * frames[*at] into out at n: up to its entry mark from 3.11 on, one
 * frame before (each frame had a call of its own).  The new n. */
static int eval_frames(struct collector *c, const struct pyproc *pp,
		       const struct py_frame *frames, int nframes, int *at,
		       const struct pframe **out, int n)
{
	while (*at < nframes) {
		const struct py_frame *f = &frames[(*at)++];

		if (entry_mark(f)) {
			if (pp->minor >= 11)
				break;
			continue;
		}
		out[n++] = python_frame(c, pp, f);
		if (pp->minor < 11)
			break;
	}
	return n;
}

/* Are only entry marks left of the Python frames? */
static bool python_done(const struct py_frame *frames, int nframes, int at)
{
	while (at < nframes && entry_mark(&frames[at]))
		at++;
	return at >= nframes;
}

/*
 * --native: the Python frames and the native ones, leaf first, as one
 * stack into out: each _PyEval_EvalFrameDefault gives way to the
 * Python frames it ran, and the interpreter's other frames (those of
 * the binary that holds the eval loop) are left out unless
 * --native-all; so are the native frames below the outermost Python
 * one (the interpreter's start, the thread's).  Python frames no eval
 * frame took (the native walk ended short) go at the root, as they
 * would without --native.  How many.
 */
static int merge_native(struct collector *c, const struct cproc *cp,
			const struct pyproc *pp, const struct py_frame *frames,
			int nframes, const struct py_frame *natives,
			int nnative, const struct pframe **out)
{
	const struct native_binary *interp = NULL;
	const struct native_map *maps[PYSIGHT_NATIVE_FRAMES];
	__u64 pcs[PYSIGHT_NATIVE_FRAMES];
	bool eval[PYSIGHT_NATIVE_FRAMES];
	bool all = c->o.native_all, evals = false;
	int n = 0, at = 0, k;

	for (k = 0; k < nnative; k++) {
		__u64 pc = pcs[k] = pysight_unwind_lookup(natives[k].code, k);

		maps[k] = cp->native ? native_proc__find(cp->native, pc) : NULL;
		eval[k] = maps[k] && native__in_eval(maps[k], pc);
		if (!interp && eval[k])
			interp = maps[k]->bin;
	}
	for (k = 0; k < nnative; k++) {
		if (eval[k]) {
			n = eval_frames(c, pp, frames, nframes, &at, out, n);
			evals = true;
			if (all)
				out[n++] = native_frame(c, maps[k], pcs[k]);
			continue;
		}
		if (!all && evals && python_done(frames, nframes, at))
			break;
		if (!all && interp && maps[k] && maps[k]->bin == interp)
			continue;
		out[n++] = native_frame(c, maps[k], pcs[k]);
	}
	while (at < nframes)
		n = eval_frames(c, pp, frames, nframes, &at, out, n);
	return n;
}

/* The named stack of frames (leaf first), with --native the native
 * ones merged in, marked at the root when it is not whole; NULL on
 * ENOMEM. */
static const struct pstack *name_frames(struct collector *c,
					const struct cproc *cp,
					const struct pyproc *pp, int status,
					const struct py_frame *frames, int nframes,
					const struct py_frame *natives,
					int nnative)
{
	const struct pframe *leaf[STACK_MAX], *out[STACK_MAX];
	int n = 0, m, i;

	if (status == ST_TRUNCATED)
		out[n++] = profile__frame(c->prof, "[truncated]", NULL, 0, 0,
					  PFRAME_PSEUDO);
	else if (status != ST_COMPLETE)
		out[n++] = profile__frame(c->prof, "[partial stack]", NULL, 0,
					  0, PFRAME_PSEUDO);
	if (cp && nnative > 0) {
		m = merge_native(c, cp, pp, frames, nframes, natives, nnative,
				 leaf);
	} else {
		for (m = 0, i = 0; i < nframes; i++)
			if (!entry_mark(&frames[i]))
				leaf[m++] = python_frame(c, pp, &frames[i]);
	}
	for (i = m - 1; i >= 0; i--)
		out[n++] = leaf[i];
	for (i = 0; i < n; i++)
		if (!out[i])
			return NULL;
	return profile__stack(c->prof, out, n);
}

const struct pstack *collector__name_frames(struct collector *c, pid_t pid,
					    int status,
					    const struct py_frame *frames,
					    int nframes)
{
	const struct pyproc *pp = registry__get(c->reg, pid);

	if (!pp || nframes < 0 || nframes > PYSIGHT_MAX_FRAMES)
		return NULL;
	return name_frames(c, NULL, pp, status, frames, nframes, NULL, 0);
}

/* Can a sample with a frame not named wait for the code's EV_CODE?
 * Only BPF sends those, for processes whose deallocs it watches. */
static bool may_wait(const struct collector *c, const struct pyproc *pp)
{
	return c->sampler && !c->replaying && c->ndeferred < MAX_DEFERRED &&
	       (pp->proc.flags & PY_PROC_F_CODE_CACHE);
}

/* again: a held sample asks again, and its misses were counted once */
static bool all_named(struct collector *c, const struct pyproc *pp,
		      const struct py_frame *frames, int nframes, bool again)
{
	int i;

	for (i = 0; i < nframes; i++)
		if (!entry_mark(&frames[i]) &&
		    !(again ? symcache__retry : symcache__lookup)(
			    c->syms, pp->pid, &pp->proc, frames[i].code,
			    frames[i].check))
			return false;
	return true;
}

/*
 * Name a stack the first time BPF sends its frames.  A stack with a
 * frame we could not name is kept as provisional, and BPF is told to
 * forget its hash: the next sample of it brings its frames again, to be
 * named then.  Otherwise one early miss would stay [unknown] for every
 * later sample of the same hash (an exec loop brings back the same code
 * address and identity for each new function).
 */
static int add_stack(struct collector *c, struct cproc *cp,
		     const struct pyproc *pp, const struct sample_event *ev,
		     const struct py_frame *frames)
{
	uint64_t misses = c->unknown_frames;
	const struct pstack *stack;

	if (may_wait(c, pp) && !all_named(c, pp, frames, ev->nframes, false))
		return -EAGAIN;
	stack = name_frames(c, cp, pp, ev->status, frames, ev->nframes,
			    frames + ev->nframes, ev->nnative);
	if (!stack)
		return -ENOMEM;
	if (c->unknown_frames == misses)
		return htab64__set(&cp->refs, ev->stack_hash, (void *)stack);
	sampler__forget_stack(c->sampler, ev->stack_hash);
	c->forgotten_stacks++;
	return set_provisional(cp, ev->stack_hash, stack);
}

#define NAMES_WAIT_MAX	64	/* s between readings of a process's names */

static const char *known_name(const struct pynames *pn, pid_t ns_tid)
{
	int i;

	for (i = 0; i < pn->n; i++)
		if (pn->v[i].ns_tid == ns_tid)
			return pn->v[i].name;
	return NULL;
}

/*
 * The name Python gives the thread (threading.Thread.name), or NULL when
 * the process is not sampled live, has no such thread (not started by
 * threading, or not yet in its table) or cannot be read.  A miss reads
 * the process's table again, at most once a second, and less often
 * while misses go on.
 */
static const char *python_name(struct collector *c, struct cproc *cp,
			       const struct pyproc *pp, pid_t ns_tid)
{
	struct pynames *pn = &cp->names;
	struct threadname *v;
	const char *name;
	uint64_t now;
	int n;

	if (!c->sampler || pn->never || !ns_tid)
		return NULL;
	name = known_name(pn, ns_tid);
	now = clock__now_ns();
	if (name || now < pn->next)
		return name;
	v = malloc(THREADNAMES_MAX * sizeof(*v));
	if (!v)
		return NULL;
	n = threadnames__read(pp->pid, &pp->proc, &pn->active, v,
			      THREADNAMES_MAX);
	c->name_reads++;
	if (n == -ENOTSUP)
		pn->never = true;
	if (n >= 0) {
		free(pn->v);
		pn->v = realloc(v, (n ? n : 1) * sizeof(*v));
		pn->v = pn->v ? pn->v : v;
		pn->n = n;
	} else {
		free(v);
	}
	name = known_name(pn, ns_tid);
	if (name || !pn->wait)
		pn->wait = 1;
	else if (pn->wait < NAMES_WAIT_MAX)
		pn->wait *= 2;
	pn->next = now + pn->wait * 1000000000ULL;
	return name;
}

/*
 * The thread of a sample or record.  It is named as Python names it when
 * it can be, else by its comm; a thread named by Python keeps that name,
 * one named by its comm is looked up again now and then (its Thread may
 * not have been in threading's table yet), and renamed when found, with
 * what was sampled of it meanwhile.  ns_tid: its tid in its own
 * pid namespace, 0 when the caller does not know it.
 */
static const struct pthread *thread_of(struct collector *c, struct cproc *cp,
				       const struct pyproc *pp, pid_t tid,
				       pid_t ns_tid, const char *comm)
{
	struct thread_ref *t;
	const struct pthread *th;
	const char *name;

	HASH_FIND_INT(cp->threads, &tid, t);
	if (t && t->python)
		return t->thread;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->tid = tid;
		t->ns_tid = ns_tid ? ns_tid : !pp->ns_pid ? tid :
			threadnames__ns_tid(pp->pid, tid);
		HASH_ADD_INT(cp->threads, tid, t);
	}
	name = python_name(c, cp, pp, t->ns_tid);
	if (t->thread && !name)
		return t->thread;
	/* what was sampled under its comm goes under its name */
	if (t->thread && !profile__rename_thread(c->prof, t->thread, name)) {
		t->python = true;
		return t->thread;
	}
	th = profile__thread(c->prof, pp->pid, pp->ns_pid, tid, pp->comm,
			     name ? name : comm);
	if (!th) {
		if (!t->thread) {
			HASH_DEL(cp->threads, t);
			free(t);
		}
		return NULL;
	}
	t->thread = th;
	t->python = name != NULL;
	return th;
}

static uint64_t weight_of(const struct collector *c, uint64_t ns);

/*
 * The cgroup of a sample, with its path (relative to the v2 mount) and
 * container, found through the sampled process's /proc/PID/cgroup the
 * first time its id is seen.  NULL on ENOMEM.
 */
static const struct pcgroup *cgroup_of(struct collector *c, uint64_t id,
				       pid_t pid)
{
	struct container_id ct;
	struct cgroup_seen *g;
	char path[PATH_MAX];
	bool named, is_ct = false;

	HASH_FIND(hh, c->cgroups, &id, sizeof(id), g);
	if (g)
		return g->cgroup;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	named = id && !cgroup__of_pid(pid, id, path, sizeof(path));
	if (named)
		is_ct = container__parse(path, &ct);
	g->id = id;
	g->cgroup = profile__cgroup(c->prof, id, named ? path : NULL,
				    is_ct ? ct.id : NULL,
				    is_ct && ct.pod[0] ? ct.pod : NULL);
	if (!g->cgroup) {
		free(g);
		return NULL;
	}
	HASH_ADD(hh, c->cgroups, id, sizeof(id), g);
	return g->cgroup;
}

/* A kernel frame of the hook that took the stack: the program, and the
 * tracepoint's call of it (bpf_trace_run4, __bpf_trace_sched_switch,
 * __traceiter_sched_switch: 6.18 keeps the last in some stacks). */
static bool our_hook(const char *name)
{
	return !name || !strncmp(name, "bpf_", 4) ||
	       !strncmp(name, "__bpf_trace_", 12) ||
	       !strncmp(name, "__traceiter_", 12);
}

/*
 * The Python stack with the kernel's below it, off-CPU time's cause in
 * between (the writers put it there).  Kernel frames read leaf last:
 * the scheduler's own at the very end.
 */
static const struct pstack *with_kernel(struct collector *c,
					const struct pstack *py, int kstack)
{
	const struct pframe *out[STACK_MAX + PYSIGHT_KSTACK_DEPTH];
	__u64 ips[PYSIGHT_KSTACK_DEPTH];
	struct with_kernel probe, *k;
	unsigned int i;
	int n;

	memset(&probe.key, 0, sizeof(probe.key));
	probe.key.python = py;
	probe.key.kstack = kstack;
	HASH_FIND(hh, c->kstacks, &probe.key, sizeof(probe.key), k);
	if (k)
		return k->stack;
	n = sampler__kernel_stack(c->sampler, kstack, ips, PYSIGHT_KSTACK_DEPTH);
	if (n <= 0)
		return py;
	if (!c->ksyms || py->n > STACK_MAX)
		return py;
	for (i = 0; i < py->n; i++)
		out[i] = py->frames[i];
	/* the leaf end is our own hook, in the tracer's stacks */
	while (n > 0 && our_hook(ksyms__name(c->ksyms, ips[0])))
		memmove(ips, ips + 1, --n * sizeof(ips[0]));
	while (n-- > 0) {
		const char *name = ksyms__name(c->ksyms, ips[n]);

		out[i] = profile__frame(c->prof, name ? name : PFRAME_KERNEL_FILE, NULL,
					0, 0, PFRAME_KERNEL);
		if (!out[i++])
			return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->key = probe.key;
	k->stack = profile__stack(c->prof, out, i);
	if (!k->stack) {
		free(k);
		return NULL;
	}
	HASH_ADD(hh, c->kstacks, key, sizeof(k->key), k);
	return k->stack;
}

/*
 * --asyncio: can the samples of this process name their running task?
 * Its _asyncio module is looked for until found (it is mapped when the
 * program imports asyncio): 0.1 s after a sample found it missing, then
 * twice as long each time, up to 8 s.  Once found, BPF marks which
 * frames of each sample are the task's.
 */
static bool tasks_ready(struct collector *c, struct cproc *cp,
			const struct pyproc *pp)
{
	struct ctasks *t = cp->tasks;
	char err[256];
	uint64_t now;
	int ret;

	if (t && (t->found || t->never))
		return t->found && (pp->proc.flags & (PY_PROC_F_ASYNC |
						       PY_PROC_F_ASYNC_OUTER));
	if (!t) {
		t = cp->tasks = calloc(1, sizeof(*t));
		if (!t)
			return false;
		if (pp->minor < ASYNC_FIRST_MINOR) {
			t->never = true;
			pr_warn("--asyncio: process %d (%s) runs Python 3.%d: its tasks need Python 3.%d or newer",
				pp->pid, pp->comm, pp->minor, ASYNC_FIRST_MINOR);
			return false;
		}
	}
	now = clock__now_ns();
	if (now < t->next_ns || !c->sampler)
		return false;
	asynctasks__close(&t->l);
	ret = asynctasks__open(pp->pid, &pp->proc, pp->minor, &t->l, err,
			       sizeof(err));
	if (!ret)
		ret = registry__set_async(c->reg, pp->pid, &t->l);
	if (ret == -ENOENT || ret == -ENOMEM) {
		t->wait = t->wait ? t->wait * 2 : TASKS_WAIT_FIRST;
		if (t->wait > TASKS_WAIT_MAX)
			t->wait = TASKS_WAIT_MAX;
		t->next_ns = now + t->wait * 1000000ULL;
		return false;
	}
	if (ret) {
		t->never = true;
		pr_warn("--asyncio: process %d (%s): %s", pp->pid, pp->comm,
			ret == -ERANGE ? "its task offsets are out of range" :
			ret == -ESRCH ? "it is gone" : err);
		return false;
	}
	t->found = true;
	pr_debug("--asyncio: pid %d's tasks are readable", pp->pid);
	return false;	/* samples read before BPF knew carry no task */
}

/* "[task NAME]", the pseudo-frame a task's frames hang under. */
static const struct pframe *task_frame(struct collector *c, const char *name)
{
	char buf[ASYNC_NAME_LEN + 8];

	snprintf(buf, sizeof(buf), "[task %s]", name);
	return profile__frame(c->prof, buf, NULL, 0, 0, PFRAME_PSEUDO);
}

/*
 * The stack of a chain of tasks, chain[0] the innermost, each awaited by
 * the next: root first, each as "[task NAME]" and its coroutines.  cut:
 * the chain ended early.  NULL on ENOMEM.
 */
static const struct pstack *chain_stack(struct collector *c,
					const struct pyproc *pp,
					const struct async_task *const *chain,
					int n, bool cut)
{
	const struct pframe *out[PYSIGHT_MAX_FRAMES + 1];
	const struct pstack *named;
	unsigned int k = 0, j, max = PYSIGHT_MAX_FRAMES + 1;
	int i;

	if (cut)
		out[k++] = profile__frame(c->prof, "[partial tasks]", NULL, 0,
					  0, PFRAME_PSEUDO);
	for (i = n - 1; i >= 0 && k < max; i--) {
		out[k++] = task_frame(c, chain[i]->name);
		named = name_frames(c, NULL, pp, chain[i]->status,
				    chain[i]->frames, chain[i]->nframes, NULL,
				    0);
		if (!named)
			return NULL;
		for (j = 0; j < named->n && k < max; j++)
			out[k++] = named->frames[j];
	}
	for (j = 0; j < k; j++)
		if (!out[j])
			return NULL;
	return profile__stack(c->prof, out, k);
}

/* c->chain, TASK_CHAIN_MAX tasks read by asynctasks__awaiters; ENOMEM. */
static int chain_buffer(struct collector *c)
{
	if (!c->chain)
		c->chain = calloc(TASK_CHAIN_MAX, sizeof(*c->chain));
	return c->chain ? 0 : -ENOMEM;
}

/* The stack above a running task's frames: read, or as last seen. */
static const struct task_seen *task_above(struct collector *c, struct cproc *cp,
					  const struct pyproc *pp, __u64 task,
					  __u64 name, __u64 by)
{
	const struct async_task *chain[TASK_CHAIN_MAX];
	struct ctasks *ct = cp->tasks;
	struct task_seen *ts = &ct->seen[(task >> 4) % TASK_SEEN];
	uint64_t now = clock__now_ns();
	bool cut;
	int n, i;

	/* as the sample found them, else as they are now */
	if (!name && !by &&
	    asynctasks__heads(pp->pid, &pp->proc, &ct->l, task, &name, &by))
		return NULL;
	if (ts->task == task && ts->name == name && ts->by == by &&
	    now - ts->at_ns < TASK_SEEN_NS)
		return ts;
	if (chain_buffer(c))
		return NULL;
	n = asynctasks__awaiters(pp->pid, &pp->proc, &ct->l, task, name, by,
				 c->chain, TASK_CHAIN_MAX, &cut);
	if (n <= 0)
		return NULL;
	for (i = 0; i < n; i++)
		chain[i] = &c->chain[i];
	memset(ts, 0, sizeof(*ts));
	ts->frame = task_frame(c, c->chain[0].name);
	ts->above = n > 1 || cut ?
		chain_stack(c, pp, chain + 1, n - 1, cut) : NULL;
	if (!ts->frame || ((n > 1 || cut) && !ts->above))
		return NULL;
	ts->task = task;
	ts->name = name;
	ts->by = by;
	ts->at_ns = now;
	ts->cut = cut;
	return ts;
}

/*
 * Before 3.14, who awaits whom, and each task's coroutine, read again
 * (every task met, none read in full) when the last read is every ns
 * old, and never more than 1/EDGES_DUTY of the time.  In wall and off
 * modes each tick's read of the tasks does it.
 */
static void edges_read(struct collector *c, struct cproc *cp,
		       const struct pyproc *pp, uint64_t every)
{
	struct ctasks *ct = cp->tasks;
	uint64_t t0 = clock__now_ns();
	struct async_tasks at;

	if (t0 - ct->edges_ns < every || t0 - ct->edges_ns < ct->edges_cost)
		return;
	asynctasks__sample(pp->pid, &pp->proc, &ct->l, 0.0, &c->seed, NULL,
			   NULL, &at);
	asynctasks__free(&at);
	ct->edges_ns = clock__now_ns();
	ct->edges_cost = (ct->edges_ns - t0) * EDGES_DUTY;
}

/* The task BPF read with the sample.  Before 3.14 who awaits it comes
 * from the last read of the tasks: cpu mode has one read now and then. */
static __u64 known_task(struct collector *c, struct cproc *cp,
			const struct pyproc *pp, __u64 task)
{
	if (c->o.mode == MODE_CPU && (pp->proc.flags & PY_PROC_F_ASYNC_OUTER))
		edges_read(c, cp, pp, EDGES_EVERY_NS);
	return task;
}

/*
 * Before 3.14: the task whose coroutine's frame BPF marked, or 0 (the
 * root-most coroutine of the stack is no task's, or one that ended
 * before the sample was read).  A task newer than the last read has the
 * tasks read again, at most every EDGES_MISS_NS.
 */
static __u64 outer_task(struct collector *c, struct cproc *cp,
			const struct pyproc *pp, __u64 frame)
{
	__u64 task;

	if (c->o.mode == MODE_CPU)
		edges_read(c, cp, pp, EDGES_EVERY_NS);
	task = asynctasks__running(pp->pid, &pp->proc, &cp->tasks->l, frame);
	if (!task) {
		edges_read(c, cp, pp, EDGES_MISS_NS);
		task = asynctasks__running(pp->pid, &pp->proc, &cp->tasks->l,
					   frame);
	}
	return task;
}

/*
 * The stack of a sample whose leaf depth frames of s are the running
 * task's (task; its name and task_awaited_by as BPF read them, or 0):
 * the tasks awaiting it, root first, then the task's own frames.  The
 * event loop's frames below the task are left out.  s itself when the
 * task cannot be read; NULL on ENOMEM.
 */
static const struct pstack *task_stack(struct collector *c, struct cproc *cp,
				       const struct pyproc *pp,
				       const struct pstack *s, __u64 task,
				       unsigned int depth, __u64 name,
				       __u64 by)
{
	const struct pframe *out[PYSIGHT_MAX_FRAMES + 1];
	const struct task_seen *ts = task_above(c, cp, pp, task, name, by);
	unsigned int k = 0, j, max = PYSIGHT_MAX_FRAMES + 1;

	if (!ts)
		return s;
	c->task_samples++;
	c->task_cut += ts->cut;
	for (j = 0; ts->above && j < ts->above->n && k < max; j++)
		out[k++] = ts->above->frames[j];
	if (k < max)
		out[k++] = ts->frame;
	for (j = s->n - depth; j < s->n && k < max; j++)
		out[k++] = s->frames[j];
	return profile__stack(c->prof, out, k);
}

/* The sweep's record of a thread: kept when it runs a loop.  A thread
 * the sweep does not report has not moved since its last record. */
static void loop_record(struct ctasks *ct, const struct thread_record *r)
{
	int i;

	for (i = 0; i < ct->nloops; i++)
		if (ct->loops[i].key == r->ns_tid) {
			ct->loops[i].off_since = r->on_cpu ? 0 : r->off_since;
			ct->loops[i].blocked = !r->on_cpu &&
					       r->kind != KIND_RUNQUEUE;
			return;
		}
}

/* A loop's thread, remembered from now on (up to TASKS_LOOPS). */
static void loop_add(struct ctasks *ct, __u64 key)
{
	int i;

	for (i = 0; i < ct->nloops; i++)
		if (ct->loops[i].key == key)
			return;
	if (ct->nloops < TASKS_LOOPS && key)
		ct->loops[ct->nloops++].key = key;
}

/*
 * How long, of the dt ns before now, each loop was held by one task:
 * nothing else on it could run then, whatever it awaited.  A loop is
 * held while a task runs on it and its thread is off the CPU by its own
 * call (a blocking call in the task; preempted, it is not held), since
 * the thread left the CPU.  A hold the last read saw that is over now
 * kept the loop busy until its thread went idle again (the tasks the
 * hold kept waiting ran first), or to now if it still runs.
 */
static void loops_busy(struct ctasks *ct, const struct async_tasks *at,
		       uint64_t now, uint64_t dt)
{
	uint64_t since, held;
	int i, j;

	for (j = 0; j < ct->nloops; j++) {
		since = ct->loops[j].off_since;
		held = 0;
		/* a read keeps every running task, whatever its share */
		for (i = 0; i < at->n &&
			    (at->tasks[i].state != ASYNC_RUNNING ||
			     at->tasks[i].thread_key != ct->loops[j].key); i++)
			;
		if (i < at->n && ct->loops[j].blocked && since && since < now)
			held = now - since < dt ? now - since : dt;
		ct->loops[j].busy = held;
		/* held then and now: the first hold, what it kept waiting,
		 * then the next (a loop idle in between goes unseen) */
		if (held && ct->loops[j].held)
			ct->loops[j].busy = dt;
		if (!held && ct->loops[j].held)
			ct->loops[j].busy = !since ? dt :
				since > now - dt && since < now ?
				since - (now - dt) : 0;
		ct->loops[j].held = held > 0;
	}
}

/* What loops_busy() found for the loop of thread key. */
static uint64_t loop_busy(const struct ctasks *ct, __u64 key)
{
	int j;

	for (j = 0; j < ct->nloops; j++)
		if (ct->loops[j].key == key)
			return ct->loops[j].busy;
	return 0;
}

/* The thread of a loop, by its key (its native id in the process's pid
 * namespace); NULL when unknown. */
static const struct pthread *loop_thread(struct collector *c, struct cproc *cp,
					 const struct pyproc *pp, __u64 key)
{
	struct thread_ref *t, *tmp;

	if (!key || key >= (1u << 30))
		return NULL;
	HASH_ITER(hh, cp->threads, t, tmp)
		if (t->ns_tid == (pid_t)key)
			return t->thread;
	return pp->ns_pid ? NULL :
		thread_of(c, cp, pp, (pid_t)key, (pid_t)key, pp->comm);
}

/* The known task at addr, as this read met it unchanged; NULL. */
static struct task_known *known_now(const struct ctasks *ct, __u64 addr)
{
	struct task_known *k;

	HASH_FIND(hh, ct->known, &addr, sizeof(addr), k);
	return k && k->read == ct->reads ? k : NULL;
}

/* asynctasks__sample's same(): a task met as the last read left it. */
static bool task_same(void *ctx, __u64 addr, __u64 waiter, __u64 by,
		      __u64 name_obj)
{
	struct ctasks *ct = ctx;
	struct task_known *k;

	HASH_FIND(hh, ct->known, &addr, sizeof(addr), k);
	if (!k || k->waiter != waiter || k->by != by || k->name_obj != name_obj)
		return false;
	k->read = ct->reads;
	return true;
}

/* The cause of a pending task whose stack (its frames last) is s. */
static int task_cause(const struct async_task *t, const struct pstack *s)
{
	const struct pframe *leaf = s->n ? s->frames[s->n - 1] : NULL;

	return asynctasks__cause(t, leaf && leaf->kind == PFRAME_PYTHON ?
				 leaf->name : NULL, leaf ? leaf->file : NULL);
}

/* Remember a waiting task's stack and cause for the reads to come. */
static void task_remember(struct ctasks *ct, const struct async_task *t,
			  const struct pstack *s)
{
	struct task_known *k;

	HASH_FIND(hh, ct->known, &t->addr, sizeof(t->addr), k);
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return;
		k->addr = t->addr;
		HASH_ADD(hh, ct->known, addr, sizeof(k->addr), k);
	}
	k->waiter = t->waiter;
	k->by = t->by;
	k->name_obj = t->name_obj;
	k->stack = s;
	k->kind = task_cause(t, s);
	k->read = ct->reads;
}

/*
 * The stack of at's task i, root first: the stack of the task awaiting it
 * (the first of them), then [task NAME] and its coroutines.  A task the
 * read met unchanged has the stack it had; one awaited by a task the
 * read did not keep has the rest read from the target.  depth bounds
 * the tasks awaiting tasks.  NULL on ENOMEM, or for a task met unchanged
 * whose stack was forgotten since (the next read has it).
 */
static const struct pstack *task_full_stack(struct collector *c,
					    struct cproc *cp,
					    const struct pyproc *pp,
					    const struct async_tasks *at, int i,
					    int depth)
{
	const struct async_task *t = &at->tasks[i], *chain[TASK_CHAIN_MAX];
	const struct pframe *out[PYSIGHT_MAX_FRAMES + 1];
	const struct pstack *above = NULL, *own;
	struct task_known *k = known_now(cp->tasks, t->addr);
	unsigned int n = 0, j, max = PYSIGHT_MAX_FRAMES + 1;
	bool cut = false;
	int p, got;

	if (k || t->known)
		return k ? k->stack : NULL;
	if (t->nawaiters && depth == TASK_CHAIN_MAX) {
		cut = true;
	} else if (t->nawaiters &&
		   (p = asynctasks__find(at, t->awaiters[0])) >= 0) {
		above = task_full_stack(c, cp, pp, at, p, depth + 1);
		cut = !above;
	} else if (t->nawaiters) {
		if (chain_buffer(c))
			return NULL;
		got = asynctasks__awaiters(pp->pid, &pp->proc, &cp->tasks->l,
					   t->awaiters[0], 0, 0, c->chain,
					   TASK_CHAIN_MAX, &cut);
		for (p = 0; p < got; p++)
			chain[p] = &c->chain[p];
		if (got > 0 && !(above = chain_stack(c, pp, chain, got, cut)))
			return NULL;
		cut = got <= 0;	/* else chain_stack said so */
	}
	if (cut)
		out[n++] = profile__frame(c->prof, "[partial tasks]", NULL, 0,
					  0, PFRAME_PSEUDO);
	chain[0] = t;
	own = chain_stack(c, pp, chain, 1, false);
	if (!own || (cut && !out[0]))
		return NULL;
	for (j = 0; above && j < above->n && n < max; j++)
		out[n++] = above->frames[j];
	for (j = 0; j < own->n && n < max; j++)
		out[n++] = own->frames[j];
	own = profile__stack(c->prof, out, n);
	if (own && t->state == ASYNC_WAITING)
		task_remember(cp->tasks, t, own);
	return own;
}

/* Forget the tasks no read met for TASK_KNOWN_READS reads. */
static void tasks_forget(struct ctasks *ct)
{
	struct task_known *k, *tmp;

	HASH_ITER(hh, ct->known, k, tmp)
		if (ct->reads - k->read > TASK_KNOWN_READS) {
			HASH_DEL(ct->known, k);
			free(k);
		}
}

/*
 * wall and off modes, at each sweep tick: a process's pending tasks, each
 * weighing the time since the last read (at most TASKS_MAX_GAP_NS) at its
 * await point, as a task sample (KIND_AWAIT_*): its own time, apart from
 * its thread's.  Of more than COLLECTOR_TASKS_PER_TICK tasks, a random share is
 * read, each weighing for those it stands for.
 */
static int tasks_tick(struct collector *c, struct cproc *cp,
		      const struct pyproc *pp, uint64_t now)
{
	struct ctasks *ct = cp->tasks;
	/* the first read only counts them: 10,000 tasks read in full take
	 * 0.2 s, and their number sets the share the next reads take */
	double keep = !ct->reads ? 0.0 : ct->met > COLLECTOR_TASKS_PER_TICK ?
		(double)COLLECTOR_TASKS_PER_TICK / ct->met : 1.0;
	uint64_t dt = ct->last_ns ? now - ct->last_ns : 0, held;
	const struct pthread *th;
	const struct pstack *stack;
	struct task_known *k;
	struct async_tasks at;
	int ret, i, kind;

	ct->reads++;
	ret = asynctasks__sample(pp->pid, &pp->proc, &ct->l, keep, &c->seed,
				 task_same, ct, &at);
	ct->last_ns = ct->edges_ns = now;
	c->task_ticks++;
	c->task_sampled += keep > 0 && keep < 1;
	c->task_reads += at.n;
	if (ret)
		goto out;
	ct->met = at.met;
	if (dt > TASKS_MAX_GAP_NS)
		dt = TASKS_MAX_GAP_NS;
	for (i = 0; i < at.n; i++)
		loop_add(ct, at.tasks[i].thread_key);
	loops_busy(ct, &at, now, dt);
	for (i = 0; dt && i < at.n && !ret; i++) {
		const struct async_task *t = &at.tasks[i];

		if (t->state != ASYNC_WAITING && t->state != ASYNC_READY)
			continue;
		stack = task_full_stack(c, cp, pp, &at, i, 0);
		if (!stack)
			continue;
		k = known_now(ct, t->addr);
		kind = t->state == ASYNC_READY ? KIND_AWAIT_BUSY :
			k ? k->kind : task_cause(t, stack);
		held = kind == KIND_AWAIT_BUSY ? dt :
			loop_busy(ct, t->thread_key);
		th = loop_thread(c, cp, pp, t->thread_key);
		if (held)
			ret = profile__add(c->prof, stack, th, NULL,
					   KIND_AWAIT_BUSY, 1,
					   (uint64_t)(held / keep));
		if (!ret && held < dt)
			ret = profile__add(c->prof, stack, th, NULL, kind, 1,
					   (uint64_t)((dt - held) / keep));
		c->task_adds++;
	}
	tasks_forget(ct);
out:
	asynctasks__free(&at);
	return ret;
}

/* Every Python process's tasks, once its _asyncio is found: a process
 * that never runs is never sampled, so it is looked for here too. */
static int tasks_sweep(struct collector *c)
{
	uint64_t t0 = clock__now_ns(), cpu0 = clock__thread_cpu_ns();
	bool slowed;
	pid_t pids[TASKS_PROCS];
	const struct pyproc *pp;
	struct cproc *cp;
	unsigned int n, i;
	int ret = 0;

	n = registry__pythons(c->reg, pids, TASKS_PROCS);
	for (i = 0; i < n && i < TASKS_PROCS && !ret; i++) {
		pp = registry__get(c->reg, pids[i]);
		cp = pp ? cproc_get(c, pids[i]) : NULL;
		if (!cp)
			continue;
		tasks_ready(c, cp, pp);
		if (cp->tasks && cp->tasks->found)
			ret = tasks_tick(c, cp, pp, t0);
	}
	c->task_ns += clock__now_ns() - t0;
	c->next_tasks_ns = t0 + sweep__wait(&c->tasks_budget, t0,
					    clock__thread_cpu_ns() - cpu0,
					    c->tick_ns, TASKS_DUTY,
					    0.5 + (double)rand_r(&c->seed) /
						  ((double)RAND_MAX + 1.0),
					    &slowed);
	return ret;
}

#define NATIVE_WAIT_FIRST	(1 * 1000000ULL)
#define NATIVE_WAIT_MAX		(1000 * 1000000ULL)

/*
 * --native: the process's mappings, read for BPF's walk when it is
 * found Python (or at its first sample), and again when a walk met code
 * in none of them (a library loaded since, or code of no file): at once
 * the first time, then no sooner than 1 ms after the last reading,
 * twice as long each time, up to a second (a JIT's code is in no file
 * for good).
 */
static void native_read(struct collector *c, struct cproc *cp, uint64_t now)
{
	static struct native_maps m;	/* 16 KiB: one thread polls */
	struct native_proc *np;
	int err;

	cp->native_wait = !cp->native_ns ? 0 :
			  !cp->native_wait ? NATIVE_WAIT_FIRST :
			  cp->native_wait * 2 < NATIVE_WAIT_MAX ?
				  cp->native_wait * 2 : NATIVE_WAIT_MAX;
	cp->native_ns = now;
	c->native_reads++;
	err = native_store__read_proc(c->natives, cp->pid, &np);
	if (err) {
		pr_debug("pid %d: no native frames: its mappings: %s", cp->pid,
			 strerror(-err));
		return;
	}
	native_proc__bpf_maps(np, &m);
	err = sampler__set_native(c->sampler, cp->pid, &m);
	cp->native_unset = err != 0;
	if (err) {
		/* no stale entry either: its rows may go to other binaries */
		sampler__delete_native(c->sampler, cp->pid);
		pr_debug("pid %d: no native frames: %s", cp->pid,
			 strerror(-err));
	}
	if (cp->native)
		native_store__put_proc(c->natives, cp->native);
	cp->native = np;
}

/* A walk's end, of a stack taken at ts (ktime ns): read the mappings
 * again when it met code they did not have (or BPF has none), unless
 * they were read since. */
static void native_track(struct collector *c, struct cproc *cp, __u32 stop,
			 uint64_t ts)
{
	uint64_t now;

	if (stop < NATIVE__MAX)
		c->native_stops[stop]++;
	if (cp->native_ns && (ts < cp->native_ns ||
			      (stop != NATIVE_NO_MAPPING &&
			       !(stop == NATIVE_NONE && cp->native_unset))))
		return;
	now = clock__now_ns();
	if (!cp->native_ns || now - cp->native_ns >= cp->native_wait)
		native_read(c, cp, now);
}

static int handle_sample(struct collector *c, const void *data, size_t size)
{
	const struct sample_event *ev = data;
	char comm[PYSIGHT_COMM_LEN + 1];
	const struct pcgroup *cg;
	const struct pstack *stack;
	struct provisional *prov;
	const struct pyproc *pp;
	const struct pthread *t;
	unsigned int held;
	struct cproc *cp;
	int err;

	if (size < sizeof(*ev) || ev->nframes > PYSIGHT_MAX_FRAMES ||
	    ev->nnative > PYSIGHT_NATIVE_FRAMES ||
	    (ev->has_frames &&
	     size < sizeof(*ev) + (ev->nframes + ev->nnative) *
					  sizeof(struct py_frame)))
		return 0;
	if (!ev->nframes)
		return 0;	/* an error before the first frame: counted */
	pp = registry__get(c->reg, ev->hdr.pid);
	if (!pp) {
		/* gone, or not yet ours: BPF must not think we hold its
		 * frames (nothing would forget them at the exit) */
		if (ev->has_frames)
			sampler__forget_stack(c->sampler, ev->stack_hash);
		return 0;
	}
	held = c->replaying ? 0 : deferred_of(c, ev->hdr.pid);
	if (held) {
		if (held < MAX_DEFERRED_PID && c->ndeferred < MAX_DEFERRED)
			return defer(c, data, size, ev->hdr.pid);
		replay(c, ev->hdr.pid, true);	/* full: no more waiting */
	}
	cp = cproc_get(c, ev->hdr.pid);
	if (!cp)
		return -ENOMEM;
	if (c->natives && ev->hdr.kind == EV_SAMPLE)
		native_track(c, cp, ev->native_stop, ev->hdr.ts);
	if (ev->has_frames) {
		err = add_stack(c, cp, pp, ev, (const struct py_frame *)(ev + 1));
		if (err == -EAGAIN)
			return defer(c, data, size, ev->hdr.pid);
		if (err)
			return err;
	}
	if (ev->hdr.kind == EV_STACK)
		return 0;	/* frames alone: an interval's, weighed later */
	/* a named stack of this hash, else its provisional one */
	stack = find_named(cp, ev->stack_hash);
	if (!stack && (prov = find_provisional(cp, ev->stack_hash)))
		stack = prov->stack;
	if (!stack) {
		c->unknown_stacks++;
		return 0;
	}
	if (c->o.asyncio && tasks_ready(c, cp, pp) && ev->task &&
	    ev->task_depth && ev->task_depth <= stack->n &&
	    ev->task_depth <= ev->nframes) {
		__u64 task = ev->task_flags & SAMPLE_TASK_OBJ ?
			known_task(c, cp, pp, ev->task) :
			outer_task(c, cp, pp, ev->task);

		if (task && !(stack = task_stack(c, cp, pp, stack, task,
						 ev->task_depth, ev->task_name,
						 ev->task_by)))
			return -ENOMEM;
	}
	if (ev->kstack >= 0 && !(stack = with_kernel(c, stack, ev->kstack)))
		return -ENOMEM;
	memcpy(comm, ev->comm, PYSIGHT_COMM_LEN);
	comm[PYSIGHT_COMM_LEN] = 0;
	t = thread_of(c, cp, pp, ev->hdr.tid, 0, comm);
	cg = cgroup_of(c, ev->cgroup_id, ev->hdr.pid);
	if (!t || !cg)
		return -ENOMEM;
	return profile__add(c->prof, stack, t, cg,
			    ev->kind < KIND__MAX ? ev->kind : KIND_OTHER, 1,
			    weight_of(c, ev->weight));
}

/* Samples count one each in cpu mode; time otherwise, as BPF measured
 * it (0 for a sample whose thread's CPU clock had not moved). */
static uint64_t weight_of(const struct collector *c, uint64_t ns)
{
	return profile__unit(c->prof) == UNIT_SAMPLES ? 1 : ns;
}

/* A code object freed just after a walk met it, named from its bytes. */
static void add_code(struct collector *c, const struct code_event *ev)
{
	const struct pyproc *pp = registry__get(c->reg, ev->hdr.pid);

	if (pp && !symcache__add_snapshot(c->syms, ev->hdr.pid, &pp->proc, ev))
		c->codes_named++;
}

/*
 * --native: a process BPF adopted as Python has its mappings read now,
 * not at its first sample: a short one's first samples then have them
 * too.  Not at an exec: registry__get() would adopt what BPF's map still
 * says of the image before it (the exec storm test: 40 entries kept).
 */
static void native_early(struct collector *c, pid_t pid)
{
	const struct pyproc *pp;
	struct cproc *cp;

	if (!c->natives)
		return;
	pp = registry__get(c->reg, pid);
	if (!pp || pp->state != PY_PROC_PYTHON)
		return;
	cp = cproc_get(c, pid);
	if (cp && !cp->native_ns)
		native_read(c, cp, clock__now_ns());
}

int collector__handle(struct collector *c, const void *data, size_t size)
{
	const struct event_header *h = data;

	if (size < sizeof(*h))
		return 0;
	/* what a process's held samples wait for ends with it */
	if (h->kind != EV_SAMPLE && h->kind != EV_STACK && h->kind != EV_CODE)
		replay(c, h->pid, true);
	switch (h->kind) {
	case EV_SAMPLE:
	case EV_STACK:
		return handle_sample(c, data, size);
	case EV_CODE:
		if (size >= sizeof(struct code_event))
			add_code(c, data);
		break;
	case EV_NEW_PID:
	case EV_EXEC:
		forget_process(c, h->pid);
		registry__discover(c->reg, h->pid);
		break;
	case EV_ADOPTED:
		if (size < sizeof(struct adopt_event))
			return 0;
		forget_process(c, h->pid);
		registry__adopt(c->reg, h->pid,
				&((const struct adopt_event *)data)->proc);
		native_early(c, h->pid);
		break;
	case EV_EXIT:
		/* its threads' last records, sent before this */
		if (c->sweep)
			sampler__sweep_drain(c->sampler);
		forget_process(c, h->pid);
		registry__exit(c->reg, h->pid);
		break;
	}
	return 0;
}

static unsigned long rss_kib(void)
{
	char line[128];
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

void collector__stats(struct collector *c, struct collector_stats *st)
{
	struct cproc *cp, *cpt;
	double unsampled;
	int i;

	memset(st, 0, sizeof(*st));
	sampler__counters(c->sampler, st->counters);
	st->unknown_stacks = c->unknown_stacks;
	st->unknown_frames = c->unknown_frames;
	st->stale_symbols = symcache__stale(c->syms);
	st->codes_named = c->codes_named;
	memcpy(st->native_stops, c->native_stops, sizeof(st->native_stops));
	st->native_reads = c->native_reads;
	if (c->natives) {
		st->native_binaries = native_store__binaries(c->natives);
		st->native_bytes = native_store__bytes(c->natives);
		st->native_unplaced = native_store__unplaced(c->natives);
		st->native_unmapped = native_store__unmapped(c->natives);
		st->native_loaded = native_store__loaded(c->natives);
	}
	st->forgotten_stacks = c->forgotten_stacks;
	st->name_reads = c->name_reads;
	st->sweeps = c->sweeps;
	st->sweep_ns = c->sweep_ns;
	st->sweep_read_ns = c->sweep_read_ns;
	st->sweep_records = c->sweep_records;
	st->sweep_reads = c->sweep_reads;
	st->sweep_reads_again = c->sweep_reads_again;
	st->sweep_reads_stale = c->sweep_reads_stale;
	st->sweep_slowed = c->sweep_slowed;
	st->sweep_capped = sampler__sweep_capped(c->sampler);
	st->sweep_max_ns = c->sweep_max_ns;
	st->task_samples = c->task_samples;
	st->task_cut = c->task_cut;
	st->task_ticks = c->task_ticks;
	st->task_ns = c->task_ns;
	st->task_sampled = c->task_sampled;
	st->task_reads = c->task_reads;
	st->task_adds = c->task_adds;
	st->npython = registry__npython(c->reg);
	st->first_error = registry__first_error(c->reg);
	for (i = ST_ERR_READ_RUNTIME; i < ST__MAX; i++)
		st->errors += st->counters[CNT_STATUS_BASE + i];
	st->lost = st->counters[CNT_RB_DROPS] + st->unknown_stacks;
	sampler__map_sizes(c->sampler, &st->maps);
	st->registry = registry__size(c->reg);
	st->procs = HASH_COUNT(c->procs);
	HASH_ITER(hh, c->procs, cp, cpt)
		st->stacks_seen_held += cp->refs.n;
	st->symbols = symcache__size(c->syms);
	st->stacks = profile__nstacks(c->prof);
	st->interned = profile__ninterned(c->prof);
	sampler__slowed(c->sampler, &st->least_keep, &st->slow_s, &unsampled);
	st->rss_kib = rss_kib();
}

double collector__unsampled_s(struct collector *c)
{
	double least, slow, unsampled;

	sampler__slowed(c->sampler, &least, &slow, &unsampled);
	return unsampled;
}

const char *collector__status_name(int st)
{
	static const char *const names[ST__MAX] = {
		[ST_COMPLETE] = "complete",
		[ST_TRUNCATED] = "truncated",
		[ST_NO_TSTATE] = "not a Python thread",
		[ST_IDLE] = "no Python frames",
		[ST_ERR_READ_RUNTIME] = "interpreter state unreadable",
		[ST_ERR_READ_FRAME] = "frame read fault",
		[ST_ERR_READ_CODE] = "code object read fault",
		[ST_ERR_BAD_CODE] = "bad code object",
		[ST_ERR_FRAME_LOOP] = "frame chain loops",
		[ST_ERR_THREAD_LOOP] = "thread list loops",
	};

	return st >= 0 && st < ST__MAX && names[st] ? names[st] : "?";
}

/* What the task iterator reports of a thread, as the samples have it:
 * its thread (named as samples name it), the key its thread state is
 * found by, and its cause. */
static const struct pthread *record_thread(struct collector *c,
					   struct cproc *cp,
					   const struct pyproc *pp,
					   const struct thread_record *r)
{
	char comm[PYSIGHT_COMM_LEN + 1];

	memcpy(comm, r->comm, PYSIGHT_COMM_LEN);
	comm[PYSIGHT_COMM_LEN] = 0;
	return thread_of(c, cp, pp, r->tid, r->ns_tid, comm);
}

static __u64 record_key(const struct pyproc *pp, const struct thread_record *r)
{
	return pp->proc.off.match == PY_MATCH_PTHREAD ? r->fsbase : r->ns_tid;
}

static int record_kind(int kind)
{
	return kind < KIND__MAX ? kind : KIND_OTHER;
}

/* Did a read from user space find a Python stack (not a C thread, an
 * idle one, or none)? */
static bool read_has_stack(const struct stackread *sr)
{
	return sr->status != ST_NO_TSTATE && sr->status != ST_IDLE && sr->n;
}

/*
 * The sampled sweep (--offcpu=sweep).  At each tick the task iterator
 * reports every thread of the wanted Python processes with the
 * scheduler's counts, and sweep.c turns them into run-queue and blocked
 * time.  An off-CPU thread's stack is read from user space, only when it
 * has switched since its last read.  No program runs on sched_switch or
 * sys_exit: a switch or a syscall of any task costs nothing added.
 */
struct sweep_ctx {
	struct collector *c;
	const struct thread_record *r;
	const struct pyproc *pp;
	struct cproc *cp;
	const struct pthread *thread;
	const struct pcgroup *cgroup;
};

static int sweep_add(void *ctx, const void *stack, int kind, uint64_t ns)
{
	struct sweep_ctx *x = ctx;

	if (!x->thread) {
		x->thread = record_thread(x->c, x->cp, x->pp, x->r);
		x->cgroup = cgroup_of(x->c, x->r->cgroup_id, x->r->tgid);
		if (!x->thread || !x->cgroup)
			return -ENOMEM;
	}
	return profile__add(x->c->prof, stack, x->thread, x->cgroup,
			    record_kind(kind), 1, ns);
}

static int note_tstate(void *ctx, __u64 key, __u64 tstate)
{
	return htab64__set(ctx, key, (void *)(uintptr_t)tstate) ? -1 : 0;
}

/*
 * Where a thread's first read starts: its thread state, found by one
 * walk of the process's thread list a tick (the first tick reads every
 * thread's stack), or 0.
 */
static __u64 first_tstate(struct collector *c, struct cproc *cp,
			  const struct pyproc *pp, __u64 key)
{
	if (cp->tstates_tick != c->sweeps + 1) {
		htab64__free(&cp->tstates);
		cp->tstates_tick = c->sweeps + 1;
		stackread__tstates(pp->pid, &pp->proc, note_tstate,
				   &cp->tstates);
	}
	return (uintptr_t)htab64__get(&cp->tstates, key);
}

/* The Python stack of an off-CPU thread, read from user space; NULL
 * when it has none (a C thread, or no frames). */
/*
 * --asyncio: of a stack read from user space, how many frames (leaf
 * first) are its running task's, as BPF marks a sample's: up to the
 * task's coroutine's frame, matched by address; 0 when no task runs or
 * its frame is not in the stack.
 */
static unsigned int read_task_depth(struct collector *c, struct cproc *cp,
				    const struct pyproc *pp,
				    const struct stackread *sr, __u64 *task)
{
	const struct py_offsets *off = &pp->proc.off;
	struct remote_mem mem = { .pid = pp->pid };
	struct async_coro cur[PY_CURRENT_MAX];
	bool outer = (pp->proc.flags & PY_PROC_F_ASYNC_OUTER) && cp->tasks;
	uint64_t t, coro;
	int i, k, n = 0;

	/* the tasks running now, as BPF takes them: the thread state's
	 * (3.14+), or those _current_tasks names (before) */
	if (outer) {
		n = asynctasks__current(pp->pid, &pp->proc, &cp->tasks->l,
					cur, PY_CURRENT_MAX);
	} else if ((pp->proc.flags & PY_PROC_F_ASYNC) && sr->tstate &&
		   !remote__mem_read64(&mem, sr->tstate +
					     off->tstate_running_task, &t) &&
		   t && !remote__mem_read64(&mem, t + off->task_coro, &coro) &&
		   coro) {
		cur[0] = (struct async_coro){ coro, t };
		n = 1;
	}
	/* the leaf-most frame that is one of theirs */
	for (i = 0; i < sr->n; i++)
		for (k = 0; k < n; k++)
			if (sr->addr[i] == cur[k].coro + off->gen_iframe) {
				*task = cur[k].task;
				return (unsigned int)i + 1;
			}
	if (!outer)
		return 0;
	/* before 3.14, else the root-most coroutine frame of a task known */
	for (i = (int)sr->n - 1; i >= 0; i--)
		if (asynctasks__known_frame(&cp->tasks->l, sr->addr[i]))
			break;
	*task = i < 0 ? 0 : outer_task(c, cp, pp, sr->addr[i]);
	return *task ? (unsigned int)i + 1 : 0;
}

/*
 * Has r's thread, off the CPU when r was taken, run since?  Its stack is
 * read well after the pass that saw it blocked (the records before it,
 * their reads): woken in between, it is read in the code it went on to
 * run, which would stand for the block (the agent's burner asleep under
 * the light() it burns in, 1 run in 12 with both CPUs busy).  Read after
 * the stack, an unchanged switch-in count says it did not run while it
 * was read.  Unknown (no schedstats, or gone) counts as not.
 */
static bool ran_since(const struct thread_record *r)
{
	uint64_t now;

	return !r->on_cpu && r->arrivals &&
	       !schedstat__arrivals(r->tgid, r->tid, &now) &&
	       now != r->arrivals;
}

/* --native: an off-CPU thread's native stack, walked here from the
 * registers the sweep's pass read (the Python stack was read after it,
 * and the thread has not run since).  How many frames. */
static int sweep_native(struct collector *c, struct cproc *cp,
			const struct thread_record *r, struct py_frame *out)
{
	struct pysight_unwind u = { r->user_ip, r->user_sp, r->user_bp };
	__u32 stop = NATIVE_NONE;
	int n = 0;

	if (!c->natives || !r->user_sp)
		return 0;
	if (!cp->native_ns)
		native_read(c, cp, clock__now_ns());
	if (cp->native)
		n = native_proc__unwind(cp->native, &u, out,
					PYSIGHT_NATIVE_FRAMES, &stop);
	native_track(c, cp, stop, r->now);
	return n;
}

static const struct pstack *sweep_stack(struct collector *c,
					struct cproc *cp,
					const struct pyproc *pp,
					const struct thread_record *r,
					struct sweep_thread *t)
{
	struct stackread_plan **plan = (struct stackread_plan **)sweep__data(t);
	struct py_frame natives[PYSIGHT_NATIVE_FRAMES];
	uint64_t t0 = clock__now_ns();
	int nn;
	__u64 key = record_key(pp, r), task;
	const struct pstack *stack;
	unsigned int depth;
	bool stale;

	c->sweep_reads++;
	stackread__thread_planned(r->tgid, &pp->proc, key,
				  *plan ? 0 : first_tstate(c, cp, pp, key),
				  plan, c->sweep_sr);
	c->sweep_reads_again += c->sweep_sr->again;
	stale = ran_since(r);
	c->sweep_reads_stale += stale;
	c->sweep_read_ns += clock__now_ns() - t0;
	if (stale || !read_has_stack(c->sweep_sr))
		return NULL;
	nn = sweep_native(c, cp, r, natives);
	stack = name_frames(c, cp, pp, c->sweep_sr->status,
			    c->sweep_sr->frames, c->sweep_sr->n, natives, nn);
	depth = stack && c->o.asyncio ?
		read_task_depth(c, cp, pp, c->sweep_sr, &task) : 0;
	return depth ? task_stack(c, cp, pp, stack, task, depth, 0, 0) : stack;
}

static int sweep_one(void *ctx, const struct thread_record *r)
{
	struct sweep_ctx x = { .c = ctx, .r = r };
	struct collector *c = ctx;
	struct sweep_thread *t;

	c->sweep_records++;
	x.pp = registry__get(c->reg, r->tgid);
	x.cp = x.pp ? cproc_get(c, r->tgid) : NULL;
	if (!x.cp)
		return 0;
	if (x.cp->tasks)
		loop_record(x.cp->tasks, r);
	t = sweep__thread(c->sweep, r);
	if (!t)
		return -ENOMEM;
	/* the first tick only takes every thread's counts: reading 2,000
	 * stacks there delayed the recording's start by 0.1-0.2 s, counted
	 * in every thread's total.  A stack is read at the thread's next
	 * record: when it moves, or at the next tick over all threads. */
	if (!c->sweeps && !r->exiting)
		return 0;
	if (sweep__needs_stack(c->sweep, t, r)) {
		const struct pstack *stack;

		stack = sweep_stack(c, x.cp, x.pp, r, t);
		if (stack && r->kstack >= 0)
			stack = with_kernel(c, stack, r->kstack);
		sweep__set_stack(t, r, stack);
	}
	if (r->exiting || c->sweep_last)
		return sweep__final(c->sweep, t, r, sweep_add, &x);
	return sweep__account(t, r, sweep_add, &x);
}

/*
 * Every thread is reported at least this often: the counts of threads
 * that did not move are read, and threads not met are gone.  Ticks
 * between report only the threads that switched or changed state.  A
 * tick over every thread of a large process is dear (5,000 threads:
 * about 10 ms), so such ticks wait at least twice the duty (below) times
 * their CPU time: they take at most half what the others may.
 */
#define SWEEP_ALL_NS	1000000000ULL
/*
 * The sweep takes at most a hundredth of a CPU: the ticks' CPU time is
 * paid from a budget of 1/SWEEP_DUTY of the time that passes
 * (sweep__wait), and a tick waits, whatever the rate, until the budget
 * is paid back.  A process of thousands of threads, or of threads that
 * wake so often that their stacks are read at most ticks, is swept less
 * often, and the summary says so.  collector_opts.sweep_duty sets
 * another share.  150: ticks that report moves at most 0.67% of a CPU,
 * ticks over every thread 0.33%, so 1% in all (at 100, 1.5% was
 * allowed, and 100 threads each sleeping 50 ms in a loop took 1.00%).
 */
#define SWEEP_DUTY	150

/* when the next tick is due; ticks that read every thread wait twice
 * the duty times their own cost, apart, and are not charged to the
 * others' budget */
static void sweep_schedule(struct collector *c, uint64_t start, uint64_t cpu,
			   bool all)
{
	double u = 0.5 + (double)rand_r(&c->seed) / ((double)RAND_MAX + 1.0);
	uint64_t duty = c->o.sweep_duty ? c->o.sweep_duty : SWEEP_DUTY;
	bool slowed;

	if (all) {
		/* the first reads every stack: no measure of the others */
		if (c->sweeps == 1)
			cpu = 0;
		c->next_all_ns = start + (cpu * 2 * duty > SWEEP_ALL_NS ?
					  cpu * 2 * duty : SWEEP_ALL_NS);
		cpu = 0;
	}
	c->next_tick_ns = start + sweep__wait(&c->sweep_budget, start, cpu,
					      c->tick_ns, (unsigned int)duty,
					      u, &slowed);
	c->sweep_slowed += slowed;
}

static int sweep_tick(struct collector *c, bool all)
{
	uint64_t t0 = clock__now_ns(), cpu0 = clock__thread_cpu_ns(), took;
	uint64_t capped = sampler__sweep_capped(c->sampler);
	pid_t pids[SAMPLER_SWEEP_PIDS];
	unsigned int n;
	int ret;

	all = all || t0 >= c->next_all_ns;
	n = registry__pythons(c->reg, pids, SAMPLER_SWEEP_PIDS);
	if (all)
		sweep__begin(c->sweep);
	ret = sampler__sweep(c->sampler, n <= SAMPLER_SWEEP_PIDS ? pids : NULL,
			     (int)n, all, sweep_one, c);
	/* threads the ring had no room for were not met, but are there */
	if (all && sampler__sweep_capped(c->sampler) == capped)
		sweep__end(c->sweep);
	took = clock__now_ns() - t0;
	c->sweeps++;
	c->sweep_ns += took;
	if (took > c->sweep_max_ns)
		c->sweep_max_ns = took;
	sweep_schedule(c, t0, clock__thread_cpu_ns() - cpu0, all);
	if (ret >= 0 && c->o.asyncio && t0 >= c->next_tasks_ns)
		ret = tasks_sweep(c);
	return ret < 0 ? ret : 0;
}

/* Poll the ring, and sweep at each tick due within max_ms. */
static int sweep_poll(struct collector *c, int max_ms)
{
	uint64_t now = clock__now_ns(), end = now + max_ms * 1000000ULL;
	int n, ret = 0;

	for (;;) {
		if (now >= c->next_tick_ns) {
			n = sweep_tick(c, false);
			if (n < 0)
				return n;
		}
		if (now >= end)
			return ret;
		n = (int)(((c->next_tick_ns < end ? c->next_tick_ns : end) -
			   now + 999999) / 1000000);
		n = poll_once(c, n);
		if (n < 0)
			return n;
		ret += n;
		now = clock__now_ns();
	}
}

static void free_plan(void *plan)
{
	stackread_plan__free(plan);
}

/*
 * The sweep's first tick: every thread's counts now, so the next tick
 * accounts from here.  At most 1000 ticks a second: a tick of a few
 * hundred threads costs tens of microseconds (DESIGN.md, "Off-CPU
 * time"), and -r 10000 is for on-CPU detail.
 */
static int sweep_start(struct collector *c)
{
	unsigned int hz = c->o.rate_hz < 1000 ? c->o.rate_hz : 1000;

	c->sweep = sweep__new(clock__now_ns(), free_plan);
	c->sweep_sr = calloc(1, sizeof(*c->sweep_sr));
	if (!c->sweep || !c->sweep_sr)
		return -ENOMEM;
	c->sweep_sr->marks = c->natives != NULL;
	sweep__set_reread(c->sweep, c->o.sweep_reread_ns);
	c->tick_ns = 1000000000ULL / (hz ? hz : 1);
	c->seed = (unsigned int)clock__now_ns();
	return sweep_tick(c, true);
}

int collector__start(struct collector *c, char *err, size_t errlen)
{
	int ret = sampler__start(c->sampler, err, errlen);

	if (ret || c->o.mode == MODE_CPU)
		return ret;
	/* threads off the CPU for the whole recording never switch: find
	 * every Python process now, and either take every thread's counts
	 * (the sweep's first tick) or open the intervals of those off
	 * already (the hooks are attached, so none is missed) */
	if (!c->o.filter_pids)
		registry__scan(c->reg);
	ret = c->o.sweep ? sweep_start(c) :
			   sampler__threads(c->sampler, ITER_OPEN, 0, NULL, NULL);
	if (ret < 0)
		snprintf(err, errlen, "failed to read thread states: %s",
			 strerror(-ret));
	return ret < 0 ? ret : 0;
}

struct closing {
	struct collector *c;
	uint64_t now;
	struct stackread *sr;
};

/* A thread still off the CPU at the end: its stack from user space. */
static int close_interval(void *ctx, const struct thread_record *r)
{
	struct closing *cl = ctx;
	struct collector *c = cl->c;
	const struct pcgroup *cg;
	const struct pstack *stack;
	const struct pyproc *pp;
	const struct pthread *t;
	struct cproc *cp;

	if (!r->off_since || r->off_since > cl->now)
		return 0;
	pp = registry__get(c->reg, r->tgid);
	cp = pp ? cproc_get(c, r->tgid) : NULL;
	if (!cp)
		return 0;
	stackread__thread(r->tgid, &pp->proc, record_key(pp, r), cl->sr);
	if (!read_has_stack(cl->sr))
		return 0;
	stack = name_frames(c, NULL, pp, cl->sr->status, cl->sr->frames,
			    cl->sr->n, NULL, 0);
	t = record_thread(c, cp, pp, r);
	cg = cgroup_of(c, r->cgroup_id, r->tgid);
	if (!stack || !t || !cg)
		return -ENOMEM;
	c->closed_intervals++;
	return profile__add(c->prof, stack, t, cg, record_kind(r->kind), 1,
			    cl->now - r->off_since);
}

int collector__finish(struct collector *c)
{
	struct closing cl = { .c = c };
	int ret;

	collector__flush(c);
	if (c->o.mode == MODE_CPU || !c->sampler)
		return 0;
	if (c->sweep) {		/* the last tick: up to now */
		c->sweep_last = true;
		c->next_tasks_ns = 0;	/* the tasks' too, whatever the budget */
		return sweep_tick(c, true);
	}
	cl.sr = calloc(1, sizeof(*cl.sr));
	if (!cl.sr)
		return -ENOMEM;
	cl.now = sampler__ktime_now();
	ret = sampler__threads(c->sampler, ITER_REPORT, 0, close_interval, &cl);
	free(cl.sr);
	return ret < 0 ? ret : 0;
}

void collector__scan(struct collector *c)
{
	registry__scan(c->reg);
}

struct snapshot {
	struct collector *c;
	collector_thread_fn fn;
	void *ctx;
	struct stackread *sr, *scratch;
	pid_t gil_pid;			/* whose holder gil is */
	__u64 gil;
};

/* Reads of a stack that keep disagreeing make it torn. */
#define SNAPSHOT_TRIES 4

static int snapshot_thread(void *ctx, const struct thread_record *r)
{
	struct py_frame natives[PYSIGHT_NATIVE_FRAMES];
	struct snapshot *sn = ctx;
	struct thread_snapshot t = {};
	const struct pthread *th;
	const struct pyproc *pp;
	struct cproc *cp;
	int nn;

	pp = registry__get(sn->c->reg, r->tgid);
	if (!pp)
		return 0;
	/* named as samples are */
	cp = cproc_get(sn->c, r->tgid);
	th = cp ? record_thread(sn->c, cp, pp, r) : NULL;
	if (!th)
		return -ENOMEM;
	if (sn->gil_pid != (pid_t)r->tgid) {
		sn->gil_pid = r->tgid;
		if (stackread__gil_holder(r->tgid, &pp->proc, &sn->gil))
			sn->gil = 0;
	}
	t.torn = stackread__stable(r->tgid, &pp->proc, record_key(pp, r),
				   sn->sr, sn->scratch,
				   SNAPSHOT_TRIES) == -EAGAIN;
	t.pid = r->tgid;
	t.tid = r->tid;
	snprintf(t.name, sizeof(t.name), "%s", th->name);
	t.on_cpu = r->on_cpu;
	t.kind = r->on_cpu ? KIND_CPU : record_kind(r->kind);
	t.holds_gil = sn->gil && sn->sr->tstate == sn->gil;
	t.status = sn->sr->status;
	t.raw = sn->sr;
	t.proc = pp;
	/* a thread off the CPU: its native stack from where it entered
	 * the kernel, unless it ran since (then Python's alone) */
	nn = sweep_native(sn->c, cp, r, natives);
	if (nn && ran_since(r))
		nn = 0;
	if (sn->sr->n) {
		t.stack = name_frames(sn->c, cp, pp, sn->sr->status,
				      sn->sr->frames, sn->sr->n, natives, nn);
		if (!t.stack)
			return -ENOMEM;
	}
	return sn->fn(sn->ctx, &t);
}

int collector__snapshot(struct collector *c, pid_t pid,
			collector_thread_fn fn, void *ctx)
{
	struct snapshot sn = { .c = c, .fn = fn, .ctx = ctx, .gil_pid = -1 };
	int ret;

	sn.sr = calloc(1, sizeof(*sn.sr));
	sn.scratch = calloc(1, sizeof(*sn.scratch));
	if (sn.sr && sn.scratch)
		sn.sr->marks = sn.scratch->marks = c->natives != NULL;
	ret = sn.sr && sn.scratch ?
		      sampler__threads(c->sampler, ITER_LIST, pid,
				       snapshot_thread, &sn) : -ENOMEM;
	free(sn.sr);
	free(sn.scratch);
	return ret;
}
