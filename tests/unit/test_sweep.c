// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampled sweep's weights against a simulated thread whose every
 * nanosecond is known: the 20/50/30 ms burn/sleep/lock cycle, ticks at
 * jittered times, the scheduler's counts as the iterator reads them.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sweep.h"

#define MS		1000000ULL
#define CYCLE		(100 * MS)

static const char SLEEP_STACK[] = "sleep", LOCK_STACK[] = "lock";

struct sim {
	__u64 ran;		/* the count last reported: it never goes back */
	__u64 w[KIND__MAX];	/* weight given per cause */
	__u64 wrong;		/* weight under the other block's stack */
	int reads;
};

/* burn [0, 20), sleep [20, 70), lock [70, 100) of each 100 ms */
static int phase_of(__u64 t)
{
	__u64 p = t % CYCLE;

	return p < 20 * MS ? KIND_CPU : p < 70 * MS ? KIND_SLEEP : KIND_LOCK;
}

static __u64 ran_at(__u64 t)
{
	__u64 p = t % CYCLE;

	return t / CYCLE * 20 * MS + (p < 20 * MS ? p : 20 * MS);
}

static int add(void *ctx, const void *stack, int kind, uint64_t ns)
{
	struct sim *s = ctx;

	s->w[kind] += ns;
	if ((kind == KIND_SLEEP && stack != SLEEP_STACK) ||
	    (kind == KIND_LOCK && stack != LOCK_STACK))
		s->wrong += ns;
	return 0;
}

static void record_at(struct sim *s, struct thread_record *r, __u64 t,
		      __u64 lag, bool off_since)
{
	int k = phase_of(t);
	__u64 ran = ran_at(t) > lag && k == KIND_CPU ? ran_at(t) - lag :
						     ran_at(t);

	memset(r, 0, sizeof(*r));
	r->tid = 7;
	r->now = t;
	r->on_cpu = k == KIND_CPU;
	r->kind = k;
	/* a running thread's count lags: it moves at ticks and switches */
	s->ran = ran > s->ran ? ran : s->ran;
	r->ran_ns = s->ran;
	r->switches = t / CYCLE * 3 + (k == KIND_CPU ? 0 : k == KIND_SLEEP ? 1 : 2);
	/* when it left the CPU, as BPF works it out (sweep_off_since) */
	if (off_since && k != KIND_CPU)
		r->off_since = t / CYCLE * CYCLE + (k == KIND_SLEEP ? 20 : 70) * MS;
}

/*
 * What BPF reports of the thread (sweep_thread in bpf/sweep.bpf.h): with
 * moved, a record only when its switches or state changed since the last
 * one, or at a tick over all threads (every second); the last tick that
 * found it unchanged goes with the next record.  Returns whether to
 * report r, and whether this tick is over all threads.
 */
struct bpf_side {
	__u64 switches, same_until, next_all;
	int kind;
};

static bool reported(struct bpf_side *b, struct thread_record *r, bool moved,
		     bool last, bool *all)
{
	bool same = r->switches == b->switches && r->kind == b->kind;

	*all = !moved || last || r->now >= b->next_all;
	if (!moved)
		return true;
	if (same)
		b->same_until = r->now;
	if (same && !*all)
		return false;
	r->same_until = b->same_until;
	b->same_until = 0;
	b->switches = r->switches;
	b->kind = r->kind;
	if (*all)
		b->next_all = r->now + 1000 * MS;
	return true;
}

