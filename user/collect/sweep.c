// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampled sweep's weights.  Between two ticks the scheduler says
 * exactly how long a thread ran (se.sum_exec_runtime) and waited on a run
 * queue (sched_info.run_delay); the rest of the tick it was blocked.  So
 * each thread's CPU, run-queue and total time are exact, and only where
 * the blocked part goes is estimated: to the blocks seen at the two ticks
 * around it.  Simulated on the 20/50/30 ms burn/sleep/lock cycle at
 * 100 Hz, giving all of it to the block seen at the later tick was off by
 * 6.1 points (half a tick per transition, always the same way); splitting
 * it between the two is unbiased.
 */
#include <stdlib.h>
#include <uthash.h>

#include "sweep.h"

/* What a tick saw of a thread. */
struct obs {
	const void *stack;	/* NULL: not read (on the CPU) */
	__u8 kind;		/* enum sample_kind, KIND_CPU on a CPU */
	__u64 off_since;	/* left the CPU at (ktime ns), 0: not known */
};

struct sweep_thread {
	__u32 tid;
	__u64 start_time;	/* a tid used again is another thread */
	bool met;		/* by the tick in progress */
	__u64 at_ns, ran_ns, run_delay_ns;	/* at the last record */
	__u64 switches, vswitches;		/* at the last record */
	struct obs prev;	/* what the last tick saw */
	struct obs last_block;	/* the last block a tick saw, */
	__u64 last_block_switches;	/* at this switch count */
	const void *stack;	/* the last stack read (NULL: none there), */
	__u64 stack_switches;	/* at this switch count */
	__u64 read_at;		/* r->now when it was read */
	bool read;		/* stack was read */
	bool stable;		/* the same as the read before it */
	__u8 stack_kind;	/* r->kind it was read in */
	/* the stack read running, for a wait it was preempted in: kept
	 * apart, so that a block not read again does not fall under it */
	const void *run_stack;
	__u64 run_switches, run_read_at;
	void *data;		/* the collector's */
	/* blocked time not given yet: between two ticks that saw no block,
	 * or less than none (see sweep__account) */
	__s64 carry_blocked;
	__u64 carry_rq;		/* run-queue time with no stack yet */
	UT_hash_handle hh;
};

struct sweep {
	__u64 since_ns;
	__u64 reread_ns;	/* sweep__set_reread */
	void (*free_data)(void *);
	struct sweep_thread *threads;
};

struct sweep *sweep__new(uint64_t since_ns, void (*free_data)(void *))
{
	struct sweep *w = calloc(1, sizeof(*w));

	if (w) {
		w->since_ns = since_ns;
		w->free_data = free_data;
	}
	return w;
}

static void forget(struct sweep *w, struct sweep_thread *t)
{
	HASH_DEL(w->threads, t);
	if (w->free_data)
		w->free_data(t->data);
	free(t);
}

void sweep__free(struct sweep *w)
{
	struct sweep_thread *t, *tmp;

	if (!w)
		return;
	HASH_ITER(hh, w->threads, t, tmp)
		forget(w, t);
	free(w);
}

void sweep__begin(struct sweep *w)
{
	struct sweep_thread *t, *tmp;

	HASH_ITER(hh, w->threads, t, tmp)
		t->met = false;
}

struct sweep_thread *sweep__thread(struct sweep *w,
				   const struct thread_record *r)
{
	struct sweep_thread *t;

	HASH_FIND(hh, w->threads, &r->tid, sizeof(r->tid), t);
	if (t && t->start_time != r->start_time) {
		forget(w, t);
		t = NULL;
	}
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->tid = r->tid;
		t->start_time = r->start_time;
		/* one started while we record: all its life is ours; one
		 * found running is accounted from now */
		if (r->start_time > w->since_ns) {
			t->at_ns = r->start_time;
		} else {
			t->at_ns = r->now;
			t->ran_ns = r->ran_ns;
			t->run_delay_ns = r->run_delay_ns;
		}
		HASH_ADD(hh, w->threads, tid, sizeof(t->tid), t);
	}
	t->met = true;
	return t;
}

