// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The same walk as BPF's (find_tstate in bpf/tstate.bpf.h, walk_frame in
 * bpf/walk.bpf.h), over process_vm_readv.  Every read is bounded and may
 * fail: the target runs on, and nothing it holds is trusted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"
#include "stackread.h"
#include "symbols.h"

typedef int (*tstate_fn)(void *ctx, __u64 key, __u64 tstate);

/*
 * fn for each thread state of the process, with its thread's key, until
 * fn returns non-zero: that value.  0 at the end of the lists, or
 * -status on an error.
 */
static int each_tstate(const struct remote_mem *mem,
		       const struct py_proc *proc, tstate_fn fn, void *ctx)
{
	const struct py_offsets *off = &proc->off;
	__u16 id_off = off->match == PY_MATCH_PTHREAD ?
			       off->tstate_thread_id : off->tstate_native_thread_id;
	uint64_t interp = 0, t = 0, id;
	struct pysight_loop l;
	bool looped = false;
	int i, n, ret;

	if (remote__mem_read64(mem, proc->runtime_addr +
			   off->runtime_interpreters_head, &interp))
		return -ST_ERR_READ_RUNTIME;
	for (i = 0; i < PYSIGHT_MAX_INTERPS && interp; i++) {
		if (remote__mem_read64(mem, interp + off->interp_threads_head, &t))
			return -ST_ERR_READ_RUNTIME;
		pysight_loop_start(&l, t);
		for (n = 0; n < PYSIGHT_MAX_THREADS && t; n++) {
			if (remote__mem_read64(mem, t + id_off, &id))
				break;
			ret = fn(ctx, id, t);
			if (ret)
				return ret;
			if (remote__mem_read64(mem, t + off->tstate_next, &t))
				break;
			if (pysight_loop_seen(&l, t)) {
				looped = true;
				break;
			}
		}
		if (remote__mem_read64(mem, interp + off->interp_next, &interp))
			break;
	}
	return looped ? -ST_ERR_THREAD_LOOP : 0;
}

struct finding {
	__u64 key, tstate;
};

static int is_key(void *ctx, __u64 key, __u64 tstate)
{
	struct finding *f = ctx;

	if (key != f->key)
		return 0;
	f->tstate = tstate;
	return 1;
}

static int find_tstate(const struct remote_mem *mem,
		       const struct py_proc *proc, __u64 key, __u64 *out)
{
	struct finding f = { key, 0 };
	int ret = each_tstate(mem, proc, is_key, &f);

	if (ret < 0)
		return ret;
	if (!ret)
		return -ST_NO_TSTATE;
	*out = f.tstate;
	return 0;
}

int stackread__tstates(pid_t pid, const struct py_proc *proc,
		       int (*fn)(void *ctx, __u64 key, __u64 tstate),
		       void *ctx)
{
	struct remote_mem live = { .pid = pid };
	int ret = each_tstate(&live, proc, fn, ctx);

	return ret < 0 ? -EFAULT : ret;
}

static __s32 lasti_of(const struct py_offsets *off, __u64 code, __u64 instr)
{
	if (off->instr_kind == PY_INSTR_POINTER)
		return (__s32)(instr - code - off->code_code_adaptive);
	/* a target's f_lasti may be any int: doubled unsigned, it wraps as
	 * BPF's 32-bit multiply does, and overflows nothing */
	if (off->instr_kind == PY_INSTR_LASTI_UNITS)
		return (__s32)((__u32)instr * 2);
	return (__s32)instr;
}

/* --native: a call of the eval loop began below the frames so far
 * (none: no mark), as walk.bpf.h's entry_mark(). */
static int entry_mark(struct stackread *out, __u64 at)
{
	if (!out->marks || !out->n)
		return 1;
	if (out->n == PYSIGHT_MAX_FRAMES)
		return -ST_TRUNCATED;
	out->frames[out->n].code = 0;
	out->frames[out->n].lasti = PY_LASTI_ENTRY;
	out->frames[out->n].check = 0;
	out->addr[out->n] = at;
	out->n++;
	return 1;
}