/* Sweep seconds of the cycle at hz; CPU weight is the perf samples'. */
static void run(struct sim *s, double hz, double seconds, __u64 lag,
		bool moved, bool off_since)
{
	struct sweep *w = sweep__new(0, NULL);
	struct bpf_side b = { ~0ULL, 0, 0, -1 };
	struct thread_record r;
	struct sweep_thread *t;
	__u64 now = 1, end = (__u64)(seconds * 1e9);
	unsigned int seed = 1;
	bool all;

	memset(s, 0, sizeof(*s));
	while (w) {
		record_at(s, &r, now, (now * 2654435761ULL) % (lag + 1),
			  off_since);
		if (!reported(&b, &r, moved, now >= end, &all))
			goto next;
		if (all)
			sweep__begin(w);
		t = sweep__thread(w, &r);
		if (sweep__needs_stack(w, t, &r)) {
			s->reads++;
			sweep__set_stack(t, &r, r.kind == KIND_SLEEP ?
					 SLEEP_STACK : LOCK_STACK);
		}
		sweep__account(t, &r, add, s);
		if (all)
			sweep__end(w);
next:
		if (now >= end)
			break;
		now += (__u64)(1e9 / hz * (0.5 + rand_r(&seed) / (RAND_MAX + 1.0)));
		if (now > end)
			now = end;
	}
	sweep__free(w);
}

/*
 * The cycle at hz; with off_since, each block's switch-out time known.
 * Split within max_pp points of the thread's time: without it each
 * transition is split half and half, which is right on average only
 * (0.75 points with this seed at 100 Hz; 0.0-0.2 with seeds 2 to 4).
 */
static void test_cycle(double hz, __u64 lag, bool moved, bool off_since,
		       double max_pp)
{
	double seconds = 20, total;
	struct sim s;

	run(&s, hz, seconds, lag, moved, off_since);
	total = (double)s.w[KIND_SLEEP] + s.w[KIND_LOCK];
	/* blocked time in all is exact, 80 ms of each 100, but for what
	 * the ticks after the last block carry (the run ends burning: at
	 * most 20 ms of its last lock, and the lag) */
	CHECK(total >= 0.8 * seconds * 1e9 - 20 * MS - lag &&
	      total <= 0.8 * seconds * 1e9 + 1,
	      "%.0f Hz, lag %llu: blocked %.6f s of %.6f", hz,
	      (unsigned long long)lag, total / 1e9, 0.8 * seconds);
	/* and split 50/30 */
	CHECK(fabs(100 * s.w[KIND_SLEEP] / (seconds * 1e9) - 50) <= max_pp,
	      "%.0f Hz%s: sleep %.3f%%", hz, off_since ? " (off_since)" : "",
	      100 * s.w[KIND_SLEEP] / (seconds * 1e9));
	CHECK(fabs(100 * s.w[KIND_LOCK] / (seconds * 1e9) - 30) <= max_pp,
	      "%.0f Hz%s: lock %.3f%%", hz, off_since ? " (off_since)" : "",
	      100 * s.w[KIND_LOCK] / (seconds * 1e9));
	CHECK(s.wrong == 0, "%llu ns under the other stack",
	      (unsigned long long)s.wrong);
}

/* A thread blocked all along: one stack read, all of its time. */
static void test_blocked_all_along(void)
{
	struct sweep *w = sweep__new(0, NULL);
	struct thread_record r;
	struct sweep_thread *t;
	struct sim s = {};
	int i;

	memset(&r, 0, sizeof(r));
	r.tid = 9;
	r.kind = KIND_LOCK;
	for (i = 0; w && i <= 1000; i++) {
		r.now = 1 + i * 10 * MS;
		sweep__begin(w);
		t = sweep__thread(w, &r);
		if (sweep__needs_stack(w, t, &r)) {
			s.reads++;
			sweep__set_stack(t, &r, LOCK_STACK);
		}
		sweep__account(t, &r, add, &s);
		sweep__end(w);
	}
	CHECK(s.reads == 1, "%d reads", s.reads);
	CHECK(s.w[KIND_LOCK] == 1000 * 10 * MS, "%llu ns",
	      (unsigned long long)s.w[KIND_LOCK]);
	sweep__free(w);
}

/*
 * A thread not met by a tick has exited: it is forgotten.  A thread met
 * later under the same tid (the tid reused) is another one: its state is
 * new, with no stack read, and it is accounted from its own start, not
 * from the old thread's last tick.  Kept, it would be read as the old
 * one: no stack read (same switch count), and the old one's lock wait
 * weighing the new one's sleep.
 */
/* A thread met first at 10 ms, waiting on a lock, its stack read. */
static struct sweep_thread *met_in_lock(struct sweep *w,
					struct thread_record *r, __u32 tid)
{
	struct sweep_thread *t;

