/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The frame walk, the code-object cache it checks, and the scratch slots. */
#ifndef __PYSIGHT_WALK_BPF_H
#define __PYSIGHT_WALK_BPF_H

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
 * good until the object's dealloc, which pysight_code_free reports.  This
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

/* Is addr the coroutine frame of a task _current_tasks named?  Then
 * that task is the sample's. */
static __always_inline bool current_match(struct frame_ctx *c, __u64 addr)
{
	int i;

	for (i = 0; i < PY_CURRENT_MAX; i++)
		if ((__u32)i < c->ncur && c->cur_frame[i] == addr) {
			c->found = c->cur_task[i];
			return true;
		}
	return false;
}

/*
 * --native: mark where a call of the eval loop began, after the Python
 * frames it ran (none yet: no mark).  The merge puts each run of frames
 * between marks in place of its _PyEval_EvalFrameDefault.
 */
static __always_inline int entry_mark(struct frame_ctx *c,
				      struct sample_buf *b)
{
	struct py_frame *f;

	if (!c->n)
		return 0;
	if (c->n >= PYSIGHT_MAX_FRAMES) {
		c->status = ST_TRUNCATED;
		return 1;
	}
	f = &b->frames[c->n & (PYSIGHT_MAX_FRAMES - 1)];
	f->code = 0;
	f->lasti = PY_LASTI_ENTRY;
	f->check = 0;
	c->hash = mix64(c->hash ^ (__u64)PY_LASTI_ENTRY);
	c->n++;
	return 0;
}

/* data: the scratch slot the walk's caller holds */
static long walk_frame(__u32 i, void *data)
{
	struct frame_ctx *c;
	struct sample_buf *b;
	struct py_frame *f;
	__u32 check = 0;
	__u64 code, instr, addr;
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
	addr = c->frame;
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
		return c->marks && !c->raw_only ? entry_mark(c, b) : 0;

	/* what same_stack() compares: the code's address stands for the
	 * object while no code was freed (code_frees) */
	c->raw = mix64(c->raw ^ code);
	c->raw = mix64(c->raw ^ instr);
	if (c->raw_only) {
		if (++c->n > PYSIGHT_MAX_FRAMES) {
			c->status = ST_TRUNCATED;
			return 1;
		}
		return 0;
	}

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
	if (c->marks && c->f_entry < PYSIGHT_FRAME_WINDOW && win[c->f_entry] &&
	    entry_mark(c, b))
		return 1;
	if (addr == c->task_frame) {
		c->task_at = c->n;
	} else if (c->ncur && current_match(c, addr)) {
		/* before 3.14: the leaf-most running task's; the frames
		 * below may be another task's that started it eagerly */
		c->task_at = c->n;
		c->ncur = 0;
		c->owner_gen = 0;
	} else if (c->owner_gen && c->f_owner < PYSIGHT_FRAME_WINDOW &&
		   win[c->f_owner] == c->owner_gen) {
		/* before 3.14: the root-most coroutine frame so far */
		c->outer = addr;
		c->task_at = c->n;
	}
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
 * stack on this CPU and would overwrite its buffers midway, so each level
 * of nesting takes a slot of its own, in scratch and in bulk.  What
 * interrupts runs to completion before the interrupted program goes on,
 * so a plain count is enough.  (The walks run in perf samples and at
 * sched_switch, with interrupts off: only an NMI-driven perf event could
 * nest today, but the slots cost nothing when unused.)
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
 * --asyncio before 3.14: the tasks asyncio's _current_tasks dict {loop:
 * task} holds now, and their coroutines' frames, into c.  No thread state
 * names its loop, so each is compared with the stack's frames.  A torn or
 * hostile dict can only fail to match: each value read is an address the
 * walk compares, and a read that fails ends the look.
 */
static __always_inline void current_tasks(const struct py_proc *proc,
					  struct frame_ctx *c)
{
	const struct py_offsets *off = &proc->off;
	__u8 log2, log2_index, kind;
	__u64 keys = 0, n = 0, at, size, task, coro;
	__u8 head[PY_KEYS_INDEX];
	int i;

