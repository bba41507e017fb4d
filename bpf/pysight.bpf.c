// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysight's kernel side: on a perf event (and later at sched_switch) find
 * the current thread's PyThreadState, walk its Python frames into a stack
 * of (code object, instruction offset, identity checksum), dedup the stack
 * by hash and tell user space through a ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "core_fixes.bpf.h"
#include "pysight.h"

#define PF_EXITING	0x00000004	/* include/linux/sched.h */

const volatile bool filter_pids = false;	/* sample only pids in targets */
const volatile __u32 self_pid = 0;
const volatile __u8 mode = PYSIGHT_MODE_CPU;	/* --mode */
const volatile bool gil_only = false;		/* --gil */
const volatile bool kernel_stacks = false;	/* --kernel-stacks */
const volatile __u64 walk_below_ns = 1000000;	/* see switch_in() */
const volatile __u64 period_ns = 10000000;	/* the mean sampling period */

const volatile __u32 ncgroups = 0;		/* --cgroup/--container */

/* set by user space before each run of the task iterator */
__u32 iter_mode = 0;
__u32 iter_tgid = 0;				/* 0: every Python process */

/* tgid -> interpreter facts; PENDING/IGNORED entries stop repeat work. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct py_proc);
} procs SEC(".maps");

/* Interpreter binaries already inspected whose facts are position
 * independent (non-PIE, static libpython): a new process of one is
 * sampled from its first tick (the idea is Meta pystacks'). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct py_binary_key);
	__type(value, struct py_proc);
} binaries SEC(".maps");

/* Executables user space found are not Python: an exec of one costs no
 * event, so an exec storm of /bin/true costs one inspection, not one
 * each. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct py_binary_key);
	__type(value, __u8);
} not_python SEC(".maps");

/* --cgroup: keep tasks in these cgroups (v2) or below them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PYSIGHT_MAX_CGROUPS);
	__type(key, __u32);
	__type(value, struct cgroup_filter);
} cgroup_filter SEC(".maps");

/* -p and "-- command": the processes to sample, children added on fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/*
 * tid -> PyThreadState *, validated on every use: the id must still be
 * this thread's, and the thread state still linked in its list (a freed
 * one keeps its id, but is unlinked).  A thread the walk did not find (a
 * C thread, or one not yet bound to its thread state) is remembered for
 * up to 50 ms, or until the list's head changes (new thread states go
 * in at the head), so it does not cost a walk per sample.
 */
struct tstate_entry {
	__u64 tstate;		/* 0: not found at ts */
	__u64 ts;
	__u64 interp;		/* where it was found, or the first walked */
	__u64 head;		/* interp's list head at a failed walk */
	__u64 head_id;		/* and the thread id that head had then */
	__u32 status;		/* what a failed walk said */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct tstate_entry);
} tstates SEC(".maps");

/* Stack hashes user space has been sent the frames of. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} stacks_seen SEC(".maps");

/* One slot of the direct-mapped code-object cache.  tag seals the slot:
 * slots are written without locks, and a torn one fails its tag.  The
 * tag covers the process's start time, so a reused pid never meets the
 * slots of the process it replaced. */
#define CODE_SLOTS	65536	/* power of 2 */

struct code_slot {
	__u64 code;
	__u32 tgid;
	__u32 check;
	__u64 tag;
	__u64 seen_ns;		/* when a walk put it here */
};

/* A cached code object freed sooner than this after a walk met it may
 * not have been named yet: its dealloc sends its bytes (EV_CODE). */
#define CODE_RECENT_NS	(1000 * 1000000ULL)

/*
 * (tgid, code object) -> identity check, for processes whose code
 * deallocations a uprobe reports (PY_PROC_F_CODE_CACHE).  Direct-mapped
 * in a plain array: a lookup is an inlined index, where a hash map
 * costs ~40 ns a frame.  A collision just evicts.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CODE_SLOTS);
	__type(key, __u32);
	__type(value, struct code_slot);
} code_checks SEC(".maps");

/*
 * Scalars the frame loop needs, copied out of the map value once.  They
 * live in the per-CPU scratch: bpf_loop's callback's stack counts on top
 * of its caller's, and the two must stay within 512 bytes.
 */
struct frame_ctx {
	__u64 frame;
	__u64 epoch;		/* the process's start time */
	__u64 bulk_lo, bulk_hi;	/* target range copied into the bulk map */
	__u64 hash;
	__u64 code_type;
	__u64 tag_mask;
	struct pysight_loop loop;	/* a frame passed earlier */
	__u32 n;
	__u32 status;
	__u32 cache_hits;
	__u16 f_prev, f_code, f_instr, f_owner, f_len;
	__u16 c_first, c_file, c_name, c_qual, c_adaptive, c_lt;
	__u16 u_hash, o_type, b_size, b_data;
	__u8 instr_kind, owner_cstack, skip_foreign, code_cache;
	__u32 tgid;
};

/* nesting levels with a buffer of their own: a program, a perf sample
 * interrupting it, and one to spare (see scratch_get()) */
#define SCRATCH_SLOTS	3

/* ev and frames go out together: keep them first, and in this order */
struct sample_buf {
	struct sample_event ev;
	struct py_frame frames[PYSIGHT_MAX_FRAMES];
	__u64 tstate;		/* the thread state the stack was read from */
	__u8 fwin[PYSIGHT_FRAME_WINDOW];
	__u8 cwin[PYSIGHT_CODE_WINDOW];
	__u8 twin[PYSIGHT_TSTATE_WINDOW];
	struct code_ident ident;	/* code_check's */
	struct frame_ctx fc;		/* collect_stack's, for walk_frame */
	__u32 slot;			/* this buffer's index in scratch */
};

/* A copy of the data stack below the leaf frame (own map: per-CPU values
 * are limited to 32 KiB). */
struct bulk_buf {
	__u8 data[PYSIGHT_BULK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct bulk_buf);
} bulk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct sample_buf);
} scratch SEC(".maps");

/* how many of this CPU's scratch slots are in use */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} scratch_depth SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

#define mix64 pysight_mix64

static __always_inline __u32 code_slot_of(__u32 tgid, __u64 code)
{
	return (__u32)mix64(code ^ ((__u64)tgid << 40)) &
	       (CODE_SLOTS - 1);
}

static __always_inline __u64 slot_tag(__u32 tgid, __u64 epoch, __u64 code,
				      __u32 check)
{
	return mix64(code ^ ((__u64)tgid << 32 | check) ^ mix64(epoch)) | 1;
}

#define WIN_U64(win, size, off) \
	((off) <= (size) - 8 ? *(__u64 *)((win) + (off)) : 0)
#define WIN_U32(win, size, off) \
	((off) <= (size) - 4 ? *(__u32 *)((win) + (off)) : 0)