	memset(r, 0, sizeof(*r));
	r->tid = tid;
	r->kind = KIND_LOCK;
	r->now = 10 * MS;
	t = w ? sweep__thread(w, r) : NULL;
	if (!t) {
		CHECK(0, "no sweep");
		return NULL;
	}
	sweep__set_stack(t, r, LOCK_STACK);
	return t;
}

static int freed;

static void count_free(void *data)
{
	freed += data != NULL;
}

static void test_forgets_exited(void)
{
	struct sweep *w = sweep__new(0, count_free);
	struct thread_record r;
	struct sweep_thread *t;
	struct sim s = {};

	sweep__begin(w);
	t = met_in_lock(w, &r, 11);
	if (!t) {
		sweep__free(w);
		return;
	}
	*sweep__data(t) = &s;		/* what the collector keeps */
	sweep__account(t, &r, add, &s);
	sweep__end(w);

	sweep__begin(w);		/* the thread exited: not met */
	sweep__end(w);
	CHECK(freed == 1, "the collector's data freed %d times", freed);

	/* tid 11 again: started at 25 ms, asleep since, at the 30 ms tick */
	r.kind = KIND_SLEEP;
	r.start_time = 25 * MS;
	r.now = 30 * MS;
	sweep__begin(w);
	t = sweep__thread(w, &r);
	CHECK(t && *sweep__data(t) == NULL, "the old thread's state was kept");
	CHECK(t && sweep__needs_stack(w, t, &r), "the new thread's stack is not read");
	if (t && sweep__needs_stack(w, t, &r))
		sweep__set_stack(t, &r, SLEEP_STACK);
	if (t)
		sweep__account(t, &r, add, &s);
	sweep__end(w);
	CHECK(s.w[KIND_LOCK] == 0 && s.w[KIND_SLEEP] == 5 * MS && !s.wrong,
	      "lock %llu ns, sleep %llu ns, %llu ns under the other stack",
	      (unsigned long long)s.w[KIND_LOCK],
	      (unsigned long long)s.w[KIND_SLEEP],
	      (unsigned long long)s.wrong);
	sweep__free(w);
}

/*
 * A thread started at the recording's start sleeps until 310 ms and
 * exits 0.2 ms after it wakes, having run 0.1 ms.  A tick saw it asleep
 * at 10 ms, and the ticks found it unchanged until 308 ms; its exit
 * hook's record is its last.  All its life but the 0.1 ms it ran is the
 * sleep's, though no tick saw the sleep end.
 */
static void test_final(void)
{
	struct sweep *w = sweep__new(0, count_free);
	struct thread_record r;
	struct sweep_thread *t;
	struct sim s = {};

	memset(&r, 0, sizeof(r));
	r.tid = 12;
	r.start_time = 1;
	r.kind = KIND_SLEEP;
	r.now = 10 * MS;
	r.switches = 1;
	t = w ? sweep__thread(w, &r) : NULL;
	if (!t) {
		CHECK(0, "no sweep");
		sweep__free(w);
		return;
	}
	sweep__set_stack(t, &r, SLEEP_STACK);
	sweep__account(t, &r, add, &s);
	r.now = 310 * MS + MS / 5;	/* woke at 310 ms, ran 0.1 ms */
	r.on_cpu = 1;
	r.kind = KIND_CPU;
	r.switches = 2;
	r.ran_ns = MS / 10;
	r.same_until = 308 * MS;
	r.exiting = 1;
	CHECK(!sweep__final(w, t, &r, add, &s), "final");
	CHECK(s.w[KIND_SLEEP] == 310 * MS + MS / 5 - 1 - MS / 10 && !s.wrong,
	      "the last sleep: %llu ns", (unsigned long long)s.w[KIND_SLEEP]);
	sweep__begin(w);
	sweep__end(w);
	sweep__free(w);
}

/*
 * Run-queue time of a thread seen running at both ticks around it: when
 * it did not block in between, it was preempted in its running code, so
 * its stack is read for it; when it blocked, the wait was the wake-up's,
 * the block's.
 */
