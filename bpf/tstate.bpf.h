/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Finding a thread's PyThreadState, and the cache that saves the walk. */
#ifndef __PYSIGHT_TSTATE_BPF_H
#define __PYSIGHT_TSTATE_BPF_H

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

#endif /* __PYSIGHT_TSTATE_BPF_H */
