/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sampled sweep's arithmetic (--offcpu=sweep): at each tick, every
 * thread's scheduler counts since the tick before turn into weights.
 * No I/O here: the collector reads the records and the stacks, and says
 * where weight goes.
 */
#ifndef __PYSIGHT_SWEEP_H
#define __PYSIGHT_SWEEP_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "pysight.h"

struct sweep;
struct sweep_thread;

/* since_ns: when the recording started (ktime); a thread started later
 * is accounted from its own start.  free_data frees what the collector
 * keeps with a thread (sweep__data), when the thread is forgotten. */
struct sweep *sweep__new(uint64_t since_ns, void (*free_data)(void *));
void sweep__free(struct sweep *w);

/* A tick begins: threads not met again by sweep__end() are gone. */
void sweep__begin(struct sweep *w);
/* The state of r's thread, made at its first record (again when its tid
 * comes back as another thread); NULL on ENOMEM. */
struct sweep_thread *sweep__thread(struct sweep *w,
				   const struct thread_record *r);
/*
 * Does r's thread need its Python stack read now?  Only when it is off
 * the CPU (or was preempted running) and has switched since its stack
 * was last read: a thread blocked for a minute costs one read, not one a
 * tick.  And, once two reads in a row gave the same stack off the CPU
 * and out of the run queue, not again within sweep__set_reread's time
 * of its last read.
 */
bool sweep__needs_stack(const struct sweep *w, const struct sweep_thread *t,
			const struct thread_record *r);
/*
 * A thread that moved, whose last two reads agree, is read again at most
 * every ns (0, the default: at each move).  Until then its blocks weigh
 * under the stack read last:
 * their time and causes stay exact, only which Python code they are in
 * is sampled, at a random tick, as a sampler would.  The agent's choice:
 * a read costs 7-10 us, and 200 processes that each sleep five times a
 * second took 1% of a CPU reading stacks at 19 Hz.
 */
void sweep__set_reread(struct sweep *w, uint64_t ns);
/* The stack read for r (an opaque pointer the collector names); read
 * running (preempted), it stands for that thread's run-queue waits only. */
void sweep__set_stack(struct sweep_thread *t, const struct thread_record *r,
		      const void *stack);
/* What the collector keeps with the thread (how to read its stack). */
void **sweep__data(struct sweep_thread *t);

/* Where weight goes: a stack, a cause (enum sample_kind), nanoseconds. */
typedef int (*sweep_add_fn)(void *ctx, const void *stack, int kind,
			    uint64_t ns);
/*
 * The weight of r's thread since its last record: run-queue time and
 * blocked time (CPU time is the perf samples').  Returns add's error.
 */
int sweep__account(struct sweep_thread *t, const struct thread_record *r,
		   sweep_add_fn add, void *ctx);
/*
 * The last record of r's thread: what its exit reported, or what the
 * recording's last tick saw.  It is accounted as sweep__account does,
 * then the blocked time still carried goes to the last block seen (the
 * thread runs at its exit: its last blocked time is that block's tail),
 * so the thread's total is its own clock; then the thread is forgotten.
 * Returns add's error.
 */
int sweep__final(struct sweep *w, struct sweep_thread *t,
		 const struct thread_record *r, sweep_add_fn add, void *ctx);
/*
 * The sweep's CPU budget: 1/duty of the time that passes, banked up to
 * SWEEP_BANK_NS of time's worth, so that a few dear ticks (those that
 * read stacks) do not slow the ticks that cost little.
 */
struct sweep_budget {
	int64_t credit_ns;	/* CPU time it may still spend */
	uint64_t at_ns;		/* the tick it was last paid at (0: never) */
};
/*
 * The wait after a tick that began at now and took cpu_ns of CPU: u
 * (uniform in [0.5, 1.5)) times the mean tick, or times the time the
 * budget needs to be paid back when that is longer (*slowed then).
 * Drawn either way, as the perf timers' rates are: a fixed wait aliases
 * with periodic work.
 */
uint64_t sweep__wait(struct sweep_budget *b, uint64_t now, uint64_t cpu_ns,
		     uint64_t tick_ns, unsigned int duty, double u,
		     bool *slowed);
/* A tick ends: forget the threads it did not meet. */
void sweep__end(struct sweep *w);
/* The stacks it holds are gone (the profile was rebased): read again. */
void sweep__forget_stacks(struct sweep *w);

#endif /* __PYSIGHT_SWEEP_H */