static const char BURN_STACK[] = "burn";
static const void *rq_stack, *block_stack;

static int add_rq(void *ctx, const void *stack, int kind, uint64_t ns)
{
	(void)ctx;
	if (kind == KIND_RUNQUEUE && ns)
		rq_stack = stack;
	else if (ns)
		block_stack = stack;
	return 0;
}

static void test_preempted(bool blocked)
{
	struct sweep *w = sweep__new(0, NULL);
	struct thread_record r;
	struct sweep_thread *t;

	t = met_in_lock(w, &r, 13);
	if (!t) {
		sweep__free(w);
		return;
	}
	r.switches = r.vswitches = 1;
	sweep__set_stack(t, &r, LOCK_STACK);	/* twice the same: stable */
	sweep__account(t, &r, add_rq, NULL);
	/* running at 20 ms, having waited 2 ms for a CPU since */
	r.now = 20 * MS;
	r.on_cpu = 1;
	r.kind = KIND_CPU;
	r.switches = 2;
	r.ran_ns = 5 * MS;
	sweep__account(t, &r, add_rq, NULL);
	/* running at 30 ms: preempted once (and, with blocked, a block) */
	r.now = 30 * MS;
	r.switches = 4;
	r.vswitches = blocked ? 2 : 1;
	r.ran_ns = 12 * MS;
	r.run_delay_ns = 3 * MS;
	CHECK(sweep__needs_stack(w, t, &r) == !blocked,
	      "blocked %d: a stack read for the wait %d", blocked,
	      sweep__needs_stack(w, t, &r));
	if (sweep__needs_stack(w, t, &r))
		sweep__set_stack(t, &r, BURN_STACK);
	rq_stack = NULL;
	sweep__account(t, &r, add_rq, NULL);
	CHECK(rq_stack == (blocked ? LOCK_STACK : BURN_STACK),
	      "blocked %d: the wait under %s", blocked,
	      rq_stack ? (const char *)rq_stack : "nothing");
	/* blocked again at 40 ms, not read again (the agent's once a
	 * second): under the block read last, never the running code's
	 * (the agent's sleeps came out under heavy() and light()) */
	sweep__set_reread(w, 1000 * MS);
	r.now = 40 * MS;
	r.on_cpu = 0;
	r.kind = KIND_LOCK;
	r.switches = 5;
	r.vswitches = 3;
	CHECK(!sweep__needs_stack(w, t, &r), "blocked %d: read again within a "
	      "second", blocked);
	block_stack = NULL;
	sweep__account(t, &r, add_rq, NULL);
	CHECK(block_stack == LOCK_STACK, "blocked %d: the block under %s",
	      blocked, block_stack ? (const char *)block_stack : "nothing");
	sweep__free(w);
}

/*
 * An event loop: it blocks in select() several times a tick, and each
 * wake waits for a CPU before the loop runs again; now and then a
 * handler is preempted.  The run-queue time of the wakes is the block's,
 * not the handler's that a tick found preempted: by the switches, 5
 * waits in 6 followed a block (an aiohttp service's fast handler had 8%
 * run-queue time under load against 0.8% by its own clock).
 */
static __u64 rq_lock, rq_burn;

static int add_rq_sum(void *ctx, const void *stack, int kind, uint64_t ns)
{
	(void)ctx;
	if (kind == KIND_RUNQUEUE && stack == LOCK_STACK)
		rq_lock += ns;
	else if (kind == KIND_RUNQUEUE && stack == BURN_STACK)
		rq_burn += ns;
	return 0;
}