static __always_inline int read_u64(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

/* The task's tid as its own pid namespace sees it: native_thread_id holds
 * that, not the host tid, for a process in a container. */
static __always_inline __u32 ns_tid(struct task_struct *task)
{
	struct pid *pid = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid up = {};

	bpf_core_read(&up, sizeof(up), &pid->numbers[level]);
	return up.nr;
}

static __always_inline __u64 thread_key(struct task_struct *task,
					const struct py_offsets *off)
{
	if (off->match == PY_MATCH_PTHREAD) {
		/* glibc and musl: pthread_t is the thread pointer, the fs base */
		return BPF_CORE_READ(task, thread.fsbase);
	}
	return ns_tid(task);
}

struct walk_ctx {
	__u64 tstate;
	__u64 want;
	struct pysight_loop loop;	/* a thread state passed earlier */
	__u16 id_off;
	__u16 next_off;
	__u8 found;
	__u8 looped;
};

static long walk_thread(__u32 i, void *data)
{
	struct walk_ctx *w = data;
	__u64 id = 0;

	if (!w->tstate)
		return 1;
	if (read_u64(w->tstate + w->id_off, &id))
		return 1;
	if (id == w->want) {
		w->found = 1;
		return 1;
	}
	if (read_u64(w->tstate + w->next_off, &w->tstate))
		w->tstate = 0;
	if (pysight_loop_seen(&w->loop, w->tstate)) {
		w->looped = 1;
		w->tstate = 0;
	}
	return 0;
}

/*
 * Is the cached thread state still this thread's?  Its id, and its place
 * in the list: its prev's next, or for the head the interpreter's head,
 * is itself.  One window read for id and prev, one read for the link.
 */
static __always_inline bool tstate_valid(struct sample_buf *b,
					 const struct py_offsets *off,
					 const struct tstate_entry *e,
					 __u64 want, __u16 id_off)
{
	__u64 prev, link = 0;
	__u32 size = id_off + 8;

	if (size > PYSIGHT_TSTATE_WINDOW ||
	    off->tstate_prev > PYSIGHT_TSTATE_WINDOW - 8)
		return false;
	if (bpf_probe_read_user(b->twin, size, (void *)e->tstate))
		return false;
	if (WIN_U64(b->twin, PYSIGHT_TSTATE_WINDOW, id_off) != want)
		return false;
	prev = WIN_U64(b->twin, PYSIGHT_TSTATE_WINDOW, off->tstate_prev);
	if (prev)
		read_u64(prev + off->tstate_next, &link);
	else
		read_u64(e->interp + off->interp_threads_head, &link);
	return link == e->tstate;
}

/* Past its exit tracepoint, which drops its entries, a thread is still
 * sampled while it tears down: an entry written then outlives it (32 of
 * 10,000 short threads, test_thread_churn). */
static __always_inline bool task_exiting(struct task_struct *task)
{
	return BPF_CORE_READ(task, flags) & PF_EXITING;
}

static __always_inline void tstate_cache(struct task_struct *task, __u32 tid,
					 const struct tstate_entry *entry)
{
	if (!task_exiting(task))
		bpf_map_update_elem(&tstates, &tid, entry, BPF_ANY);
}

/* The thread id a thread state holds, 0 if unreadable. */
static __always_inline __u64 tstate_id(__u64 tstate, __u16 id_off)
{
	__u64 id = 0;

	if (tstate)
		read_u64(tstate + id_off, &id);
	return id;
}

static __always_inline int find_tstate(struct sample_buf *b,
				       const struct py_proc *proc,
				       struct task_struct *task, __u32 tid,
				       __u64 *out)
{
	const struct py_offsets *off = &proc->off;
	struct tstate_entry *cached, entry = {};
	struct walk_ctx w = {};
	__u64 interp = 0, head = 0, now;
	int i;

	w.want = thread_key(task, off);
	w.id_off = off->match == PY_MATCH_PTHREAD ? off->tstate_thread_id :
						    off->tstate_native_thread_id;
	w.next_off = off->tstate_next;

	cached = bpf_map_lookup_elem(&tstates, &tid);
	if (cached && cached->tstate &&
	    tstate_valid(b, off, cached, w.want, w.id_off)) {
		*out = cached->tstate;
		count(CNT_TSTATE_CACHE_HIT);
		return 0;
	}
	now = bpf_ktime_get_ns();
	/*
	 * Not found lately, and the list has not changed since.  A new
	 * thread state is linked at the head before its thread id is set:
	 * a walk in between misses it, and the head alone would keep that
	 * answer for the whole TTL (3.14's processes lost their first tens
	 * of ms to it), so the head's id must not have changed either.
	 */
	if (cached && !cached->tstate && now - cached->ts < PYSIGHT_NEG_TTL_NS &&
	    !read_u64(cached->interp + off->interp_threads_head, &head) &&
	    head == cached->head && tstate_id(head, w.id_off) == cached->head_id)
		return -(int)cached->status;
	count(CNT_TSTATE_WALK);

	if (read_u64(proc->runtime_addr + off->runtime_interpreters_head,
		     &interp))
		return -ST_ERR_READ_RUNTIME;
	entry.interp = interp;
	entry.ts = now;
	for (i = 0; i < PYSIGHT_MAX_INTERPS && interp; i++) {
		if (read_u64(interp + off->interp_threads_head, &w.tstate))
			return -ST_ERR_READ_RUNTIME;
		if (!i)
			entry.head = w.tstate;
		pysight_loop_start(&w.loop, w.tstate);
		bpf_loop(PYSIGHT_MAX_THREADS, walk_thread, &w, 0);
		if (w.found) {
			entry.tstate = w.tstate;
			entry.interp = interp;
			tstate_cache(task, tid, &entry);
			*out = w.tstate;
			return 0;
		}
		if (read_u64(interp + off->interp_next, &interp))
			break;
	}
	entry.tstate = 0;
	entry.head_id = tstate_id(entry.head, w.id_off);
	entry.status = w.looped ? ST_ERR_THREAD_LOOP : ST_NO_TSTATE;
	tstate_cache(task, tid, &entry);
	return -(int)entry.status;
}

/*
 * Validate the code object and compute its identity checksum.  The
 * identity is built in the per-CPU scratch, not on the stack: this runs
 * in bpf_loop's callback, whose stack counts on top of its caller's.
 */
static __always_inline int code_check(struct frame_ctx *c,
				      struct sample_buf *b, __u64 code,
				      __u32 *check)
{
	struct code_ident *id = &b->ident;
	__u64 type;

	if (bpf_probe_read_user(b->cwin, sizeof(b->cwin), (void *)code))
		return -ST_ERR_READ_CODE;
	type = WIN_U64(b->cwin, PYSIGHT_CODE_WINDOW, c->o_type);
	if (type != c->code_type)
		return -ST_ERR_BAD_CODE;
	__builtin_memset(id, 0, sizeof(*id));
	id->first = WIN_U32(b->cwin, PYSIGHT_CODE_WINDOW, c->c_first);
	id->name = WIN_U64(b->cwin, PYSIGHT_CODE_WINDOW, c->c_name);
	id->file = WIN_U64(b->cwin, PYSIGHT_CODE_WINDOW, c->c_file);
	id->qual = c->c_qual != PY_OFF_NONE ?
		       WIN_U64(b->cwin, PYSIGHT_CODE_WINDOW, c->c_qual) : 0;
	id->linetable = WIN_U64(b->cwin, PYSIGHT_CODE_WINDOW, c->c_lt);
	if (id->name)
		read_u64(id->name + c->u_hash, &id->name_hash);
	if (id->linetable)
		read_u64(id->linetable + c->b_size, &id->linetable_len);
	if (id->linetable_len >= PYSIGHT_LT_HEAD)
		bpf_probe_read_user(id->lt_head, PYSIGHT_LT_HEAD,
				    (void *)(id->linetable + c->b_data));
	else if (id->linetable_len)
		bpf_probe_read_user(id->lt_head,
				    id->linetable_len & (PYSIGHT_LT_HEAD - 1),
				    (void *)(id->linetable + c->b_data));
	*check = pysight_code_check(id);
	return 0;
}

/*
 * A live frame holds a reference to its code object, so a cached check is
 * good until the object's dealloc, which the uprobe below reports.  This
 * skips two reads a frame, most of the walk's cost.
 */
static __always_inline int cached_check(struct frame_ctx *c,
					struct sample_buf *b, __u64 code,
					__u32 *check)
{
	__u32 idx = code_slot_of(c->tgid, code);
	struct code_slot *slot;
	int err;

	if (!c->code_cache)
		return code_check(c, b, code, check);
	slot = bpf_map_lookup_elem(&code_checks, &idx);
	if (!slot)
		return code_check(c, b, code, check);
	if (slot->code == code && slot->tgid == c->tgid &&
	    slot->tag == slot_tag(c->tgid, c->epoch, code, slot->check)) {
		*check = slot->check;
		c->cache_hits++;
		return 0;
	}
	err = code_check(c, b, code, check);
	if (!err) {
		slot->tag = 0;
		slot->code = code;
		slot->tgid = c->tgid;
		slot->check = *check;
		slot->seen_ns = bpf_ktime_get_ns();
		slot->tag = slot_tag(c->tgid, c->epoch, code, *check);
	}
	return err;
}

/* The frame's bytes: from the bulk copy when it is in there, else read. */
static __always_inline __u8 *frame_window(struct frame_ctx *c,
					  struct sample_buf *b)
{
	struct bulk_buf *bb;
	__u32 len;
	__u64 o;

	if (c->frame >= c->bulk_lo &&
	    c->frame + PYSIGHT_FRAME_WINDOW <= c->bulk_hi) {
		o = c->frame - c->bulk_lo;
		bb = bpf_map_lookup_elem(&bulk, &b->slot);
		if (bb && o <= PYSIGHT_BULK - PYSIGHT_FRAME_WINDOW)
			return bb->data + o;
	}
	/* the frame's own fields only: a frame can end its stack chunk, and
	 * the window past it may not be mapped */
	len = c->f_len;
	if (len < 8 || len > PYSIGHT_FRAME_WINDOW)	/* for the verifier */
		len = PYSIGHT_FRAME_WINDOW;
	if (bpf_probe_read_user(b->fwin, len, (void *)c->frame))
		return NULL;
	return b->fwin;
}

/* data: the scratch slot the walk's caller holds */
static long walk_frame(__u32 i, void *data)
{
	struct frame_ctx *c;
	struct sample_buf *b;
	struct py_frame *f;
	__u32 check = 0;
	__u64 code, instr;
	__u8 *win;
	__s32 lasti;
	int err;

	b = bpf_map_lookup_elem(&scratch, data);
	if (!b)
		return 1;
	c = &b->fc;
	if (!c->frame)
		return 1;
	win = frame_window(c, b);
	if (!win) {
		c->status = ST_ERR_READ_FRAME;
		return 1;
	}
	code = WIN_U64(win, PYSIGHT_FRAME_WINDOW, c->f_code) & c->tag_mask;
	instr = WIN_U64(win, PYSIGHT_FRAME_WINDOW, c->f_instr);
	c->frame = WIN_U64(win, PYSIGHT_FRAME_WINDOW, c->f_prev);
	if (pysight_loop_seen(&c->loop, c->frame)) {
		c->status = ST_ERR_FRAME_LOOP;
		return 1;
	}

	/* shim frames (C stack 3.12+, interpreter entry 3.14+) have no code */
	if (c->owner_cstack && c->f_owner < PYSIGHT_FRAME_WINDOW &&
	    win[c->f_owner] >= c->owner_cstack)
		return 0;

	err = cached_check(c, b, code, &check);
	if (err == -ST_ERR_BAD_CODE && c->skip_foreign)
		return 0;	/* 3.13+: f_executable may be None */
	if (err) {
		c->status = -err;
		return 1;
	}

	if (c->instr_kind == PY_INSTR_POINTER)
		lasti = (__s32)(instr - code - c->c_adaptive);
	else if (c->instr_kind == PY_INSTR_LASTI_UNITS)
		lasti = (__s32)((__u32)instr * 2);
	else
		lasti = (__s32)instr;

	if (c->n >= PYSIGHT_MAX_FRAMES) {
		c->status = ST_TRUNCATED;
		return 1;
	}
	f = &b->frames[c->n & (PYSIGHT_MAX_FRAMES - 1)];
	f->code = code;
	f->lasti = lasti;
	f->check = check;
	c->hash = mix64(c->hash ^ code);
	c->hash = mix64(c->hash ^ ((__u64)(__u32)lasti << 32 | check));
	c->n++;
	return 0;
}

static __always_inline int first_frame(const struct py_proc *proc,
				       __u64 tstate, __u64 *frame)
{
	const struct py_offsets *off = &proc->off;
	__u64 p = 0;

	if (read_u64(tstate + off->tstate_frame, &p))
		return -ST_ERR_READ_FRAME;
	if (off->frame_model == PY_FRAMES_CFRAME && p &&
	    read_u64(p + off->cframe_current_frame, &p))
		return -ST_ERR_READ_FRAME;
	*frame = p;
	return 0;
}

/*
 * 3.11+: frames called from Python sit one after another in the thread's
 * data stack chunk, the leaf on top.  One read of the chunk below the
 * leaf replaces a read per frame (~65 ns each); frames elsewhere
 * (generators, older chunks) are still read one by one.
 */
static __always_inline void read_bulk(const struct py_offsets *off,
				      __u64 tstate, __u64 leaf,
				      struct frame_ctx *c, __u32 slot)
{
	__u64 ds[3] = {};	/* datastack_chunk, datastack_top, _limit */
	struct bulk_buf *bb;
	__u64 lo, hi;
	long err;

	if (off->tstate_datastack_chunk == PY_OFF_NONE || !leaf)
		return;
	if (bpf_probe_read_user(ds, sizeof(ds),
				(void *)(tstate + off->tstate_datastack_chunk)))
		return;
	lo = ds[0] + 3 * sizeof(__u64);		/* _PyStackChunk.data */
	hi = leaf + PYSIGHT_FRAME_WINDOW;
	if (!ds[0] || leaf < lo || hi > ds[2] || ds[1] > ds[2])
		return;
	if (hi - lo > PYSIGHT_BULK)
		lo = hi - PYSIGHT_BULK;
	bb = bpf_map_lookup_elem(&bulk, &slot);
	if (!bb)
		return;
	/* two calls so the verifier sees each size bounded */
	if (hi - lo >= PYSIGHT_BULK)
		err = bpf_probe_read_user(bb->data, PYSIGHT_BULK, (void *)lo);
	else
		err = bpf_probe_read_user(bb->data,
					  (hi - lo) & (PYSIGHT_BULK - 1),
					  (void *)lo);
	if (err)
		return;
	c->bulk_lo = lo;
	c->bulk_hi = hi;
}

/*
 * Scratch slots.  A perf sample can interrupt a program that is walking a
 * stack on this CPU (sys_exit's runs with interrupts on) and would
 * overwrite its buffers midway, so each level of nesting takes a slot of
 * its own, in scratch and in bulk.  What interrupts runs to completion
 * before the interrupted program goes on, so a plain count is enough.
 */
static __always_inline struct sample_buf *scratch_get(void)
{
	__u32 zero = 0, slot;
	__u32 *depth = bpf_map_lookup_elem(&scratch_depth, &zero);
	struct sample_buf *b;

	if (!depth)
		return NULL;
	slot = *(volatile __u32 *)depth;
	if (slot >= SCRATCH_SLOTS)
		return NULL;
	b = bpf_map_lookup_elem(&scratch, &slot);
	if (!b)
		return NULL;
	*(volatile __u32 *)depth = slot + 1;
	b->slot = slot;
	return b;
}

static __always_inline void scratch_put(void)
{
	__u32 zero = 0;
	__u32 *depth = bpf_map_lookup_elem(&scratch_depth, &zero);

	if (depth && *depth)
		*(volatile __u32 *)depth = *depth - 1;
}

/*
 * Walk the current thread's Python stack into b, a scratch buffer the
 * caller holds.  Callable from any program type that runs in the
 * thread's context.
 */
static __always_inline void collect_stack(struct sample_buf *b,
					  const struct py_proc *proc,
					  struct task_struct *task,
					  __u32 tgid, __u32 tid)
{
	const struct py_offsets *off = &proc->off;
	struct frame_ctx *c;
	__u64 tstate = 0, frame = 0;
	__u32 slot = b->slot;
	int err;

	b->ev.nframes = 0;
	b->ev.stack_hash = 0;

	err = find_tstate(b, proc, task, tid, &tstate);
	b->tstate = tstate;
	if (!err)
		err = first_frame(proc, tstate, &frame);
	if (err) {
		b->ev.status = -err;
		return;
	}

	c = &b->fc;
	__builtin_memset(c, 0, sizeof(*c));
	c->frame = frame;
	pysight_loop_start(&c->loop, frame);
	c->hash = mix64(tgid + 0x9e3779b97f4a7c15ULL);
	c->code_type = proc->code_type_addr;
	c->tag_mask = off->code_tag_mask;
	c->f_prev = off->frame_previous;
	c->f_code = off->frame_code;
	c->f_instr = off->frame_instr;
	c->f_owner = off->frame_owner;
	c->f_len = off->frame_read_len;
	c->c_first = off->code_firstlineno;
	c->c_file = off->code_filename;
	c->c_name = off->code_name;
	c->c_qual = off->code_qualname;
	c->c_adaptive = off->code_code_adaptive;
	c->c_lt = off->code_linetable;
	c->u_hash = off->unicode_hash;
	c->o_type = off->object_type;
	c->b_size = off->bytes_size;
	c->b_data = off->bytes_data;
	c->epoch = BPF_CORE_READ(task, group_leader, start_time);
	c->instr_kind = off->instr_kind;
	c->owner_cstack = off->owner_cstack;
	c->skip_foreign = off->frame_model == PY_FRAMES_DIRECT;
	c->code_cache = !!(proc->flags & PY_PROC_F_CODE_CACHE);
	c->tgid = tgid;
	read_bulk(off, tstate, frame, c, slot);
	c->status = ST_COMPLETE;

	/* one more than the limit, so a stack of exactly the limit is whole */
	bpf_loop(PYSIGHT_MAX_FRAMES + 1, walk_frame, &slot, 0);

	if (c->cache_hits)
		count_n(CNT_CODE_CACHE_HIT, c->cache_hits);
	b->ev.status = c->status;
	if (c->status == ST_COMPLETE && c->n == 0)
		b->ev.status = ST_IDLE;
	b->ev.nframes = c->n;
	b->ev.stack_hash = c->n ? c->hash ^ c->status : 0;
}

static __always_inline void fill_header(struct event_header *h, __u32 kind,
					__u32 tgid, __u32 tid)
{
	h->kind = kind;
	h->pid = tgid;
	h->tid = tid;
	h->cpu = bpf_get_smp_processor_id();
	h->ts = bpf_ktime_get_ns();
}

/* A record of size bytes in the ring, its header filled; NULL, counted,
 * when the ring is full. */
static __always_inline void *reserve_event(__u64 size, __u32 kind,
					   __u32 tgid, __u32 tid)
{
	struct event_header *h = bpf_ringbuf_reserve(&events, size, 0);

	if (!h) {
		count(CNT_RB_DROPS);
		return NULL;
	}
	fill_header(h, kind, tgid, tid);
	return h;
}

static __always_inline void emit_sample(struct sample_buf *b, __u32 tgid,
					__u32 tid, __u8 kind, __u64 weight,
					__s32 kstack)
{
	__u64 size = sizeof(b->ev);
	__u64 hash = b->ev.stack_hash;
	__u8 one = 1;
	__u32 n = b->ev.nframes;

	fill_header(&b->ev.hdr, EV_SAMPLE, tgid, tid);
	b->ev.kind = kind;
	b->ev.weight = weight;
	b->ev.kstack = kstack;
	b->ev.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(b->ev.comm, sizeof(b->ev.comm));

	b->ev.has_frames = 0;
	if (n && !bpf_map_lookup_elem(&stacks_seen, &hash)) {
		b->ev.has_frames = 1;
		if (n > PYSIGHT_MAX_FRAMES)
			n = PYSIGHT_MAX_FRAMES;
		size += (__u64)n * sizeof(struct py_frame);
	}
	/*
	 * Marked sent before it is: the consumer may read the event, and
	 * forget the hash (its process gone), before this program would
	 * get to mark it after, and the mark would stay.
	 */
	if (b->ev.has_frames)
		bpf_map_update_elem(&stacks_seen, &hash, &one, BPF_ANY);
	/*
	 * A wake-up costs about 3 us a sample.  Known stacks wait for the
	 * consumer's next poll (50 ms); new ones wake it, so their code
	 * objects are read while they are alive.
	 */
	if (bpf_ringbuf_output(&events, b, size,
			       b->ev.has_frames ? BPF_RB_FORCE_WAKEUP :
						  BPF_RB_NO_WAKEUP)) {
		count(CNT_RB_DROPS);
		if (b->ev.has_frames)
			bpf_map_delete_elem(&stacks_seen, &hash);
	}
}

static __always_inline void emit_proc_event(__u32 kind, __u32 tgid, __u32 tid)
{
	struct pid_event *e = reserve_event(sizeof(*e), kind, tgid, tid);

	if (!e)
		return;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/*
 * The two states a process entry starts in, as read-only globals: on the
 * stack (144 bytes each) they would sit in pysight_on_cpu's frame, under
 * walk_frame's, and the verifier adds a bpf_loop callback's stack to its
 * caller's (6.18 kernels refuse more than 512 bytes together).
 */
const struct py_proc proc_pending = { .state = PY_PROC_PENDING };
const struct py_proc proc_ignored = { .state = PY_PROC_IGNORED };

static __always_inline int exe_key(struct task_struct *task,
				   struct py_binary_key *key)
{
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);

	struct inode *inode;

	if (!exe)
		return -1;
	inode = BPF_CORE_READ(exe, f_inode);
	key->ino = BPF_CORE_READ(inode, i_ino);
	key->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key->size = BPF_CORE_READ(inode, i_size);
	inode_mtime(inode, &key->mtime_sec, &key->mtime_nsec);
	return 0;
}

static __always_inline void emit_adopted(__u32 tgid, const struct py_proc *proc)
{
	struct adopt_event *e = reserve_event(sizeof(*e), EV_ADOPTED, tgid, tgid);

	if (!e)
		return;
	e->proc = *proc;
	bpf_ringbuf_submit(e, 0);
}

/*
 * A process of an executable already inspected needs no question to user
 * space: its facts come from the binary map, or it is known not to be
 * Python.  flags: BPF_NOEXIST when a sample races other CPUs to it,
 * BPF_ANY at exec (a new image).
 */
static __always_inline bool configure_from_binary(struct task_struct *task,
						  __u32 tgid, __u64 flags)
{
	struct py_binary_key key = {};
	struct py_proc *known, *old;

	if (exe_key(task, &key))
		return false;
	known = bpf_map_lookup_elem(&binaries, &key);
	if (known) {
		/* under BPF_NOEXIST another CPU may have got there first */
		if (!bpf_map_update_elem(&procs, &tgid, known, flags))
			emit_adopted(tgid, known);
		count(CNT_BINARY_HIT);
		return true;
	}
	if (bpf_map_lookup_elem(&not_python, &key)) {
		/* a Python process (a fork, say) exec'ing a known other
		 * program: user space forgets what it holds for the pid,
		 * no event coming at its exit */
		old = bpf_map_lookup_elem(&procs, &tgid);
		if (old && old->state != PY_PROC_IGNORED)
			emit_adopted(tgid, &proc_ignored);
		bpf_map_update_elem(&procs, &tgid, &proc_ignored, flags);
		return true;
	}
	return false;
}

/* Configure a process BPF has not seen: from the binary map when its
 * interpreter is known, else ask user space once. */
static __always_inline struct py_proc *discover(struct task_struct *task,
						__u32 tgid, __u32 tid)
{
	/* past its exit tracepoint a task still runs (and is sampled) while
	 * it tears down: an entry made now would outlive it */
	if (BPF_CORE_READ(task, flags) & PF_EXITING)
		return NULL;
	if (configure_from_binary(task, tgid, BPF_NOEXIST))
		return bpf_map_lookup_elem(&procs, &tgid);
	if (bpf_map_update_elem(&procs, &tgid, &proc_pending, BPF_NOEXIST))
		return NULL;	/* someone else got there first */
	count(CNT_NEW_PID);
	emit_proc_event(EV_NEW_PID, tgid, tid);
	return NULL;
}

/*
 * Is task in one of the --cgroup trees?  Its ancestor at the filter's
 * level must be the filter's cgroup.  For current the helper reads it;
 * another task's (the iterator's) is read with CO-RE.
 */
static __always_inline bool in_cgroups(struct task_struct *task, bool current)
{
	struct cgroup *cg = NULL;
	struct cgroup_filter *f;
	__u32 i, level = 0;
	__u64 id;

	if (!ncgroups)
		return true;
	if (!current) {
		cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
		level = BPF_CORE_READ(cg, level);
	}
	for (i = 0; i < PYSIGHT_MAX_CGROUPS && i < ncgroups; i++) {
		f = bpf_map_lookup_elem(&cgroup_filter, &i);
		if (!f)
			return false;
		if (current) {
			id = bpf_get_current_ancestor_cgroup_id(f->level);
		} else {
			if (f->level > level)
				continue;
			id = cgroup_ancestor_id(cg, f->level);
		}
		if (id == f->id)
			return true;
	}
	return false;
}

static __always_inline bool wanted(__u32 tgid)
{
	if (!tgid || tgid == self_pid)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&targets, &tgid))
		return false;
	return true;
}