/*
 * One frame: 1 to go on, 0 to stop, -status on an error.  As walk_frame()
 * in BPF, a frame whose caller was passed before ends the walk unkept, so
 * dump and the sampler stop a looping chain at the same frame.
 */
static int read_frame(const struct remote_mem *mem, const struct py_proc *proc,
		      uint64_t *frame, struct pysight_loop *l,
		      struct stackread *out)
{
	const struct py_offsets *off = &proc->off;
	__u8 win[PYSIGHT_FRAME_WINDOW];
	__u64 code, instr, at = *frame;
	__u32 check;
	int err;

	/* the frame's fields, not the window: the frame may end a chunk */
	memset(win, 0, sizeof(win));
	if (remote__mem_read(mem, *frame, win, off->frame_read_len ?
			 off->frame_read_len : sizeof(win)))
		return -ST_ERR_READ_FRAME;
	code = remote__u64(win, sizeof(win), off->frame_code) &
	       off->code_tag_mask;
	instr = remote__u64(win, sizeof(win), off->frame_instr);
	*frame = remote__u64(win, sizeof(win), off->frame_previous);
	if (pysight_loop_seen(l, *frame))
		return -ST_ERR_FRAME_LOOP;
	/* shim frames (C stack 3.12+, interpreter entry 3.14+) have no code */
	if (off->owner_cstack && off->frame_owner < PYSIGHT_FRAME_WINDOW &&
	    win[off->frame_owner] >= off->owner_cstack)
		return entry_mark(out, at);
	err = symbols__code_check_mem(mem, proc, code, &check);
	if (err && off->frame_model == PY_FRAMES_DIRECT)
		return 1;	/* 3.13+: f_executable may be None */
	if (err)
		return err == -ESTALE ? -ST_ERR_BAD_CODE : -ST_ERR_READ_CODE;
	if (out->n == PYSIGHT_MAX_FRAMES)
		return -ST_TRUNCATED;
	out->frames[out->n].code = code;
	out->frames[out->n].lasti = lasti_of(off, code, instr);
	out->frames[out->n].check = check;
	out->addr[out->n] = at;
	out->n++;
	if (off->frame_is_entry < PYSIGHT_FRAME_WINDOW &&
	    win[off->frame_is_entry])
		return entry_mark(out, at);
	return 1;
}

int stackread__frame(const struct remote_mem *mem, const struct py_proc *proc,
		     __u64 addr, struct stackread *out)
{
	struct pysight_loop l;
	uint64_t frame = addr;
	int n = out->n, ret;

	pysight_loop_start(&l, addr);
	ret = read_frame(mem, proc, &frame, &l, out);
	/* its caller is not walked: a loop back to it is no error here */
	if (ret == -ST_ERR_FRAME_LOOP)
		ret = 1;
	return ret < 0 ? ret : out->n == n;
}

/*
 * Is t still the thread state of the thread with this key?  Its id must
 * match, and it must still be linked (a freed one keeps its id): its
 * predecessor points to it, or the main interpreter's list starts at it.
 * As the BPF cache checks (tstate.bpf.h).
 */
static bool still_tstate(const struct remote_mem *mem,
			 const struct py_proc *proc, __u64 t, __u64 key)
{
	const struct py_offsets *off = &proc->off;
	__u16 id_off = off->match == PY_MATCH_PTHREAD ?
			       off->tstate_thread_id : off->tstate_native_thread_id;
	uint64_t id, prev, next, interp;

	if (remote__mem_read64(mem, t + id_off, &id) || id != key ||
	    remote__mem_read64(mem, t + off->tstate_prev, &prev))
		return false;
	if (prev)
		return !remote__mem_read64(mem, prev + off->tstate_next, &next) &&
		       next == t;
	return !remote__mem_read64(mem, proc->runtime_addr +
					    off->runtime_interpreters_head,
			       &interp) &&
	       interp &&
	       !remote__mem_read64(mem, interp + off->interp_threads_head, &next) &&
	       next == t;
}