static void test_wakes_to_block(void)
{
	struct sweep *w = sweep__new(0, NULL);
	struct thread_record r;
	struct sweep_thread *t;

	t = met_in_lock(w, &r, 14);
	if (!t) {
		sweep__free(w);
		return;
	}
	sweep__account(t, &r, add_rq_sum, NULL);
	/* at 20 ms in the run queue, preempted in burn: since 10 ms it
	 * blocked 5 times and was preempted once, and waited 6 ms */
	r.now = 20 * MS;
	r.kind = KIND_RUNQUEUE;
	r.switches = 6;
	r.vswitches = 5;
	r.ran_ns = 3 * MS;
	r.run_delay_ns = 6 * MS;
	rq_lock = rq_burn = 0;
	if (sweep__needs_stack(w, t, &r))
		sweep__set_stack(t, &r, BURN_STACK);
	sweep__account(t, &r, add_rq_sum, NULL);
	CHECK(rq_lock == 5 * MS && rq_burn == 1 * MS,
	      "wakes' waits under the block: %.1f ms, the preemption's under "
	      "burn: %.1f ms (want 5 and 1)", rq_lock / 1e6, rq_burn / 1e6);
	sweep__free(w);
}

/*
 * A read that raced with the thread: recorded blocked in a lock wait, it
 * had woken and gone on by the read, which found its running code.  Not
 * the same as the read before, so its next block is read again, even
 * within sweep__set_reread's second.
 */
static void test_racy_read(void)
{
	struct sweep *w = sweep__new(0, NULL);
	struct thread_record r;
	struct sweep_thread *t;

	t = met_in_lock(w, &r, 14);
	if (!t) {
		sweep__free(w);
		return;
	}
	sweep__set_reread(w, 1000 * MS);
	sweep__account(t, &r, add_rq, NULL);
	r.now = 20 * MS;
	r.switches = 2;
	CHECK(sweep__needs_stack(w, t, &r), "a second read");
	sweep__set_stack(t, &r, BURN_STACK);	/* raced */
	sweep__account(t, &r, add_rq, NULL);
	r.now = 30 * MS;
	r.switches = 4;
	CHECK(sweep__needs_stack(w, t, &r), "a raced read stands for a second");
	sweep__set_stack(t, &r, LOCK_STACK);
	sweep__set_stack(t, &r, LOCK_STACK);
	r.now = 40 * MS;
	r.switches = 6;
	CHECK(!sweep__needs_stack(w, t, &r), "two reads alike, read again");
	sweep__free(w);
}

/*
 * A thread that sleeps between bursts of work, on a busy host: the
 * agent's burner.  Its stack, read while it waits in the run queue, is
 * the code it was preempted in, twice the same when it was preempted
 * twice in heavy().  That is no block's stack: its next sleep is read
 * again, even within sweep__set_reread's second.  Taken as stable, the
 * sleeps of the next second weighed under heavy() (the agent's
 * test_wall_mode_exports_off_cpu_causes, under two CPU hogs).
 */
static void test_preempted_off_cpu(void)
{
	struct sweep *w = sweep__new(0, NULL);
	struct thread_record r;
	struct sweep_thread *t;

	t = met_in_lock(w, &r, 15);
	if (!t) {
		sweep__free(w);
		return;
	}
	sweep__set_reread(w, 1000 * MS);
	r.kind = KIND_SLEEP;
	sweep__set_stack(t, &r, SLEEP_STACK);
	r.switches = r.vswitches = 1;
	sweep__set_stack(t, &r, SLEEP_STACK);	/* twice the same: stable */
	sweep__account(t, &r, add_rq, NULL);
	/* past the second, preempted twice in its burn, waiting for a CPU */
	r.now = 1100 * MS;
	r.kind = KIND_RUNQUEUE;
	r.switches = 3;
	r.run_delay_ns = 1 * MS;
	CHECK(sweep__needs_stack(w, t, &r), "read again after a second");
	sweep__set_stack(t, &r, BURN_STACK);
	sweep__account(t, &r, add_rq, NULL);
	r.now = 1110 * MS;
	r.switches = 5;
	r.run_delay_ns = 2 * MS;
	CHECK(sweep__needs_stack(w, t, &r), "a stack unlike the last: read");
	sweep__set_stack(t, &r, BURN_STACK);
	sweep__account(t, &r, add_rq, NULL);
	/* asleep again: read, not the run queue's stack */
	r.now = 1120 * MS;
	r.kind = KIND_SLEEP;
	r.switches = 6;
	r.vswitches = 2;
	CHECK(sweep__needs_stack(w, t, &r),
	      "a sleep after two preempted reads alike is read");
	if (sweep__needs_stack(w, t, &r))
		sweep__set_stack(t, &r, SLEEP_STACK);
	block_stack = NULL;
	sweep__account(t, &r, add_rq, NULL);
	CHECK(block_stack == SLEEP_STACK, "the sleep under %s",
	      block_stack ? (const char *)block_stack : "nothing");
	sweep__free(w);
}

