// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for what reading asyncio tasks trusts before it reads a byte
 * of the target: the .AsyncioDebug parser and the coroutine facts of
 * _Py_DebugOffsets (both in user/python/offsets.c), on the bytes of real
 * interpreters (Debian sid 3.14.10 and 3.15.2) and mutations of them.
 * Whatever either accepts must be safe to use: every field inside its
 * struct, every read it sizes bounded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asynctasks.h"
#include "offsets.h"
#include "check.h"
#include "testkit.h"

#define MAX_FILE 4096

struct fixture {
	const char *file;
	unsigned char buf[MAX_FILE];
	size_t len;
};

static int load(const char *dir, struct fixture *f)
{
	return testkit_load(dir, f->file, f->buf, sizeof(f->buf), &f->len);
}

static void test_real(struct fixture *s14, struct fixture *s15,
		      struct fixture *r13, struct fixture *r14,
		      struct fixture *r15)
{
	struct py_async_offsets a;
	struct py_gen_offsets g;
	char err[128];

	/* the values of the notes' table, read out of the binaries */
	CHECK(!offsets__async_from_section(s14->buf, s14->len, &a, err,
					   sizeof(err)), "%s", err);
	CHECK(a.task_size == 168 && a.task_name == 136 &&
	      a.task_awaited_by == 96 && a.task_is_task == 108 &&
	      a.task_awaited_by_is_set == 109 && a.task_coro == 128 &&
	      a.task_node == 152, "3.14 task");
	CHECK(a.interp_tasks_head == 10880 && a.tstate_running_task == 872 &&
	      a.tstate_tasks_head == 880, "3.14 lists");
	CHECK(!offsets__async_from_section(s15->buf, s15->len, &a, err,
					   sizeof(err)), "%s", err);
	CHECK(a.tstate_size == 1104 && a.tstate_tasks_head == 1048 &&
	      a.interp_tasks_head == 10856, "3.15 lists");
	CHECK(offsets__async_from_section(s15->buf, 96, &a, err,
					  sizeof(err)) == -EINVAL,
	      "short section");

	CHECK(!offsets__gen_from_debug(r14->buf, r14->len, 14, &g, err,
				       sizeof(err)), "%s", err);
	CHECK(g.gen_iframe == 72 && g.gen_frame_state == 67 &&
	      g.frame_stackpointer == 64 && g.yf_depth == 1 &&
	      g.state_yield_from == -1 && g.state_cleared == 4 &&
	      g.owner_generator == 1, "3.14 coroutines");
	CHECK(!offsets__gen_from_debug(r15->buf, r15->len, 15, &g, err,
				       sizeof(err)), "%s", err);
	CHECK(g.gen_iframe == 72 && g.yf_depth == 2 &&
	      g.state_yield_from == 2 && g.state_yield_from_last == 3 &&
	      g.state_cleared == 5, "3.15 coroutines");
	/* 3.13's _Py_DebugOffsets does not describe generators */
	CHECK(offsets__gen_from_debug(r13->buf, r13->len, 13, &g, err,
				      sizeof(err)) == -ENOTSUP, "3.13");
	/* nor is a newer minor's guessed */
	CHECK(offsets__gen_from_debug(r15->buf, r15->len, 16, &g, err,
				      sizeof(err)) != 0, "3.16");
}

static void mutate(unsigned char *buf, size_t len)
{
	int i, n = 1 + rnd() % 3;

	for (i = 0; i < n; i++) {
		size_t pos = (rnd() % len) & ~7UL;
		uint64_t v = rnd() % 4 ? rnd() % 4096 : rnd();

		if (pos + 8 <= len)
			memcpy(buf + pos, &v, 8);
	}
}

/* Safe to use: what walk_list, read_task and the list heads read. */
static const char *section_unsafe(const struct py_async_offsets *a)
{
	if (a->task_size > 4096 || a->task_node + 16 > a->task_size ||
	    a->task_name + 8 > a->task_size || a->task_coro < 8 ||
	    a->task_awaited_by + 8 > a->task_size ||
	    a->task_is_task < 4 || a->task_awaited_by_is_set >= a->task_size)
		return "task field outside the task";
	if (a->interp_tasks_head + 16 > a->interp_size ||
	    a->tstate_tasks_head + 16 > a->tstate_size ||
	    a->tstate_running_task + 8 > a->tstate_size)
		return "list head outside its struct";
	return NULL;
}