/*
 * Off-CPU time (--mode wall|off).  Per thread, in task storage: it dies
 * with the task, and a thread that sleeps on one CPU and wakes on
 * another is still paired (per-CPU state loses those: OpenTelemetry's
 * profiler, their issue #1348).
 */
struct thread_state {
	__u64 off_since;	/* ktime it left the CPU, 0: on it */
	__u64 pending;		/* weight of an ended interval whose stack is
				 * still to be taken, 0: none */
	__s32 kstack, pending_kstack;	/* kernel stack ids, -1: none */
	__u8 kind, pending_kind;	/* why: enum sample_kind */
	__u8 pad[6];
	__u64 ran_at_off;	/* its CPU time when it left */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

/* tid -> sum_exec_runtime at its last CPU sample (--mode wall): a
 * sample weighs the CPU time the thread used since, exactly. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} cpu_last SEC(".maps");

/* Kernel stacks of off-CPU intervals (--kernel-stacks). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PYSIGHT_KSTACK_DEPTH * sizeof(__u64));
} kstacks SEC(".maps");

/* x86-64 system calls that tell why a thread blocks. */
enum {
	NR_read = 0, NR_write = 1, NR_poll = 7, NR_pread64 = 17,
	NR_pwrite64 = 18, NR_readv = 19, NR_writev = 20, NR_select = 23,
	NR_nanosleep = 35, NR_sendfile = 40, NR_connect = 42,
	NR_accept = 43, NR_sendto = 44, NR_recvfrom = 45, NR_sendmsg = 46,
	NR_recvmsg = 47, NR_fsync = 74, NR_fdatasync = 75, NR_futex = 202,
	NR_io_getevents = 208, NR_clock_nanosleep = 230,
	NR_epoll_wait = 232, NR_openat = 257, NR_pselect6 = 270,
	NR_ppoll = 271, NR_splice = 275, NR_epoll_pwait = 281,
	NR_accept4 = 288, NR_preadv = 295, NR_pwritev = 296,
	NR_recvmmsg = 299, NR_sendmmsg = 307, NR_io_uring_enter = 426,
	NR_epoll_pwait2 = 441, NR_futex_waitv = 449,
};

#define TASK_RUNNING		0
#define TASK_UNINTERRUPTIBLE	0x0002
#define FUTEX_CMD_MASK		0x7f	/* without PRIVATE, CLOCK_REALTIME */
#define FUTEX_WAIT		0
#define FUTEX_LOCK_PI		6
#define FUTEX_WAIT_BITSET	9
#define FUTEX_WAIT_REQUEUE_PI	11
#define FUTEX_LOCK_PI2		13

/*
 * The main interpreter's GIL state: in _PyRuntime up to 3.11, behind
 * interp->ceval.gil from 3.12 (found once, kept in the process's entry).
 */
static __always_inline __u64 gil_addr(struct py_proc *proc)
{
	const struct py_offsets *off = &proc->off;
	__u64 interp = 0, gil = 0;

	if (off->runtime_gil != PY_OFF_NONE)
		return proc->runtime_addr + off->runtime_gil;
	if (proc->gil_addr || off->interp_gil_ptr == PY_OFF_NONE)
		return proc->gil_addr;
	if (read_u64(proc->runtime_addr + off->runtime_interpreters_head,
		     &interp) || !interp ||
	    read_u64(interp + off->interp_gil_ptr, &gil))
		return 0;
	proc->gil_addr = gil;
	return gil;
}

static __always_inline bool futex_waits(__u64 op)
{
	op &= FUTEX_CMD_MASK;
	return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET ||
	       op == FUTEX_LOCK_PI || op == FUTEX_LOCK_PI2 ||
	       op == FUTEX_WAIT_REQUEUE_PI;
}

/*
 * Why a blocked thread is off the CPU, from the system call it is in and
 * its arguments (its user registers at syscall entry).  A futex wait on
 * an address inside the GIL state is a GIL wait: take_gil() sleeps on
 * the state's condition variable and mutex.
 */
static __always_inline __u8 classify(struct task_struct *task,
				     struct py_proc *proc, unsigned int state)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 nr, a0, a1, gil;