/*
 * Is r's thread running, not having blocked since its last record (ran_on)?
 * And did it wait for a CPU since (preempted)?
 * Then the wait was the running code's, preempted: a thread seen running
 * at both ends of it has its stack read for it.  Given to the last block
 * read instead, a burn preempted on a busy host went to the lock wait
 * before it (the 20/50/30 ms cycle: burn 1.5 points short, lock over).
 */
static bool ran_on(const struct sweep_thread *t,
		   const struct thread_record *r)
{
	return r->on_cpu && r->vswitches == t->vswitches;
}

static bool preempted(const struct sweep_thread *t,
		      const struct thread_record *r)
{
	return ran_on(t, r) && t->read && r->run_delay_ns > t->run_delay_ns;
}

/*
 * A blocked thread that moved is read again unless its last two reads
 * gave the same stack, neither in the run queue, and the last is
 * younger than reread_ns: a read races with the thread, which may have
 * woken and gone on by then (the agent's burner came out asleep under
 * the heavy() it burns in), and a stack read once must not stand for a
 * second of blocks.  A thread read running is read again for a
 * preemption at most every reread_ns.
 */
bool sweep__needs_stack(const struct sweep *w, const struct sweep_thread *t,
			const struct thread_record *r)
{
	if (r->on_cpu)
		return preempted(t, r) &&
		       (!t->run_stack || (t->run_switches != r->switches &&
					  r->now - t->run_read_at >= w->reread_ns));
	return !t->read || (t->stack_switches != r->switches &&
			    (!t->stable || r->now - t->read_at >= w->reread_ns));
}

void sweep__set_reread(struct sweep *w, uint64_t ns)
{
	w->reread_ns = ns;
}

void **sweep__data(struct sweep_thread *t)
{
	return &t->data;
}

void sweep__set_stack(struct sweep_thread *t, const struct thread_record *r,
		      const void *stack)
{
	if (r->on_cpu) {
		t->run_stack = stack;
		t->run_switches = r->switches;
		t->run_read_at = r->now;
		return;
	}
	/* a thread in the run queue was preempted in its running code (or
	 * woken, not yet run): two such reads alike say nothing of where
	 * it blocks.  Counted, a burner preempted twice in heavy() had its
	 * sleeps of the next second weigh under heavy() (the agent's
	 * test_wall_mode_exports_off_cpu_causes, under load). */
	t->stable = t->read && stack == t->stack &&
		    r->kind != KIND_RUNQUEUE && t->stack_kind != KIND_RUNQUEUE;
	t->stack_kind = r->kind;
	t->stack = stack;
	t->stack_switches = r->switches;
	t->read_at = r->now;
	t->read = true;
}

static bool is_blocked(const struct obs *o)
{
	return o->stack && o->kind != KIND_CPU && o->kind != KIND_RUNQUEUE;
}

/* A counter's growth; 0 when it went back (it never should). */
static __u64 grew(__u64 now, __u64 then)
{
	return now > then ? now - then : 0;
}

/*
 * The blocked part of a tick, with what is carried.  Only a tick that
 * sees the thread blocked gives it out: there its counts are exact (a
 * running thread's CPU time lags by up to a scheduler tick, a waiting
 * one's run-queue wait until it runs), so what the ticks between say is
 * carried to it.  It goes whole to the block when the last block seen is
 * the same one (no switch since).  Else the new block has its head, from
 * when the thread left the CPU (off_since), and the one before the rest;
 * when that time is not known, half goes to each: the tail of the one
 * and the head of the other have the same expected length (the halves
 * were 0.4-0.6 points off on the cycle at 100 Hz in the bench).  Giving the
 * rest of a tick that saw the thread running to the block before made
 * the lag a phantom tail of it: 20/50/30 ms came out 47.5/32.2 at 100 Hz
 * in test_sweep.
 */
