/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Every record BPF puts in the ring buffer for user space. */
#ifndef __PYSIGHT_EVENTS_BPF_H
#define __PYSIGHT_EVENTS_BPF_H

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

/*
 * b's stack as ev_kind: a sample (EV_SAMPLE), or its frames alone
 * (EV_STACK), which is sent only when user space has not had them.
 * 0: sent, or not needed; -1: the ring was full.
 */
static __always_inline int send_stack(struct sample_buf *b, __u32 ev_kind,
				      __u32 tgid, __u32 tid, __u8 kind,
				      __u64 weight, __s32 kstack)
{
	__u64 size = sizeof(b->ev);
	__u64 hash = b->ev.stack_hash;
	__u8 one = 1;
	__u32 n = b->ev.nframes, nn = b->ev.nnative;

	b->ev.has_frames = 0;
	if (n && !bpf_map_lookup_elem(&stacks_seen, &hash)) {
		b->ev.has_frames = 1;
		if (n > PYSIGHT_MAX_FRAMES)
			n = PYSIGHT_MAX_FRAMES;
		if (nn > PYSIGHT_NATIVE_FRAMES)
			nn = PYSIGHT_NATIVE_FRAMES;
		size += (__u64)(n + nn) * sizeof(struct py_frame);
	}
	if (ev_kind == EV_STACK && !b->ev.has_frames)
		return 0;
	fill_header(&b->ev.hdr, ev_kind, tgid, tid);
	b->ev.kind = kind;
	b->ev.weight = weight;
	b->ev.kstack = kstack;
	b->ev.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(b->ev.comm, sizeof(b->ev.comm));
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
		return -1;
	}
	return 0;
}

static __always_inline void emit_sample(struct sample_buf *b, __u32 tgid,
					__u32 tid, __u8 kind, __u64 weight,
					__s32 kstack)
{
	send_stack(b, EV_SAMPLE, tgid, tid, kind, weight, kstack);
}

static __always_inline void emit_proc_event(__u32 kind, __u32 tgid, __u32 tid)
{
	struct pid_event *e = reserve_event(sizeof(*e), kind, tgid, tid);

	if (!e)
		return;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
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

#endif /* __PYSIGHT_EVENTS_BPF_H */