	if (state == TASK_RUNNING)
		return KIND_RUNQUEUE;
	if (!regs)
		return KIND_OTHER;
	nr = BPF_CORE_READ(regs, orig_ax);
	a0 = BPF_CORE_READ(regs, di);
	a1 = BPF_CORE_READ(regs, si);
	switch (nr) {
	case NR_nanosleep:
	case NR_clock_nanosleep:
		return KIND_SLEEP;
	case NR_select:
	case NR_pselect6:	/* time.sleep up to 3.10: no descriptors */
		return a0 ? KIND_IO : KIND_SLEEP;
	case NR_poll:
	case NR_ppoll:
		return a1 ? KIND_IO : KIND_SLEEP;
	case NR_futex:
		if (!futex_waits(a1))
			return KIND_OTHER;
		gil = proc->state == PY_PROC_PYTHON ? gil_addr(proc) : 0;
		if (gil && a0 >= gil && a0 < gil + proc->off.gil_size)
			return KIND_GIL;
		return KIND_LOCK;
	case NR_futex_waitv:
		return KIND_LOCK;
	case NR_read: case NR_write: case NR_pread64: case NR_pwrite64:
	case NR_readv: case NR_writev: case NR_preadv: case NR_pwritev:
	case NR_sendfile: case NR_connect: case NR_accept: case NR_accept4:
	case NR_sendto: case NR_recvfrom: case NR_sendmsg: case NR_recvmsg:
	case NR_recvmmsg: case NR_sendmmsg: case NR_fsync:
	case NR_fdatasync: case NR_io_getevents: case NR_epoll_wait:
	case NR_epoll_pwait: case NR_epoll_pwait2: case NR_openat:
	case NR_splice: case NR_io_uring_enter:
		return KIND_IO;
	}
	/* a disk wait outside those calls: a page fault, say */
	return state & TASK_UNINTERRUPTIBLE ? KIND_IO : KIND_OTHER;
}