int stackread__thread(pid_t pid, const struct py_proc *proc, __u64 thread_key,
		      struct stackread *out)
{
	return stackread__thread_at(pid, proc, thread_key, 0, out);
}

/* The frame the thread state at tstate runs now: 0, or -ST_ERR_READ_FRAME. */
static int current_frame(const struct remote_mem *mem,
			 const struct py_proc *proc, uint64_t tstate,
			 uint64_t *frame)
{
	const struct py_offsets *off = &proc->off;

	*frame = 0;
	if (remote__mem_read64(mem, tstate + off->tstate_frame, frame))
		return -ST_ERR_READ_FRAME;
	if (off->frame_model == PY_FRAMES_CFRAME && *frame &&
	    remote__mem_read64(mem, *frame + off->cframe_current_frame, frame))
		return -ST_ERR_READ_FRAME;
	return 0;
}

/* The walk, over mem: a live process, or copies of what it read before. */
static int walk(const struct remote_mem *mem, const struct py_proc *proc,
		__u64 thread_key, __u64 hint, struct stackread *out)
{
	uint64_t frame = 0;
	struct pysight_loop l;
	int ret, i;

	out->n = 0;
	out->tstate = 0;
	out->leaf = 0;
	out->again = false;
	ret = 0;
	if (hint && still_tstate(mem, proc, hint, thread_key))
		out->tstate = hint;
	else
		ret = find_tstate(mem, proc, thread_key, &out->tstate);
	if (!ret)
		ret = current_frame(mem, proc, out->tstate, &frame);
	if (ret)
		return out->status = -ret;
	out->leaf = frame;
	pysight_loop_start(&l, frame);
	/* one more than the limit, so a stack of exactly the limit is whole */
	for (i = 0, ret = 1; ret > 0 && frame && i <= PYSIGHT_MAX_FRAMES; i++)
		ret = read_frame(mem, proc, &frame, &l, out);
	out->status = ret < 0 ? -ret : ST_COMPLETE;
	if (out->status == ST_COMPLETE && !out->n)
		out->status = ST_IDLE;
	return out->status;
}

int stackread__thread_at(pid_t pid, const struct py_proc *proc,
			 __u64 thread_key, __u64 hint, struct stackread *out)
{
	struct remote_mem live = { .pid = pid };

	return walk(&live, proc, thread_key, hint, out);
}

/*
 * Regions this close are read as one: each costs the kernel a page
 * lookup and pin, and a frame's fields, its neighbours on the data stack
 * and a code object's parts often share a page.
 */
#define PLAN_GAP	256

/* What a thread's last read read, and the thread state it found. */
struct stackread_plan {
	__u64 tstate;
	struct remote_log log;
	void *buf;
	size_t size;
};

void stackread_plan__free(struct stackread_plan *p)
{
	if (!p)
		return;
	remote_log__free(&p->log);
	free(p->buf);
	free(p);
}

/*
 * The plan's regions read again at once, and walked: true when that gave
 * the stack as a live read would (every read the walk made was one of
 * them), false when the stack moved.
 */
static bool walk_again(pid_t pid, struct stackread_plan *p,
		       const struct py_proc *proc, __u64 thread_key,
		       struct stackread *out)
{
	struct remote_mem copies = { .pid = pid, .copies = p->log.regions,
				     .ncopies = p->log.n, .log = &p->log };
	size_t size = remote__size(p->log.regions, p->log.n);
	void *buf;

	if (!p->log.n || p->log.over)
		return false;
	if (size > p->size) {
		buf = realloc(p->buf, size);
		if (!buf)
			return false;
		p->buf = buf;
		p->size = size;
	}
	if (remote__read_all(pid, p->log.regions, p->log.n, p->buf, p->size))
		return false;
	/* a read the copies did not hold is a stack that moved, even where
	 * the walk takes a failed read as a frame to skip (3.13+) */
	p->log.missed = 0;
	walk(&copies, proc, thread_key, p->tstate, out);
	return !p->log.missed &&
	       (out->status == ST_COMPLETE || out->status == ST_IDLE ||
		out->status == ST_TRUNCATED);
}