/* Ticks every ~5 ms at 200 Hz, each costing cost(i) of CPU: the CPU
 * share the budget let them take, and how many were slowed. */
static double run_budget(__u64 (*cost)(int), int n, unsigned int duty,
			 int *slowed_n, __u64 *lo, __u64 *hi)
{
	struct sweep_budget b = {};
	__u64 now = 1000 * MS, start = now, spent = 0, w;
	bool slowed;
	int i;

	*slowed_n = 0;
	*lo = UINT64_MAX;
	*hi = 0;
	srand(7);
	for (i = 0; i < n; i++) {
		double u = 0.5 + (double)rand() / ((double)RAND_MAX + 1.0);

		spent += cost(i);
		w = sweep__wait(&b, now, cost(i), 5 * MS, duty, u, &slowed);
		*slowed_n += slowed;
		if (slowed) {
			*lo = w < *lo ? w : *lo;
			*hi = w > *hi ? w : *hi;
		}
		now += w;
	}
	return (double)spent / (double)(now - start);
}

/* most ticks find nothing moved (10 us), one in five reads a stack */
static __u64 mostly_cheap(int i)
{
	return i % 5 ? 10000 : 100000;
}

static __u64 all_dear(int i)
{
	(void)i;
	return 300000;
}

/*
 * The sweep spends at most 1/duty of a CPU, counted over time, not as a
 * tick's mean cost: ticks that read a stack cost ten times those that
 * find nothing moved, and the mean's jump after each dear one slowed the
 * sweep of a 20/50/30 ms cycle to 30-60 ticks a second at 0.5% of a CPU,
 * where 200 fit in the budget; the 30 ms lock phase then fell between
 * ticks.  When slowed, the wait is drawn around its mean: a fixed wait
 * aliases with periodic work.
 */
static void test_budget(void)
{
	int slowed;
	__u64 lo, hi;
	double share;

	share = run_budget(mostly_cheap, 4000, 150, &slowed, &lo, &hi);
	CHECK(slowed == 0, "within the budget (%.2f%% of a CPU), %d ticks slowed",
	      100 * share, slowed);
	share = run_budget(all_dear, 4000, 150, &slowed, &lo, &hi);
	CHECK(slowed > 3900, "over the budget: %d of 4000 ticks slowed", slowed);
	CHECK(share > 0.95 / 150 && share < 1.05 / 150,
	      "slowed, the sweep takes 1/150 of a CPU: %.3f%%", 100 * share);
	CHECK(lo < 25 * MS && hi > 65 * MS,
	      "the slowed wait (45 ms on average) is drawn: %.1f-%.1f ms",
	      lo / 1e6, hi / 1e6);
}

int main(void)
{
	bool off;

	for (off = false; ; off = true) {
		double pp = off ? 0.05 : 1.0;

		test_cycle(100, 0, false, off, pp);
		test_cycle(100, 4 * MS, false, off, pp);  /* HZ=250: a tick of lag */
		test_cycle(200, 4 * MS, false, off, pp);
		test_cycle(1000, 0, false, off, pp);
		/* as BPF reports: threads that moved, and all every second */
		test_cycle(100, 0, true, off, pp);
		test_cycle(100, 4 * MS, true, off, pp);
		test_cycle(200, 4 * MS, true, off, pp);
		test_cycle(1000, 0, true, off, pp);
		if (off)
			break;
	}
	test_blocked_all_along();
	test_forgets_exited();
	test_final();
	test_preempted(false);
	test_preempted(true);
	test_racy_read();
	test_wakes_to_block();
	test_preempted_off_cpu();
	test_budget();
	return check_summary();
}