/* The process of a task, when it is a Python process we sample, or (with
 * pending) one user space is still looking at. */
static __always_inline struct py_proc *python_of(struct task_struct *task,
						 __u32 *tgid, bool current,
						 bool pending)
{
	struct py_proc *proc;

	*tgid = BPF_CORE_READ(task, tgid);
	if (!wanted(*tgid) || !in_cgroups(task, current))
		return NULL;
	proc = bpf_map_lookup_elem(&procs, tgid);
	if (!proc)
		return NULL;
	if (proc->state == PY_PROC_PYTHON ||
	    (pending && proc->state == PY_PROC_PENDING))
		return proc;
	return NULL;
}

/*
 * The stack of an interval that has ended, taken now: the thread is
 * current, so its memory is readable.  Called from its own context only.
 */
static __always_inline void take_pending(void *ctx, struct thread_state *t,
					 struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid(), weight = t->pending;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct py_proc *proc;
	struct sample_buf *b;

	t->pending = 0;
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc || proc->state != PY_PROC_PYTHON)
		return;
	count(CNT_OFF_WALKED);
	b = scratch_get();
	if (!b)
		return;
	collect_stack(b, proc, task, tgid, tid);
	if (b->ev.status != ST_NO_TSTATE && b->ev.status != ST_IDLE)
		emit_sample(b, tgid, tid, t->pending_kind, weight,
			    t->pending_kstack);
	scratch_put();
}