static int planned_once(pid_t pid, const struct py_proc *proc,
			__u64 thread_key, __u64 hint,
			struct stackread_plan **plan, struct stackread *out)
{
	struct remote_mem live = { .pid = pid };
	struct stackread_plan *p = *plan;

	out->again = p && walk_again(pid, p, proc, thread_key, out);
	if (out->again)
		return out->status;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return walk(&live, proc, thread_key, 0, out);
		p->log.max = REMOTE_IOV_MAX;
		p->tstate = hint;
		*plan = p;
	}
	p->log.n = 0;
	p->log.over = false;
	live.log = &p->log;
	walk(&live, proc, thread_key, p->tstate, out);
	/* a read that had to walk the thread list to find its state read
	 * a region per thread before it: the next read, from the state
	 * found, plans what is worth reading again */
	if (!p->tstate || out->tstate != p->tstate)
		p->log.n = 0;
	remote_log__merge(&p->log, PLAN_GAP);
	p->tstate = out->tstate;
	return out->status;
}

/* Did the thread move while its stack was read?  Its frames are then
 * parts of two stacks: a thread off the CPU can be woken, and the frame
 * its first frame came from be another's (a 3.15 service's read gave its
 * handler's frames over the loop's select()). */
static bool moved(pid_t pid, const struct py_proc *proc,
		  const struct stackread *out)
{
	struct remote_mem live = { .pid = pid };
	uint64_t frame;

	return out->tstate && out->n &&
	       (current_frame(&live, proc, out->tstate, &frame) ||
		frame != out->leaf);
}

/* Reads of a thread that keeps moving, before it counts as torn. */
#define MOVED_TRIES 2

int stackread__thread_planned(pid_t pid, const struct py_proc *proc,
			      __u64 thread_key, __u64 hint,
			      struct stackread_plan **plan,
			      struct stackread *out)
{
	int i;

	for (i = 0; i < MOVED_TRIES; i++) {
		planned_once(pid, proc, thread_key, hint, plan, out);
		if (!moved(pid, proc, out))
			return out->status;
	}
	out->n = 0;
	return out->status = ST_ERR_READ_FRAME;
}

int stackread__gil_holder(pid_t pid, const struct py_proc *proc, __u64 *holder)
{
	const struct py_offsets *off = &proc->off;
	uint64_t interp = 0, gil = 0, last = 0;
	__u32 locked = 0;

	*holder = 0;
	if (off->runtime_gil != PY_OFF_NONE)
		gil = proc->runtime_addr + off->runtime_gil;
	else if (off->interp_gil_ptr != PY_OFF_NONE &&
		 (remote__read64(pid, proc->runtime_addr +
				 off->runtime_interpreters_head, &interp) ||
		  !interp ||
		  remote__read64(pid, interp + off->interp_gil_ptr, &gil)))
		return -EFAULT;
	if (!gil)
		return -ENOENT;
	if (remote__read(pid, gil + off->gil_locked, &locked, sizeof(locked)))
		return -EFAULT;
	if (locked && remote__read64(pid, gil + off->gil_last_holder, &last))
		return -EFAULT;
	*holder = last;
	return 0;
}

/* The same frames, by code object: what a stack's shape is. */
static bool same_shape(const struct stackread *a, const struct stackread *b)
{
	int i;

	if (a->status != b->status || a->n != b->n || a->tstate != b->tstate)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->frames[i].code != b->frames[i].code)
			return false;
	return true;
}

int stackread__stable(pid_t pid, const struct py_proc *proc, __u64 thread_key,
		      struct stackread *out, struct stackread *scratch,
		      int tries)
{
	int i;

	stackread__thread(pid, proc, thread_key, out);
	for (i = 0; i < tries; i++) {
		stackread__thread(pid, proc, thread_key, scratch);
		if (same_shape(out, scratch))
			return 0;
		memcpy(out, scratch, sizeof(*out));
	}
	return -EAGAIN;
}