static int account_blocked(struct sweep_thread *t, const struct obs *cur,
			   __s64 ns, __u64 switches, __u64 now,
			   sweep_add_fn add, void *ctx)
{
	__s64 all = ns + t->carry_blocked;
	const struct obs *last = &t->last_block;
	int err;

	t->carry_blocked = all;
	if (!is_blocked(cur))
		return 0;
	if (all > 0) {
		t->carry_blocked = 0;
		if (is_blocked(last) && t->last_block_switches != switches) {
			__s64 head = all / 2;

			if (cur->off_since && cur->off_since <= now)
				head = (__s64)(now - cur->off_since) < all ?
				       (__s64)(now - cur->off_since) : all;
			err = add(ctx, last->stack, last->kind,
				  (__u64)(all - head));
			all = head;
			if (err)
				return err;
		}
		err = add(ctx, cur->stack, cur->kind, (__u64)all);
		if (err)
			return err;
	}
	t->last_block = *cur;
	t->last_block_switches = switches;
	return 0;
}

/*
 * Run-queue time.  A thread waits for a CPU after each wake from a block
 * and after each preemption, and the switch counts say how many of each
 * there were: the waits' share that followed blocks goes to the block
 * seen (the last, else this tick's), as if each wait were as long.  An
 * event loop blocks in select() many times a tick: a tick that found it
 * preempted in a handler gave the handler the wakes' waits too (an
 * aiohttp service's 2 ms handler: 8% run-queue time under load, 0.8% by
 * its own clock).
 *
 * The rest goes under the stack seen waiting, else the one read running
 * for a preemption, else the block the last record saw (woken, a thread
 * waits for a CPU before it runs: an event loop's wake from epoll_wait
 * went to the handler it then ran, 1.5-5.6 points of a 2 ms burn's CPU
 * under load), else the last one read.
 */
static int account_rq(struct sweep_thread *t, const struct obs *cur, __u64 ns,
		      bool pre, __u64 wakes, __u64 preempts,
		      sweep_add_fn add, void *ctx)
{
	const struct obs *block = is_blocked(&t->last_block) ?
				  &t->last_block : is_blocked(cur) ? cur : NULL;
	const void *stack = NULL;
	__u64 woken;
	int err;

	ns += t->carry_rq;
	if (!ns)
		return 0;
	t->carry_rq = 0;
	if (block && wakes) {
		woken = preempts ? (__u64)((double)ns * wakes /
					   (wakes + preempts)) : ns;
		err = add(ctx, block->stack, KIND_RUNQUEUE, woken);
		if (err)
			return err;
		ns -= woken;
		if (!ns)
			return 0;
	}
	if (cur->kind == KIND_RUNQUEUE && cur->stack)
		stack = cur->stack;
	else if (t->prev.kind == KIND_RUNQUEUE && t->prev.stack)
		stack = t->prev.stack;
	else if (pre && t->run_stack)
		stack = t->run_stack;
	else if (t->prev.kind != KIND_CPU && t->prev.stack)
		stack = t->prev.stack;
	else
		stack = cur->stack ? cur->stack : t->stack;
	if (!stack) {
		t->carry_rq = ns;
		return 0;
	}
	return add(ctx, stack, KIND_RUNQUEUE, ns);
}

/* The weight since the last record, the thread seen off the CPU under
 * stack. */
static int account(struct sweep_thread *t, const struct thread_record *r,
		   const void *stack, sweep_add_fn add, void *ctx)
{
	struct obs cur = { NULL, r->on_cpu ? KIND_CPU : r->kind,
			   r->on_cpu ? 0 : r->off_since };
	__u64 dt, cpu, rq;
	__s64 blocked;
	int err;

	if (!r->on_cpu)
		cur.stack = stack;
	dt = grew(r->now, t->at_ns);
	cpu = grew(r->ran_ns, t->ran_ns);
	rq = grew(r->run_delay_ns, t->run_delay_ns);
	/*
	 * A running thread's sum_exec_runtime lags its CPU time by up to a
	 * scheduler tick (4 ms at HZ=250), and run_delay a waiting thread's
	 * wait until it runs: so a tick's blocked rest can come out too
	 * large, and the next one's below zero.  Clamping that at zero put
	 * the worker of the 20/50/30 ms cycle 3.5-4.5% over its own clock;
	 * it is carried instead (account_blocked).
	 */
	blocked = (__s64)dt - (__s64)cpu - (__s64)rq;
	err = account_rq(t, &cur, rq, ran_on(t, r),
			 grew(r->vswitches, t->vswitches),
			 grew(r->switches - r->vswitches,
			      t->switches - t->vswitches), add, ctx);
	if (!err)
		err = account_blocked(t, &cur, blocked, r->switches, r->now,
				      add, ctx);
	t->at_ns = r->now;
	t->ran_ns = r->ran_ns;
	t->run_delay_ns = r->run_delay_ns;
	t->switches = r->switches;
	t->vswitches = r->vswitches;
	t->prev = cur;
	return err;
}