static const char *gen_unsafe(const struct py_gen_offsets *g)
{
	if (g->gen_frame_state >= g->gen_iframe)
		return "state inside the frame";
	if (g->frame_stackpointer + 8 > g->frame_size || g->frame_size > 1024)
		return "stackpointer outside the frame";
	if (g->set_used > 256 || g->set_mask > 256 || g->set_table > 256)
		return "set field";
	return NULL;
}

static void test_fuzz(struct fixture *s, struct fixture *r, int minor)
{
	unsigned char buf[MAX_FILE];
	unsigned int iter, sa = 0, ga = 0;
	struct py_async_offsets a;
	struct py_gen_offsets g;
	const char *why;
	char err[128];

	for (iter = 0; iter < 20000; iter++) {
		memcpy(buf, s->buf, s->len);
		mutate(buf, s->len);
		if (!offsets__async_from_section(buf, s->len, &a, err,
						 sizeof(err))) {
			sa++;
			why = section_unsafe(&a);
			CHECK(!why, "section fuzz %u: %s", iter, why);
		}
		memcpy(buf, r->buf, r->len);
		mutate(buf, 1024 < r->len ? 1024 : r->len);
		if (!offsets__gen_from_debug(buf, r->len, minor, &g, err,
					     sizeof(err))) {
			ga++;
			why = gen_unsafe(&g);
			CHECK(!why, "gen fuzz %u: %s", iter, why);
		}
	}
	CHECK(sa > 0 && sa < iter, "section fuzz accepted %u of %u", sa, iter);
	CHECK(ga > 0 && ga < iter, "gen fuzz accepted %u of %u", ga, iter);
}

/* What a pending task waits for, from where it waits. */
static void test_causes(void)
{
	static const struct {
		int state;
		const char *awaits, *qualname, *file;
		int want;
	} cases[] = {
		{ ASYNC_WAITING, "_asyncio.Future", "sleep", "asyncio/tasks.py",
		  KIND_AWAIT_SLEEP },
		{ ASYNC_WAITING, "_asyncio.Future", "sleep",
		  "/usr/lib/python3.14/asyncio/tasks.py", KIND_AWAIT_SLEEP },
		/* a function of the user's called sleep is not asyncio's */
		{ ASYNC_WAITING, "_asyncio.Future", "sleep", "app/tasks.py",
		  KIND_AWAIT_OTHER },
		{ ASYNC_WAITING, "_asyncio.Future", "sleep", "myasyncio/tasks.py",
		  KIND_AWAIT_OTHER },
		{ ASYNC_WAITING, "_asyncio.Future", "Lock.acquire",
		  "asyncio/locks.py", KIND_AWAIT_LOCK },
		{ ASYNC_WAITING, "_asyncio.Future", "Queue.get",
		  "asyncio/queues.py", KIND_AWAIT_LOCK },
		{ ASYNC_WAITING, "_asyncio.Task", "child", "app.py",
		  KIND_AWAIT_TASK },
		{ ASYNC_WAITING, "_asyncio.Future", "to_thread",
		  "asyncio/threads.py", KIND_AWAIT_EXECUTOR },
		{ ASYNC_WAITING, "_asyncio.Future",
		  "StreamReader._wait_for_data", "asyncio/streams.py",
		  KIND_AWAIT_IO },
		{ ASYNC_WAITING, "_asyncio.Future", "handler", "app.py",
		  KIND_AWAIT_OTHER },
		{ ASYNC_WAITING, "_asyncio.Future", NULL, NULL, KIND_AWAIT_OTHER },
		{ ASYNC_READY, "", "sleep", "asyncio/tasks.py", KIND_AWAIT_BUSY },
	};
	struct async_task t;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&t, 0, sizeof(t));
		t.state = cases[i].state;
		snprintf(t.awaits, sizeof(t.awaits), "%s", cases[i].awaits);
		CHECK(asynctasks__cause(&t, cases[i].qualname, cases[i].file) ==
		      cases[i].want, "case %zu: %s in %s", i,
		      cases[i].qualname ? cases[i].qualname : "-",
		      cases[i].file ? cases[i].file : "-");
	}
}