	if (!proc->async_current ||
	    read_u64(proc->async_current + PY_DICT_KEYS, &keys) ||
	    bpf_probe_read_user(head, sizeof(head), (void *)keys))
		return;
	log2 = head[PY_KEYS_LOG2_SIZE];
	log2_index = head[PY_KEYS_LOG2_INDEX];
	kind = head[PY_KEYS_KIND];
	n = *(__u64 *)(head + PY_KEYS_NENTRIES);
	if (!pysight_keys_ok(log2, log2_index, kind))
		return;
	size = pysight_keys_entry(kind);
	at = keys + PY_KEYS_INDEX + (1ULL << log2_index);
	for (i = 0; i < PY_CURRENT_MAX; i++) {
		if ((__u64)i >= n)
			break;
		/* the value is an entry's last word; a deleted one's is 0 */
		task = 0;
		coro = 0;
		if (read_u64(at + i * size + size - 8, &task))
			break;
		if (!task || read_u64(task + off->task_coro, &coro) || !coro)
			continue;
		c->cur_frame[c->ncur & (PY_CURRENT_MAX - 1)] =
			coro + off->gen_iframe;
		c->cur_task[c->ncur & (PY_CURRENT_MAX - 1)] = task;
		c->ncur++;
	}
}

/*
 * Walk the frames from frame, the thread state's first, into b.  raw_only:
 * only hash their code and instruction fields into b->fc.raw, reading no
 * code object and keeping no frame.
 */
static __always_inline void walk_stack(struct sample_buf *b,
				       const struct py_proc *proc,
				       struct task_struct *task, __u32 tgid,
				       __u64 tstate, __u64 frame, bool raw_only,
				       __u64 task_frame)
{
	const struct py_offsets *off = &proc->off;
	struct frame_ctx *c = &b->fc;
	__u32 slot = b->slot;

	__builtin_memset(c, 0, sizeof(*c));
	c->frame = frame;
	c->leaf = frame;
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
	c->raw_only = raw_only;
	c->marks = native;
	c->f_entry = off->frame_is_entry;
	c->task_frame = task_frame;
	if ((proc->flags & PY_PROC_F_ASYNC_OUTER) && !raw_only) {
		c->owner_gen = off->owner_generator;
		current_tasks(proc, c);
	}
	c->tgid = tgid;
	read_bulk(off, tstate, frame, c, slot);
	c->status = ST_COMPLETE;

	/* one more than the limit, so a stack of exactly the limit is whole */
	bpf_loop(PYSIGHT_MAX_FRAMES + 1, walk_frame, &slot, 0);
}

/*
 * --asyncio: the frame of the coroutine of the task the thread state says
 * runs, or 0.  Its address alone: the walk compares frames with it, so a
 * stale or hostile value can only fail to match.
 */
static __always_inline __u64 running_task_frame(const struct py_proc *proc,
						__u64 tstate, __u64 *task,
						struct sample_event *ev)
{
	const struct py_offsets *off = &proc->off;
	__u64 coro = 0;

	*task = 0;
	if (!(proc->flags & PY_PROC_F_ASYNC) ||
	    read_u64(tstate + off->tstate_running_task, task) || !*task ||
	    read_u64(*task + off->task_coro, &coro) || !coro)
		return 0;
	/* what names it, now: a request's task may be gone when user
	 * space reads this (a failed read leaves 0) */
	read_u64(*task + off->task_name, &ev->task_name);
	read_u64(*task + off->task_awaited_by, &ev->task_by);
	return coro + off->gen_iframe;
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
	struct frame_ctx *c = &b->fc;
	__u64 tstate = 0, frame = 0, atask = 0, tframe;
	int err;

	b->ev.nframes = 0;
	b->ev.nnative = 0;
	b->ev.native_stop = NATIVE_NONE;
	b->ev.stack_hash = 0;
	b->ev.task = 0;
	b->ev.task_name = 0;
	b->ev.task_by = 0;
	b->ev.task_depth = 0;

	err = find_tstate(b, proc, task, tid, &tstate);
	b->tstate = tstate;
	if (!err)
		err = first_frame(proc, tstate, &frame);
	if (err) {
		b->ev.status = -err;
		return;
	}
	tframe = running_task_frame(proc, tstate, &atask, &b->ev);
	walk_stack(b, proc, task, tgid, tstate, frame, false, tframe);

	b->ev.task_flags = 0;
	if (c->found) {
		/* what names it, now, as for 3.14+ */
		atask = c->found;
		read_u64(atask + proc->off.task_name, &b->ev.task_name);
	}
	if (c->task_at) {
		b->ev.task = c->outer && !c->found ? c->outer : atask;
		b->ev.task_flags = c->outer && !c->found ? 0 : SAMPLE_TASK_OBJ;
		b->ev.task_depth = c->task_at;
	}
	if (c->cache_hits)
		count_n(CNT_CODE_CACHE_HIT, c->cache_hits);
	b->ev.status = c->status;
	if (c->status == ST_COMPLETE && c->n == 0)
		b->ev.status = ST_IDLE;
	b->ev.nframes = c->n;
	b->ev.stack_hash = c->n ? c->hash ^ c->status : 0;
}

#endif /* __PYSIGHT_WALK_BPF_H */