/*
 * The time since the thread's last record that the sweep found it
 * unchanged in (up to r->same_until): the last record's state carried on,
 * accounted as a record like it at that time.  Only the rest, since the
 * last pass that found it so, is a transition to split.  Without this a
 * thread reported only when it moves had its 50 ms sleep split half and
 * half with the lock wait that followed (sleep 39%, lock 38% of a
 * 20/50/30 ms cycle).  Its counts then are its last record's.
 */
static int account_same(struct sweep_thread *t, const struct thread_record *r,
			sweep_add_fn add, void *ctx)
{
	struct thread_record same = *r;

	if (r->same_until <= t->at_ns || r->same_until > r->now)
		return 0;
	same.now = r->same_until;
	same.same_until = 0;
	same.off_since = 0;	/* r's is the block it moved to */
	same.switches = t->switches;
	same.vswitches = t->vswitches;
	same.on_cpu = t->prev.kind == KIND_CPU;
	same.kind = t->prev.kind;
	/* the counts as they were: a running thread's time is carried to
	 * the next block seen (account_blocked), with its lag; counting its
	 * run time here, from a count that lags by up to a scheduler tick,
	 * took that lag from the next block (a last sleep 3-9 ms short) */
	same.ran_ns = t->ran_ns;
	same.run_delay_ns = t->run_delay_ns;
	return account(t, &same, t->prev.stack, add, ctx);
}

int sweep__account(struct sweep_thread *t, const struct thread_record *r,
		   sweep_add_fn add, void *ctx)
{
	int err = account_same(t, r, add, ctx);

	return err ? err : account(t, r, t->stack, add, ctx);
}

int sweep__final(struct sweep *w, struct sweep_thread *t,
		 const struct thread_record *r, sweep_add_fn add, void *ctx)
{
	const struct obs last = t->last_block;
	__s64 rest;
	int err;

	err = sweep__account(t, r, add, ctx);
	rest = t->carry_blocked;
	forget(w, t);
	if (err || rest <= 0 || !is_blocked(&last))
		return err;
	return add(ctx, last.stack, last.kind, (__u64)rest);
}

void sweep__end(struct sweep *w)
{
	struct sweep_thread *t, *tmp;

	HASH_ITER(hh, w->threads, t, tmp) {
		if (!t->met)
			forget(w, t);
	}
}

void sweep__forget_stacks(struct sweep *w)
{
	struct sweep_thread *t, *tmp;

	HASH_ITER(hh, w->threads, t, tmp) {
		t->stack = NULL;
		t->run_stack = NULL;
		t->read = false;
		t->stable = false;
		t->prev.stack = NULL;
		t->last_block.stack = NULL;
	}
}

/* what the budget may bank: 250 ms of time's worth (1.7 ms of CPU at
 * the default duty, a few ticks that read many stacks) */
#define SWEEP_BANK_NS	250000000ULL

uint64_t sweep__wait(struct sweep_budget *b, uint64_t now, uint64_t cpu_ns,
		     uint64_t tick_ns, unsigned int duty, double u,
		     bool *slowed)
{
	int64_t bank = (int64_t)(SWEEP_BANK_NS / duty);
	uint64_t mean = tick_ns;

	if (!b->at_ns)
		b->credit_ns = bank;
	else if (now > b->at_ns)
		b->credit_ns += (int64_t)((now - b->at_ns) / duty);
	b->at_ns = now;
	if (b->credit_ns > bank)
		b->credit_ns = bank;
	b->credit_ns -= (int64_t)cpu_ns;
	*slowed = b->credit_ns < 0 &&
		  (uint64_t)-b->credit_ns * duty > tick_ns;
	if (*slowed)
		mean = (uint64_t)-b->credit_ns * duty;
	return (uint64_t)(u * (double)mean);
}