/*
 * 3.11 to 3.13's generated facts (tools/gen-offsets: headers, and
 * _asyncio's DWARF): the values the notes measured on the real builds,
 * and each field a read sizes inside its struct.
 */
static void test_legacy(void)
{
	const struct offsets_async_legacy *l11 = offsets__async_legacy(11),
					  *l12 = offsets__async_legacy(12),
					  *l13 = offsets__async_legacy(13), *l;
	int minor;

	CHECK(l11 && l12 && l13 && !offsets__async_legacy(10) &&
	      !offsets__async_legacy(14), "3.11-3.13 only");
	if (!l11 || !l12 || !l13)
		return;
	/* TaskObj: 3.11 and 3.12 alike, 3.13 without dict and weakref */
	CHECK(l11->task_size == 176 && l11->future_size == 128 &&
	      l11->fut_state == 88 && l11->fut_waiter == 128 &&
	      l11->task_coro == 136 && l11->task_name == 144, "3.11 task");
	CHECK(l12->task_size == l11->task_size &&
	      l12->fut_waiter == l11->fut_waiter &&
	      l12->task_coro == l11->task_coro, "3.12 task as 3.11's");
	CHECK(l13->task_size == 144 && l13->future_size == 104 &&
	      l13->fut_state == 96 && l13->fut_waiter == 112 &&
	      l13->task_coro == 120 && l13->task_name == 128, "3.13 task");
	/* where a thread's loop is: a holder in its dict, the loop itself
	 * there, the thread state */
	CHECK(l11->tstate_dict != PY_OFF_NONE && l11->holder_loop == 16 &&
	      l12->tstate_dict != PY_OFF_NONE &&
	      l12->holder_loop == PY_OFF_NONE &&
	      l13->tstate_dict == PY_OFF_NONE &&
	      l13->tstate_running_loop != PY_OFF_NONE, "running loops");
	CHECK(l11->gen_iframe == 80 && l12->gen_iframe == 72 &&
	      l13->gen_iframe == 72, "coroutine frames");
	for (minor = 11; minor <= 13; minor++) {
		l = offsets__async_legacy(minor);
		CHECK(l->task_size < PY_TASK_SIZE_MAX &&
		      l->future_size < l->task_size &&
		      l->fut_loop + 8 <= l->future_size &&
		      l->fut_callback0 + 8 <= l->future_size &&
		      l->fut_state + 4 <= l->future_size &&
		      l->fut_waiter + 8 <= l->task_size &&
		      l->task_coro + 8 <= l->task_size &&
		      l->task_name + 8 <= l->task_size,
		      "3.%d: fields inside the task", minor);
		CHECK(l->frame_stacktop + 4 <= l->frame_size &&
		      l->frame_localsplus < l->frame_size &&
		      l->gen_frame_state < l->gen_iframe &&
		      l->state_await < 0 && l->state_cleared > 0,
		      "3.%d: frame facts", minor);
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/fixtures";
	static struct fixture s14 = { .file = "asynciodebug-3.14.bin" },
			      s15 = { .file = "asynciodebug-3.15.bin" },
			      r13 = { .file = "pyruntime-3.13.bin" },
			      r14 = { .file = "pyruntime-3.14.bin" },
			      r15 = { .file = "pyruntime-3.15.bin" };

	if (load(dir, &s14) || load(dir, &s15) || load(dir, &r13) ||
	    load(dir, &r14) || load(dir, &r15)) {
		CHECK(0, "cannot read the fixtures in %s", dir);
		return check_summary();
	}
	test_real(&s14, &s15, &r13, &r14, &r15);
	test_fuzz(&s14, &r14, 14);
	test_fuzz(&s15, &r15, 15);
	test_causes();
	test_legacy();
	return check_summary();
}