/*
 * A thread that runs again, which this program did not see come back on
 * (a few times a recording, on a busy host): its interval ended where
 * the CPU time it has used since began.  The rest waits for its stack,
 * as an interval whose end was seen does.
 */
static __always_inline void close_unseen(struct thread_state *t, __u64 now,
					 __u64 ran)
{
	__u64 off = now - t->off_since, ran_since = ran - t->ran_at_off;

	count(CNT_OFF_UNSEEN);
	t->off_since = 0;
	if (off <= ran_since)
		return;
	if (!t->pending) {
		t->pending_kind = t->kind;
		t->pending_kstack = t->kstack;
	}
	t->pending += off - ran_since;
}

/* A thread leaves the CPU (current is prev): note when, and why. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev)
{
	__u64 now, ran;
	struct thread_state *t;
	struct py_proc *proc;
	unsigned int state;
	__u32 tgid;

	/*
	 * A process user space has not answered for yet may be Python: its
	 * intervals open now, so a sleep that begins before the answer
	 * (a 'record -- CMD' of a position-independent Python: 4-8 ms of
	 * its first sleep) is whole.  Their stacks are taken only if it is
	 * Python by then.  Its GIL is not known yet: a wait on it counts as
	 * a lock.
	 */
	proc = python_of(prev, &tgid, true, true);
	if (!proc)
		return;
	t = bpf_task_storage_get(&threads, prev, 0, 0);
	if (!t) {
		/* an exiting thread still switches out, after its exit
		 * hook dropped its state: do not make it a new one */
		if (BPF_CORE_READ(prev, flags) & PF_EXITING)
			return;
		t = bpf_task_storage_get(&threads, prev, 0,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t)
			return;
		count(CNT_THREAD_STATES);
	}
	now = bpf_ktime_get_ns();
	ran = BPF_CORE_READ(prev, se.sum_exec_runtime);
	if (t->off_since)
		close_unseen(t, now, ran);
	if (t->pending)		/* it ran, and no hook took the last one */
		take_pending(ctx, t, prev);
	state = BPF_CORE_READ(prev, __state);
	t->off_since = now;
	t->ran_at_off = ran;
	t->kind = classify(prev, proc, state);
	t->kstack = kernel_stacks ? bpf_get_stackid(ctx, &kstacks, 0) : -1;
}

