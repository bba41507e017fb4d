/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --native: step from a native frame to its caller by the rows user
 * space compiled from each binary's .eh_frame (user/native/ehframe.c),
 * without frame pointers.  Per frame: the mapping that holds the pc (a
 * binary search over the process's sorted mappings), the row that holds
 * it (a binary search over the binary's rows), then the CFA from rsp,
 * rbp or the PLT's rule, the return address at CFA - 8, and rbp where
 * the row says it was saved.
 */
#ifndef __PYSIGHT_NATIVE_BPF_H
#define __PYSIGHT_NATIVE_BPF_H

#define NATIVE_ROWS_LOG2	24	/* a binary's rows: at most 2^24 */

/* Every binary's rows, each binary an extent: mapped by user space,
 * which places and frees the extents (user/native/rowpool.c). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_row);
	__uint(max_entries, 1);		/* user space sizes it with --native */
} native_rows SEC(".maps");

/* tgid -> its executable mappings, sorted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct native_maps);
	__uint(max_entries, 1);		/* user space sizes it with --native */
} native_procs SEC(".maps");

struct native_walk {
	const struct native_maps *maps;
	struct py_frame *out;	/* the sample's frames */
	struct pysight_unwind u;
	__u64 hash;
	__u32 at;		/* where the next goes in out */
	__u32 n;
	__u32 stop;		/* enum native_stop */
};

static __always_inline const struct native_mapping *
native_mapping(const struct native_maps *m, __u64 pc)
{
	__u32 lo = 0, hi = m->n, i;

	if (hi > NATIVE_MAPS_MAX)
		hi = NATIVE_MAPS_MAX;
	for (i = 0; i < 10 && lo < hi; i++) {	/* 2^9 = NATIVE_MAPS_MAX */
		__u32 mid = (lo + hi) / 2;
		const struct native_mapping *x;

		if (mid >= NATIVE_MAPS_MAX)
			return NULL;
		x = &m->m[mid];
		if (pc < x->start)
			hi = mid;
		else if (pc >= x->end)
			lo = mid + 1;
		else
			return x;
	}
	return NULL;
}

/* The row that holds vaddr: the last whose pc is at or below it. */
static __always_inline const struct unwind_row *
native_row(const struct native_mapping *x, __u64 vaddr)
{
	__u32 lo = x->row_first, hi = x->row_first + x->row_n, i;
	const struct unwind_row *r;

	r = bpf_map_lookup_elem(&native_rows, &lo);
	if (!r || !x->row_n || vaddr < r->pc || vaddr > 0xffffffffULL)
		return NULL;
	for (i = 0; i < NATIVE_ROWS_LOG2 && hi - lo > 1; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		r = bpf_map_lookup_elem(&native_rows, &mid);
		if (!r)
			return NULL;
		if (r->pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return bpf_map_lookup_elem(&native_rows, &lo);
}

static __always_inline long native_end(struct native_walk *w, __u32 why)
{
	w->stop = why;
	return 1;
}

/* One frame: its pc out, then the registers stepped to its caller's. */
static long native_step(__u32 i, void *ctx)
{
	struct native_walk *w = ctx;
	const struct native_mapping *x;
	const struct unwind_row *r = NULL;
	struct unwind_row row;
	__u64 look, cfa = 0, ra = 0, bp = 0;
	struct py_frame *f;
	__u32 stop;

	if (w->n >= PYSIGHT_NATIVE_FRAMES ||
	    w->at >= PYSIGHT_MAX_FRAMES + PYSIGHT_NATIVE_FRAMES)
		return native_end(w, NATIVE_DEEP);
	f = &w->out[w->at];
	f->code = w->u.pc;
	f->lasti = PY_LASTI_NATIVE;
	f->check = 0;
	w->hash = mix64(w->hash ^ w->u.pc);
	w->at++;
	w->n++;
	look = pysight_unwind_lookup(w->u.pc, i);
	x = native_mapping(w->maps, look);
	if (x)
		r = native_row(x, look - x->start + x->vaddr);
	/* one row on the stack, whichever gave it: a pointer that may be
	 * the map's or the stack's doubles the verifier's paths */
	if (r)
		row = *r;
	/* no rule here (no row, or a gap between FDEs): frame pointers */
	if ((!r || row.cfa == UNW_CFA_NONE) && !pysight_unwind_fp(&w->u, &row))
		return native_end(w, x ? NATIVE_NO_ROW : NATIVE_NO_MAPPING);
	stop = pysight_unwind_cfa(&row, &w->u, &cfa);
	if (stop)
		return native_end(w, stop);
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)) ||
	    (row.rbp == UNW_RBP_CFA &&
	     bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + row.rbp_off))))
		return native_end(w, NATIVE_READ);
	stop = pysight_unwind_next(&row, &w->u, cfa, ra, bp);
	return stop ? native_end(w, stop) : 0;
}

/*
 * The current task's native stack, leaf first, after b's Python frames:
 * from the user registers the perf event interrupted when it was in
 * user mode, else those saved as it entered the kernel.  The stack's
 * hash takes the pcs in.
 */
static __always_inline void native_stack(struct sample_buf *b,
					 struct bpf_perf_event_data *ctx,
					 struct task_struct *task, __u32 tgid)
{
	struct native_walk w = {};
	struct pt_regs *regs;

	b->ev.nnative = 0;
	b->ev.native_stop = NATIVE_NONE;
	w.maps = bpf_map_lookup_elem(&native_procs, &tgid);
	if (!w.maps)
		return;
	/* the context is read in whole words (a narrower load of cs is
	 * refused): user mode is CPL 3 */
	if ((*(volatile __u64 *)&ctx->regs.cs & 3) == 3) {
		w.u.pc = ctx->regs.ip;
		w.u.sp = ctx->regs.sp;
		w.u.bp = ctx->regs.bp;
	} else {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		if (!regs)
			return;
		w.u.pc = BPF_CORE_READ(regs, ip);
		w.u.sp = BPF_CORE_READ(regs, sp);
		w.u.bp = BPF_CORE_READ(regs, bp);
	}
	w.out = b->frames;
	w.at = b->ev.nframes;
	w.hash = b->ev.stack_hash;
	bpf_loop(PYSIGHT_NATIVE_FRAMES + 1, native_step, &w, 0);
	b->ev.nnative = w.n;
	b->ev.native_stop = w.stop;
	if (w.n)
		b->ev.stack_hash = w.hash;
}

#endif /* __PYSIGHT_NATIVE_BPF_H */