/*
 * A thread comes back: how long it was off is known now.  A stack walk
 * costs 2-5 us, more than a short block, so an interval shorter than
 * walk_below_ns is kept with probability length / walk_below_ns, and
 * then weighs walk_below_ns: the expected total stays exact, as a
 * sampler's does.  The stack itself cannot be read here (current is
 * still the thread leaving): it is taken in the thread's own context,
 * at its system call's exit (a block in a syscall: the stack has not
 * moved), else at its next sample or switch.
 */
static __always_inline void switch_in(struct task_struct *next)
{
	struct thread_state *t = bpf_task_storage_get(&threads, next, 0, 0);
	__u64 off;

	if (!t || !t->off_since)
		return;
	off = bpf_ktime_get_ns() - t->off_since;
	t->off_since = 0;
	count(CNT_OFF_INTERVALS);
	if (off < walk_below_ns) {
		if (bpf_get_prandom_u32() % walk_below_ns >= off)
			return;
		off = walk_below_ns;
	}
	t->pending = off;
	t->pending_kind = t->kind;
	t->pending_kstack = t->kstack;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pysight_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	switch_out(ctx, prev);
	switch_in(next);
	return 0;
}

/* A system call returns: for a thread back from a block, its stack. */
SEC("tp_btf/sys_exit")
int BPF_PROG(pysight_sys_exit)
{
	struct task_struct *task = (void *)bpf_get_current_task_btf();
	struct thread_state *t = bpf_task_storage_get(&threads, task, 0, 0);

	if (!t)
		return 0;
	/*
	 * Still off by our account: its switch back in went unseen.  Close
	 * the interval here, where the stack is still the block's, not at
	 * the next switch, after it has run on (a sleep was seen put under
	 * the function the thread burnt in next).
	 */
	if (t->off_since)
		close_unseen(t, bpf_ktime_get_ns(),
			     BPF_CORE_READ(task, se.sum_exec_runtime));
	if (t->pending)
		take_pending(ctx, t, task);
	return 0;
}

/* Does this thread hold the GIL?  py-spy's test: locked, and it was the
 * last to take it. */
static __always_inline bool holds_gil(struct py_proc *proc, __u64 tstate)
{
	const struct py_offsets *off = &proc->off;
	__u64 gil = gil_addr(proc), holder = 0;
	__u32 locked = 0;

	if (!gil || !tstate ||
	    bpf_probe_read_user(&locked, sizeof(locked),
				(void *)(gil + off->gil_locked)) ||
	    read_u64(gil + off->gil_last_holder, &holder))
		return false;
	return locked && holder == tstate;
}

/*
 * CPU time the thread used since its last sample, from the scheduler's
 * own count; the period for a thread's first sample.  The count moves at
 * ticks and switches, so two samples within one tick see it still: that
 * is 0, not a period (a period there counted CPU time twice, +3% seen).
 */
static __always_inline __u64 cpu_weight(struct task_struct *task, __u32 tid)
{
	__u64 now = BPF_CORE_READ(task, se.sum_exec_runtime), *last, w;

	last = bpf_map_lookup_elem(&cpu_last, &tid);
	w = !last ? period_ns : now > *last ? now - *last : 0;
	if (!task_exiting(task))
		bpf_map_update_elem(&cpu_last, &tid, &now, BPF_ANY);
	return w;
}

/*
 * The task iterator: at the start of a recording, open an interval for
 * every thread of a Python process that is off the CPU already (it may
 * stay there throughout); at the end, report the threads still off, to
 * be read from user space and closed.  dump reads thread states here.
 */
SEC("iter/task")
int pysight_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct thread_record r = {};
	struct thread_state *t;
	struct py_proc *proc;
	__u32 tgid;

	if (!task)
		return 0;
	proc = python_of(task, &tgid, false, false);
	if (!proc || (iter_tgid && tgid != iter_tgid))
		return 0;
	r.tgid = tgid;
	r.tid = BPF_CORE_READ(task, pid);
	r.ns_tid = ns_tid(task);
	r.state = BPF_CORE_READ(task, __state);
	r.fsbase = BPF_CORE_READ(task, thread.fsbase);
	r.on_cpu = BPF_CORE_READ(task, on_cpu) != 0;
	r.cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	r.kind = r.on_cpu ? KIND_CPU : classify(task, proc, r.state);
	BPF_CORE_READ_STR_INTO(&r.comm, task, comm);
	if (iter_mode == ITER_LIST) {
		bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
		return 0;
	}
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (iter_mode == ITER_OPEN) {
		if (r.on_cpu || (t && t->off_since) ||
		    (BPF_CORE_READ(task, flags) & PF_EXITING))
			return 0;
		if (!t) {
			t = bpf_task_storage_get(&threads, task, 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (!t)
				return 0;
			count(CNT_THREAD_STATES);
		}
		t->off_since = bpf_ktime_get_ns();
		t->ran_at_off = BPF_CORE_READ(task, se.sum_exec_runtime);
		t->kind = r.kind;
		t->kstack = -1;
		return 0;
	}
	if (t && t->off_since && !r.on_cpu) {
		r.off_since = t->off_since;
		r.kind = t->kind;
		t->off_since = 0;
	} else if (t && t->pending) {
		/* ended, stack not yet taken: report it as ended now */
		r.off_since = bpf_ktime_get_ns() - t->pending;
		r.kind = t->pending_kind;
		t->pending = 0;
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/* What a perf sample does with the stack collect_stack() put in b. */
static __always_inline void sample_on_cpu(struct sample_buf *b,
					  struct py_proc *proc,
					  struct task_struct *task,
					  __u32 tgid, __u32 tid)
{
	struct thread_state *t;

	if (b->ev.status < ST__MAX)
		count(CNT_STATUS_BASE + b->ev.status);
	if (b->ev.status == ST_NO_TSTATE || b->ev.status == ST_IDLE)
		return;
	if (gil_only && !holds_gil(proc, b->tstate))
		return;
	emit_sample(b, tgid, tid, KIND_CPU,
		    mode != PYSIGHT_MODE_CPU ? cpu_weight(task, tid) : 0, -1);
	if (mode == PYSIGHT_MODE_CPU)
		return;
	/* an off-CPU interval that ended without a syscall exit
	 * (preempted, a page fault): its stack is this one */
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (t && t->pending) {
		emit_sample(b, tgid, tid, t->pending_kind, t->pending,
			    t->pending_kstack);
		t->pending = 0;
		count(CNT_OFF_WALKED);
	}
}

SEC("perf_event")
int pysight_on_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task;
	struct py_proc *proc;
	struct sample_buf *b;

	/* the filter first: with -p, most runs are other tasks' (bench:
	 * looking up procs first made that early return 150 ns dearer) */
	if (!wanted(tgid))
		return 0;
	task = (struct task_struct *)bpf_get_current_task_btf();
	if (!in_cgroups(task, true))
		return 0;
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc)
		proc = discover(task, tgid, tid);
	if (!proc || proc->state != PY_PROC_PYTHON)
		return 0;

	if (mode == PYSIGHT_MODE_OFF)
		return 0;	/* off-CPU time alone */
	count(CNT_SAMPLES);
	b = scratch_get();
	if (!b)
		return 0;
	collect_stack(b, proc, task, tgid, tid);
	sample_on_cpu(b, proc, task, tgid, tid);
	scratch_put();
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(pysight_exec, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	/* a new image: whatever we knew about this pid is stale */
	bpf_map_delete_elem(&tstates, &tgid);
	if (!wanted(tgid)) {
		bpf_map_delete_elem(&procs, &tgid);
		return 0;
	}
	if (configure_from_binary(p, tgid, BPF_ANY))
		return 0;
	/* pending until user space answers; the entry makes its exit
	 * reported, so user space can forget what it learns */
	bpf_map_update_elem(&procs, &tgid, &proc_pending, BPF_ANY);
	count(CNT_NEW_PID);
	emit_proc_event(EV_EXEC, tgid, tgid);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(pysight_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct py_proc *proc;
	__u8 one = 1;

	if (ptgid == ctgid)
		return 0;	/* a new thread, not a new process */
	if (filter_pids && bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	/* a forked child shares its parent's image and addresses */
	proc = bpf_map_lookup_elem(&procs, &ptgid);
	if (proc && proc->state == PY_PROC_PYTHON &&
	    !bpf_map_update_elem(&procs, &ctgid, proc, BPF_ANY))
		emit_adopted(ctgid, proc);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(pysight_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 tid = BPF_CORE_READ(p, pid);
	struct py_proc *proc;
	bool told;

	bpf_map_delete_elem(&tstates, &tid);
	bpf_map_delete_elem(&cpu_last, &tid);
	if (!bpf_task_storage_delete(&threads, p))
		count_n(CNT_THREAD_STATES, -1);
	/* the process ends with its last thread, which need not be the
	 * leader: do_exit() counts signal->live down before this point */
	if (BPF_CORE_READ(p, signal, live.counter))
		return 0;
	/* user space may hold an entry for a process pending or Python
	 * (ignored ones it forgets at once), or may be about to write one */
	proc = bpf_map_lookup_elem(&procs, &tgid);
	told = proc && proc->state != PY_PROC_IGNORED;
	bpf_map_delete_elem(&procs, &tgid);
	if (told || (filter_pids && bpf_map_lookup_elem(&targets, &tgid)))
		emit_proc_event(EV_EXIT, tgid, tid);
	bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

/*
 * A str object's header and as much of its text as fits in buf
 * (PYSIGHT_SNAP_STR): the bytes read, 0 when none could be.
 */
static __always_inline __u32 snap_str(const struct py_offsets *off,
				      __u64 addr, __u8 *buf)
{
	__u32 state, data_off, kind;
	__u64 len, n;

	if (!addr || bpf_probe_read_user(buf, 64, (void *)addr))
		return 0;
	if (off->unicode_state > 60 || off->unicode_length > 56)
		return 64;
	state = *(__u32 *)(buf + off->unicode_state);
	len = *(__u64 *)(buf + off->unicode_length);
	kind = (state >> 2) & 7;
	data_off = (state >> 6) & 1 ? off->unicode_ascii_data :
				      off->unicode_compact_data;
	if (data_off > 64 || !kind || kind > 4 ||
	    len > PYSIGHT_SNAP_STR)
		len = PYSIGHT_SNAP_STR;
	else
		len = data_off + len * kind;
	if (len <= 64)
		return 64;
	n = len - 64;
	if (n > PYSIGHT_SNAP_STR - 64)
		n = PYSIGHT_SNAP_STR - 64;
	barrier_var(n);		/* the read's size is the clamped one */
	/* a string ending near a page's end: retry what is mapped */
	if (bpf_probe_read_user(buf + 64, n, (void *)(addr + 64)))
		return 64;
	return 64 + n;
}

/* A bytes object's header and up to 4 KiB of its contents. */
static __always_inline __u32 snap_bytes(const struct py_offsets *off,
					__u64 addr, __u8 *buf)
{
	__u64 len, n;

	if (!addr || bpf_probe_read_user(buf, 32, (void *)addr))
		return 0;
	if (off->bytes_size > 24 || off->bytes_data != 32)
		return 32;
	len = *(__u64 *)(buf + off->bytes_size);
	n = len < PYSIGHT_SNAP_LT - 32 ? len : PYSIGHT_SNAP_LT - 32;
	barrier_var(n);
	if (!n || bpf_probe_read_user(buf + 32, n, (void *)(addr + 32)))
		return 32;
	return 32 + n;
}

/* What user space needs to name code it has not named yet: sent at its
 * dealloc, in the target's context, while all of it is alive. */
static __always_inline void emit_code(__u32 tgid, __u64 code, __u32 check)
{
	struct py_proc *proc = bpf_map_lookup_elem(&procs, &tgid);
	const struct py_offsets *off;
	struct code_event *e;
	__u64 p;

	if (!proc || proc->state != PY_PROC_PYTHON)
		return;
	off = &proc->off;
	e = reserve_event(sizeof(*e), EV_CODE, tgid,
			  (__u32)bpf_get_current_pid_tgid());
	if (!e)
		return;
	e->code = code;
	e->check = check;
	e->pad = 0;
	__builtin_memset(e->r, 0, sizeof(e->r));
	if (bpf_probe_read_user(e->code_win, sizeof(e->code_win),
				(void *)code)) {
		bpf_ringbuf_discard(e, 0);
		return;
	}
	e->r[SNAP_CODE].addr = code;
	e->r[SNAP_CODE].len = sizeof(e->code_win);
	p = WIN_U64(e->code_win, PYSIGHT_CODE_WINDOW, off->code_name);
	e->r[SNAP_NAME].addr = p;
	e->r[SNAP_NAME].len = snap_str(off, p, e->name);
	p = off->code_qualname != PY_OFF_NONE ?
		WIN_U64(e->code_win, PYSIGHT_CODE_WINDOW, off->code_qualname) : 0;
	e->r[SNAP_QUAL].addr = p;
	e->r[SNAP_QUAL].len = snap_str(off, p, e->qual);
	p = WIN_U64(e->code_win, PYSIGHT_CODE_WINDOW, off->code_filename);
	e->r[SNAP_FILE].addr = p;
	e->r[SNAP_FILE].len = snap_str(off, p, e->file);
	p = WIN_U64(e->code_win, PYSIGHT_CODE_WINDOW, off->code_linetable);
	e->r[SNAP_LT].addr = p;
	e->r[SNAP_LT].len = snap_bytes(off, p, e->lt);
	bpf_ringbuf_submit(e, 0);
	count(CNT_CODE_SENT);
}

/* The interpreter's code_dealloc (PyCode_Type.tp_dealloc), per binary. */
SEC("uprobe")
int BPF_KPROBE(pysight_code_free, void *code)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 idx = code_slot_of(tgid, (__u64)code);
	struct code_slot *slot = bpf_map_lookup_elem(&code_checks, &idx);

	if (slot && slot->code == (__u64)code && slot->tgid == tgid) {
		if (slot->tag &&
		    bpf_ktime_get_ns() - slot->seen_ns < CODE_RECENT_NS)
			emit_code(tgid, (__u64)code, slot->check);
		slot->tag = 0;
		count(CNT_CODE_FREED);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
