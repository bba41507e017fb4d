// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "pysight.h"	/* before the skeleton: its .rodata holds a struct py_proc */
#include "log.h"
#include "pysight.skel.h"
#include "sampler.h"

/*
 * The timers' schedule.  Windows come in pairs, the second at the rate
 * that brings the pair back to the mean (2 - u, less what earlier windows
 * ran over): a second's count is then off by a part of one window, not
 * by the random walk of six independent draws (13% at -r 100).  One
 * schedule for every CPU, not one each: a thread is sampled by the timer
 * of the CPU it runs on, and one that moved from a CPU's fast window to
 * another's was not paid back (a busy thread moved every 100 ms: its 1 s
 * counts against its CPU time, 6.1-7.1% sd, 5.0-5.3% with one schedule).
 */
struct window {
	__u64 next_jitter_ns;	/* when the next window starts */
	__u64 started_ns;	/* the window's start */
	double u;		/* the window's rate over the mean */
	double debt_s;		/* seconds at the mean sampled over (+) or under */
	bool mirrored;		/* the second of a pair */
};

/* A CPU's timer. */
struct cpu_timer {
	int fd;
	struct bpf_link *link;
	bool stuck;		/* re-arming failed: keeps its period */
};

struct code_free_probe {
	struct py_binary_key key;
	pid_t pid;		/* the process whose inspection placed it */
	struct bpf_link *link;	/* NULL: attaching failed, don't retry */
};

/*
 * Uprobes stay until pysight exits.  64 distinct interpreter files at
 * most, and 2 per pid (across its execs): a process that keeps
 * exec'ing new copies cannot take every slot.  A process without one
 * is still sampled, without the code-object cache.
 */
#define MAX_PROBES	64
#define PROBES_PER_PID	2

/*
 * A sweep over one process's threads costs a link's pass, about three
 * system calls (4 us); one over every task costs 0.3 us a task that is
 * not wanted (the kernel's walk of the pid table, and the program's
 * early return).  So processes are swept one by one while they are
 * fewer than the host's tasks / SWEEP_TASKS_PER_LINK, and at most
 * SAMPLER_SWEEP_PIDS; the host's tasks are counted again every
 * SWEEP_RECOUNT passes.
 */
#define SWEEP_TASKS_PER_LINK	13
#define SWEEP_RECOUNT		256

struct sweep_link {
	pid_t pid;
	struct bpf_link *link;
};

struct sampler {
	struct code_free_probe probes[MAX_PROBES];
	int nprobes;
	struct pysight_bpf *skel;
	struct ring_buffer *rb;
	struct cpu_timer *cpus;
	int ncpus;
	struct window win;
	double rate_hz;		/* mean rate, compensated for re-arms */
	__u64 window_ns;	/* mean time between re-arms */
	unsigned int seed;
	sampler_event_fn fn;
	void *ctx;
	bool fixed_period;	/* PYSIGHT_JITTER=0: for tests that show aliasing */
	bool off_cpu;		/* the scheduler hooks are loaded */
	/* the sweep's iterators, kept from tick to tick: one over every
	 * task, and one per process while few are wanted */
	bool sweep;		/* the sampled sweep is loaded */
	struct ring_buffer *sweep_rb;
	sampler_thread_fn sweep_fn;
	void *sweep_ctx;
	struct bpf_link *sweep_link;
	struct sweep_link bounded[SAMPLER_SWEEP_PIDS];
	int nbounded;
	__u64 host_tasks;	/* tasks the last pass over all of them saw */
	/* floors of the sweep's clock_gap readings: this second's and the
	 * last one's (0: none), and when this one began (ktime ns) */
	__s64 gap_floor[2];
	__u64 gap_second;
	unsigned int passes;
	/* overload (sampler__adapt): the share of the rate sampled, and
	 * what the counters said at the last look */
	bool cpu_mode;		/* only there is the rate what fills the ring */
	double keep, least_keep;
	__u64 next_adapt_ns, slow_since_ns, slow_ns;
	/* the integral over time of the share of the rate not sampled:
	 * 1 - keep * the share the ring buffer took, per look */
	double unsampled_ns;
	__u64 last_look_ns;
	uint64_t seen_samples, seen_drops;
	int calm;
	struct unwind_row *native_rows;	/* --native: the pool, mapped */
	size_t native_len;		/* its bytes mapped */
	uint32_t native_n;
	/* PYSIGHT_RING_BATCH: records read per pass at most (0: all); the
	 * pass in progress has read in_pass, and one was cut short (cut) */
	long batch, in_pass;
	bool cut;
};

static bool probing;

/* libbpf speaks only with -v: its errors are reported once, by us, and
 * the probes' failures are expected. */
static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	(void)level;
	if (probing || !log__on(LOG_DEBUG))
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* A thread record of the sweep's ring. */
static int on_sweep(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size < sizeof(struct thread_record) || !s->sweep_fn)
		return 0;
	return s->sweep_fn(s->sweep_ctx, data);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	int err = s->fn(s->ctx, data, size);

	/* a pass that has read its batch ends here: libbpf stops at an
	 * error and keeps the records after this one for the next pass */
	if (!err && s->batch && ++s->in_pass >= s->batch) {
		s->cut = true;
		return -ECANCELED;
	}
	return err;
}

/*
 * What the BPF side needs of the kernel, newest last: probed before the
 * load, so an old kernel gets its reason in one line, not "Invalid
 * argument" from the verifier.  tp_btf (5.5) and bpf_get_current_task_btf
 * (5.11) come before bpf_loop, so a kernel with it has them.
 * PYSIGHT_PROBE_FAIL=NAME makes a probe fail, for the tests.
 */
static const struct feature {
	const char *name, *since;
	enum bpf_map_type map;
	enum bpf_func_id helper;
} features[] = {
	{ "ring buffers", "5.8", BPF_MAP_TYPE_RINGBUF, 0 },
	{ "bpf_get_current_task_btf", "5.11", 0, BPF_FUNC_get_current_task_btf },
	{ "bpf_loop", "5.17", 0, BPF_FUNC_loop },
};

#define MIN_KERNEL "5.17"

static int probe_kernel(char *err, size_t errlen)
{
	const char *fail = getenv("PYSIGHT_PROBE_FAIL");
	struct utsname u;
	size_t i;
	int ok;

	for (i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		const struct feature *f = &features[i];

		if (f->map)
			ok = libbpf_probe_bpf_map_type(f->map, NULL) == 1;
		else
			ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT,
						     f->helper, NULL) == 1;
		if (fail && !strcmp(fail, f->name))
			ok = 0;
		if (ok)
			continue;
		if (uname(&u))
			snprintf(u.release, sizeof(u.release), "?");
		snprintf(err, errlen,
			 "this kernel (%s) lacks %s (Linux %s): pysight needs Linux "
			 MIN_KERNEL " or newer", u.release, f->name, f->since);
		return -ENOTSUP;
	}
	return 0;
}

/* PYSIGHT_RINGBUF_KB=N (a power of two, 4 or more), for the overload
 * test: a ring buffer small enough to overflow. */
static void ring_size(struct sampler *s)
{
	const char *kb = getenv("PYSIGHT_RINGBUF_KB");
	long v = kb ? strtol(kb, NULL, 10) : 0;

	if (v >= 4 && v <= (1L << 20) && !(v & (v - 1)))
		bpf_map__set_max_entries(s->skel->maps.events, v * 1024);
}

/*
 * PYSIGHT_RING_BATCH=N: a pass over the ring reads N records at most.  A
 * pass also ends at a record BPF is still writing, so what follows a
 * sample (the EV_CODE of its code object, freed just after) may come a
 * pass later; with N=1 the tests make that happen every time.
 */
static long ring_batch(void)
{
	const char *n = getenv("PYSIGHT_RING_BATCH");
	long v = n ? strtol(n, NULL, 10) : 0;

	return v > 0 && v <= 1000000 ? v : 0;
}

int sampler__open(const struct sampler_opts *opts, sampler_event_fn fn,
		  void *ctx, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s;
	int ret, i;

	probing = true;
	libbpf_set_print(print_libbpf);
	ret = probe_kernel(err, errlen);
	probing = false;
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->ctx = ctx;
	s->seed = (unsigned int)(getpid() ^ time(NULL));
	s->keep = s->least_keep = 1.0;
	s->cpu_mode = opts->mode == PYSIGHT_MODE_CPU;
	s->batch = ring_batch();
	/*
	 * Re-arm every 16 periods on average, 100 ms at least: each re-arm
	 * is an IPI to the CPU (bench: a fifth of pysight's own CPU at 8
	 * periods).  A re-arm restarts the timer and loses about half a
	 * period, so raise the rate by as much.
	 */
	s->window_ns = (__u64)(16e9 / opts->rate_hz);
	if (s->window_ns < 100000000ULL)
		s->window_ns = 100000000ULL;
	s->rate_hz = opts->rate_hz /
		     (1.0 - 0.5e9 / opts->rate_hz / (double)s->window_ns);
	if (getenv("PYSIGHT_JITTER") && !strcmp(getenv("PYSIGHT_JITTER"), "0")) {
		s->fixed_period = true;
		s->rate_hz = opts->rate_hz;
	}
	s->skel = pysight_bpf__open();
	if (!s->skel) {
		ret = -errno;
		snprintf(err, errlen, "failed to open BPF object: %s",
			 strerror(-ret));
		goto fail;
	}
	s->skel->rodata->filter_pids = opts->filter_pids;
	s->skel->rodata->self_pid = getpid();
	s->skel->rodata->mode = opts->mode;
	s->skel->rodata->gil_only = opts->gil_only;
	s->skel->rodata->kernel_stacks = opts->kernel_stacks;
	s->skel->rodata->period_ns = (__u64)(1e9 / opts->rate_hz);
	s->skel->rodata->ncgroups = opts->ncgroups;
	s->off_cpu = opts->mode != PYSIGHT_MODE_CPU && !opts->sweep;
	/* the scheduler hooks run on every context switch: only when asked */
	bpf_program__set_autoload(s->skel->progs.pysight_switch, s->off_cpu);
	bpf_program__set_autoattach(s->skel->progs.pysight_threads, false);
	s->sweep = opts->sweep && opts->mode != PYSIGHT_MODE_CPU;
	s->skel->rodata->sweep = s->sweep;
	bpf_program__set_autoload(s->skel->progs.pysight_sweep, s->sweep);
	bpf_program__set_autoattach(s->skel->progs.pysight_sweep, false);
	if (!s->sweep)
		bpf_map__set_max_entries(s->skel->maps.sweep_ring,
					 sysconf(_SC_PAGESIZE));
	/* kernel stacks: the tracer's from its switch hook, the sweep's
	 * from its iterator (bpf_get_task_stack) */
	if (!opts->kernel_stacks || !s->off_cpu)
		bpf_map__set_max_entries(s->skel->maps.kstacks, 1);
	if (!opts->kernel_stacks || !s->sweep)
		bpf_map__set_max_entries(s->skel->maps.task_kstacks, 1);
	s->skel->rodata->native = opts->native_rows && opts->native_procs;
	if (s->skel->rodata->native) {
		bpf_map__set_max_entries(s->skel->maps.native_rows,
					 opts->native_rows);
		bpf_map__set_max_entries(s->skel->maps.native_procs,
					 opts->native_procs);
	}
	ring_size(s);
	ret = pysight_bpf__load(s->skel);
	if (ret) {
		snprintf(err, errlen,
			 "failed to load BPF programs: %s (run with -v for the verifier log)",
			 strerror(-ret));
		goto fail;
	}
	for (i = 0; i < opts->ncgroups && i < PYSIGHT_MAX_CGROUPS; i++) {
		__u32 key = i;

		ret = bpf_map__update_elem(s->skel->maps.cgroup_filter, &key,
					   sizeof(key), &opts->cgroups[i],
					   sizeof(opts->cgroups[i]), BPF_ANY);
		if (ret) {
			snprintf(err, errlen, "failed to set the cgroup filter: %s",
				 strerror(-ret));
			goto fail;
		}
	}
	if (s->skel->rodata->native) {
		/* an array map's values are 8-byte aligned: the rows are 16
		 * bytes, so the mapped pool is an array of them */
		s->native_len = (size_t)opts->native_rows * sizeof(struct unwind_row);
		s->native_rows = mmap(NULL, s->native_len, PROT_READ | PROT_WRITE,
				      MAP_SHARED,
				      bpf_map__fd(s->skel->maps.native_rows), 0);
		if (s->native_rows == MAP_FAILED) {
			ret = -errno;
			s->native_rows = NULL;
			snprintf(err, errlen,
				 "failed to map the native unwind rows: %s",
				 strerror(-ret));
			goto fail;
		}
		s->native_n = opts->native_rows;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_event, s,
				 NULL);
	if (!s->rb) {
		ret = -errno;
		snprintf(err, errlen, "failed to create ring buffer: %s",
			 strerror(-ret));
		goto fail;
	}
	if (s->sweep) {
		s->sweep_rb = ring_buffer__new(
			bpf_map__fd(s->skel->maps.sweep_ring), on_sweep, s, NULL);
		if (!s->sweep_rb) {
			ret = -errno;
			snprintf(err, errlen,
				 "failed to create ring buffer: %s",
				 strerror(-ret));
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	sampler__destroy(s);
	return ret;
}

/* uniform in [lo, hi) */
static double uniform(struct sampler *s, double lo, double hi)
{
	double r = (double)rand_r(&s->seed) / ((double)RAND_MAX + 1.0);

	return lo + r * (hi - lo);
}

/*
 * The next window, from now: its rate over the mean, and when it ends.
 * The first of a pair draws its rate uniformly in ±50% of the
 * mean (the rate, not the period: each period holds for a stretch of
 * time, so uniform periods would sample ln 3 = 1.10 times too fast).
 * The second lasts as long as the first did and pays back the debt;
 * re-arms wait for the poll, so the lengths are what happened, not what
 * was drawn.  Like py-spy's random intervals, the changing period keeps
 * periodic work from aliasing.
 */
static void next_window(struct sampler *s, __u64 now)
{
	struct window *w = &s->win;
	__u64 len;

	if (w->started_ns)
		w->debt_s += (w->u - 1.0) * (double)(now - w->started_ns) / 1e9;
	if (w->mirrored || !w->started_ns) {
		w->u = uniform(s, 0.5, 1.5);
		len = (__u64)uniform(s, 0.5 * s->window_ns, 1.5 * s->window_ns);
		w->mirrored = false;
	} else {
		len = now - w->started_ns;
		w->u = fmin(1.5, fmax(0.5, 1.0 - w->debt_s * 1e9 / (double)len));
		w->mirrored = true;
	}
	w->started_ns = now;
	w->next_jitter_ns = now + len;
}

static __u64 window_period(struct sampler *s)
{
	double u = s->fixed_period ? 1.0 : s->win.u;

	return (__u64)(1e9 / (s->rate_hz * s->keep * u));
}

static int open_cpu_timer(struct sampler *s, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
	};

	attr.sample_period = window_period(s);

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

int sampler__start(struct sampler *s, char *err, size_t errlen)
{
	int ret, cpu, possible;

	if (!s)
		return -ENODEV;
	ret = pysight_bpf__attach(s->skel);
	if (ret) {
		snprintf(err, errlen, "failed to attach tracepoints: %s",
			 strerror(-ret));
		return ret;
	}

	possible = libbpf_num_possible_cpus();
	if (possible <= 0) {
		snprintf(err, errlen, "failed to count CPUs");
		return -EINVAL;
	}
	s->cpus = calloc(possible, sizeof(*s->cpus));
	if (!s->cpus)
		return -ENOMEM;
	s->ncpus = possible;
	for (cpu = 0; cpu < possible; cpu++)
		s->cpus[cpu].fd = -1;
	next_window(s, clock__now_ns());
	for (cpu = 0; cpu < possible; cpu++) {
		struct cpu_timer *t = &s->cpus[cpu];

		t->fd = open_cpu_timer(s, cpu);
		if (t->fd < 0) {
			ret = -errno;
			t->fd = -1;
			if (ret == -ENODEV)	/* offline CPU */
				continue;
			snprintf(err, errlen, "failed to open perf event on CPU %d: %s",
				 cpu, strerror(-ret));
			return ret;
		}
		t->link = bpf_program__attach_perf_event(s->skel->progs.pysight_on_cpu,
							 t->fd);
		if (!t->link) {
			ret = -errno;
			snprintf(err, errlen, "failed to attach to perf event on CPU %d: %s",
				 cpu, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Every CPU's timer at the window's period; one that cannot be re-armed
 * keeps the period it has (sampling goes on) and is not tried again. */
static void rearm_all(struct sampler *s)
{
	__u64 period = window_period(s);
	int cpu;

	for (cpu = 0; cpu < s->ncpus; cpu++) {
		struct cpu_timer *t = &s->cpus[cpu];

		if (!t->link || t->stuck)
			continue;
		if (ioctl(t->fd, PERF_EVENT_IOC_PERIOD, &period)) {
			pr_debug("failed to re-arm CPU %d: %s", cpu,
				 strerror(errno));
			t->stuck = true;
		}
	}
}

/* A new random period for every CPU when the window ends. */
void sampler__jitter(struct sampler *s)
{
	__u64 now = clock__now_ns();

	if (!s || s->fixed_period || !s->cpus || now < s->win.next_jitter_ns)
		return;
	next_window(s, now);
	rearm_all(s);
}

/* Counter i summed over the CPUs; vals holds ncpu values. */
static uint64_t counter_sum(struct sampler *s, __u32 i, __u64 *vals, int ncpu)
{
	uint64_t sum = 0;
	int c;

	if (bpf_map__lookup_elem(s->skel->maps.counters, &i, sizeof(i), vals,
				 ncpu * sizeof(*vals), 0))
		return 0;
	for (c = 0; c < ncpu; c++)
		sum += vals[c];
	return sum;
}

/* Counters i (n of them, from ids) into out[]; 0 when unreadable. */
static void read_counters(struct sampler *s, const __u32 *ids, int n,
			  uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus(), k;
	__u64 *vals = ncpu > 0 ? calloc(ncpu, sizeof(*vals)) : NULL;

	for (k = 0; k < n; k++)
		out[k] = vals ? counter_sum(s, ids[k], vals, ncpu) : 0;
	free(vals);
}

/*
 * Overload.  When user space cannot drain the ring buffer as fast as
 * the samples come, the ones lost are not a fair share: they are lost in
 * bursts between drains, so what is kept is what ran just after each
 * poll, and periodic work aliases with the poll.  So, in cpu mode (in
 * wall and off modes, off-CPU events fill the ring too, and the rate
 * cannot make them fewer), every 200 ms: if
 * more than 0.5% of the samples were lost, sample at a lower rate (the
 * share that got through, less a margin, down to 2% of -r); after a
 * second without loss, climb back by a quarter at a time.  A lower rate
 * loses samples evenly in time.  What was not sampled, by either, is
 * summed (unsampled_ns), so that a profile can state the rate it was
 * sampled at, and its CPU time come out right.
 */
void sampler__adapt(struct sampler *s)
{
	__u64 now = clock__now_ns();
	static const __u32 ids[] = { CNT_SAMPLES, CNT_RB_DROPS };
	uint64_t c[2], samples, drops;
	double keep;

	if (!s || !s->cpu_mode || now < s->next_adapt_ns)
		return;
	s->next_adapt_ns = now + 200000000ULL;
	read_counters(s, ids, 2, c);	/* two lookups, not all the counters */
	samples = c[0] - s->seen_samples;
	drops = c[1] - s->seen_drops;
	s->seen_samples = c[0];
	s->seen_drops = c[1];
	/* what the last 200 ms sampled: keep of the rate, less what the
	 * ring buffer lost of that */
	if (s->last_look_ns)
		s->unsampled_ns += (1.0 - s->keep * (samples ?
				    fmax(0.0, 1.0 - (double)drops / (double)samples) : 1.0)) *
				   (double)(now - s->last_look_ns);
	s->last_look_ns = now;
	keep = s->keep;
	if (samples && drops * 200 > samples) {
		keep *= fmax(0.5, 1.0 - (double)drops / (double)samples) * 0.8;
		keep = fmax(keep, 0.02);
		s->calm = 0;
	} else if (s->keep < 1.0 && ++s->calm >= 5) {
		keep = fmin(1.0, keep * 1.25);
		s->calm = 0;
	}
	if (keep == s->keep)
		return;
	if (s->keep == 1.0)
		s->slow_since_ns = now;
	if (keep == 1.0)
		s->slow_ns += now - s->slow_since_ns;
	pr_debug("ring buffer %s: sampling at %.0f%% of the rate",
		 keep < s->keep ? "full" : "keeping up", 100 * keep);
	s->keep = keep;
	s->least_keep = fmin(s->least_keep, keep);
	/* a new window at the new rate, as each re-arm always began one */
	if (!s->fixed_period)
		next_window(s, now);
	rearm_all(s);
}

void sampler__slowed(struct sampler *s, double *least_keep, double *slow_s,
		     double *unsampled_s)
{
	__u64 now = clock__now_ns(), slow = s ? s->slow_ns : 0;
	double unsampled = s ? s->unsampled_ns : 0;

	if (s && s->keep < 1.0) {
		slow += now - s->slow_since_ns;
		if (s->last_look_ns)
			unsampled += (1.0 - s->keep) *
				     (double)(now - s->last_look_ns);
	}
	*least_keep = s ? s->least_keep : 1.0;
	*slow_s = slow / 1e9;
	*unsampled_s = unsampled / 1e9;
}

/* One pass over the ring, after waiting up to timeout_ms for a wake-up
 * (wait) or not: how many records it read, or -errno. */
static int ring_pass(struct sampler *s, bool wait, int timeout_ms)
{
	int n;

	s->in_pass = 0;
	s->cut = false;
	n = wait ? ring_buffer__poll(s->rb, timeout_ms) :
		   ring_buffer__consume(s->rb);
	if (s->cut)
		return (int)s->in_pass;
	return n == -EINTR ? 0 : n;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n = 0, m;

	if (!s)
		return -ENODEV;
	/* a pass cut short (PYSIGHT_RING_BATCH) left records: no waiting */
	if (!s->cut) {
		n = ring_pass(s, true, timeout_ms);
		if (n < 0 || s->cut)
			return n;
	}
	/* samples of known stacks come without a wake-up: epoll does not
	 * see them, so read the ring on every tick as well */
	m = ring_pass(s, false, 0);
	return m < 0 ? m : n + m;
}

int sampler__set_proc(struct sampler *s, pid_t pid, const struct py_proc *p)
{
	__u32 key = pid;

	if (!s)
		return -ENODEV;

	return bpf_map__update_elem(s->skel->maps.procs, &key, sizeof(key), p,
				    sizeof(*p), BPF_ANY);
}

int sampler__set_binary(struct sampler *s, const struct py_binary_key *key,
			const struct py_proc *p)
{
	if (!s)
		return -ENODEV;
	return bpf_map__update_elem(s->skel->maps.binaries, key, sizeof(*key),
				    p, sizeof(*p), BPF_ANY);
}

int sampler__get_proc(struct sampler *s, pid_t pid, struct py_proc *p)
{
	__u32 key = pid;

	if (!s)
		return -ENODEV;

	return bpf_map__lookup_elem(s->skel->maps.procs, &key, sizeof(key), p,
				    sizeof(*p), 0);
}

void sampler__forget_stack(struct sampler *s, __u64 hash)
{
	if (s)
		bpf_map__delete_elem(s->skel->maps.stacks_seen, &hash, sizeof(hash), 0);
}

void sampler__forget_stacks(struct sampler *s, const __u64 *hashes, size_t n)
{
	int fd = s ? bpf_map__fd(s->skel->maps.stacks_seen) : -1;
	__u32 count;
	int err;

	/* in batches; a key already gone (the map is an LRU) stops one
	 * there, and the rest go on after it */
	while (fd >= 0 && n) {
		count = n > UINT32_MAX ? UINT32_MAX : (__u32)n;
		err = bpf_map_delete_batch(fd, hashes, &count, NULL);
		if (err && err != -ENOENT)
			break;
		if (err)
			count++;	/* hashes[count] was not there */
		if (count > n)
			count = (__u32)n;
		hashes += count;
		n -= count;
	}
}

int sampler__add_target(struct sampler *s, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	if (!s)
		return -ENODEV;

	return bpf_map__update_elem(s->skel->maps.targets, &key, sizeof(key),
				    &one, sizeof(one), BPF_ANY);
}

void sampler__counters(struct sampler *s, uint64_t out[CNT__MAX])
{
	__u32 ids[CNT__MAX], i;

	memset(out, 0, sizeof(__u64) * CNT__MAX);
	if (!s)
		return;
	for (i = 0; i < CNT__MAX; i++)
		ids[i] = i;
	read_counters(s, ids, CNT__MAX, out);
}

int sampler__watch_code_free(struct sampler *s, const struct py_binary_key *key,
			     int fd, __u64 offset, pid_t pid)
{
	struct code_free_probe *p;
	char path[64];
	int i, mine = 0;

	if (!s)
		return -ENODEV;
	for (i = 0; i < s->nprobes; i++) {
		if (!memcmp(&s->probes[i].key, key, sizeof(*key)))
			return s->probes[i].link ? 0 : -ENOENT;
		mine += s->probes[i].pid == pid;
	}
	if (s->nprobes == MAX_PROBES || mine >= PROBES_PER_PID || !offset ||
	    fd < 0)
		return -ENOSPC;
	p = &s->probes[s->nprobes++];
	p->key = *key;
	p->pid = pid;
	/* the open descriptor, not a path that could lead elsewhere now */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	p->link = bpf_program__attach_uprobe(s->skel->progs.pysight_code_free,
					     false, -1, path, offset);
	if (!p->link)
		return -errno;
	return 0;
}

int sampler__set_not_python(struct sampler *s, const struct py_binary_key *key)
{
	__u8 one = 1;

	if (!s)
		return -ENODEV;
	return bpf_map__update_elem(s->skel->maps.not_python, key, sizeof(*key),
				    &one, sizeof(one), BPF_ANY);
}

struct unwind_row *sampler__native_rows(struct sampler *s, uint32_t *n)
{
	*n = s ? s->native_n : 0;
	return s ? s->native_rows : NULL;
}

int sampler__set_native(struct sampler *s, pid_t pid,
			const struct native_maps *m)
{
	__u32 key = pid;

	if (!s || !s->native_rows)
		return -ENODEV;
	return bpf_map__update_elem(s->skel->maps.native_procs, &key,
				    sizeof(key), m, sizeof(*m), BPF_ANY);
}

void sampler__delete_native(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	if (s && s->native_rows)
		bpf_map__delete_elem(s->skel->maps.native_procs, &key,
				     sizeof(key), 0);
}

void sampler__delete_proc(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	if (s)
		bpf_map__delete_elem(s->skel->maps.procs, &key, sizeof(key), 0);
}

/* Entries in a map, counted by walking its keys. */
static unsigned int map_entries(const struct bpf_map *map)
{
	char key[64], next[64];
	unsigned int n = 0;
	int fd = bpf_map__fd(map);
	void *prev = NULL;

	if (bpf_map__key_size(map) > sizeof(key))
		return 0;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, sizeof(key));
		prev = key;
		if (++n >= bpf_map__max_entries(map))
			break;
	}
	return n;
}

/* prog as a task iterator over every task (pid 0), the threads of
 * process pid, or (tid) the task pid alone. */
static struct bpf_link *iter_link(struct bpf_program *prog, pid_t pid,
				  bool tid)
{
	union bpf_iter_link_info info;
	LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &info,
		    .link_info_len = sizeof(info));

	memset(&info, 0, sizeof(info));
	if (tid)
		info.task.tid = pid;
	else
		info.task.pid = pid;
	return bpf_program__attach_iter(prog, pid ? &o : NULL);
}

/* One run of the iterator behind link: fn for each record. */
static int read_threads(struct sampler *s, struct bpf_link *link,
			sampler_thread_fn fn, void *ctx)
{
	struct thread_record r[64];
	int fd, i, n = 0, ret = 0;
	ssize_t got;

	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	s->skel->bss->pass_now = 0;
	while (!ret && (got = read(fd, r, sizeof(r))) >= (ssize_t)sizeof(r[0])) {
		for (i = 0; i < got / (ssize_t)sizeof(r[0]); i++) {
			n++;
			if (fn && (ret = fn(ctx, &r[i])))
				break;
		}
	}
	if (got < 0 && !ret)
		ret = -errno;
	close(fd);
	return ret ? ret : n;
}

int sampler__threads(struct sampler *s, int mode, pid_t tgid,
		     sampler_thread_fn fn, void *ctx)
{
	struct bpf_link *link;
	int ret;

	if (!s)
		return -ENODEV;
	s->skel->bss->iter_mode = mode;
	link = iter_link(s->skel->progs.pysight_threads, tgid, false);
	if (!link)
		return -errno;
	ret = read_threads(s, link, fn, ctx);
	bpf_link__destroy(link);
	return ret;
}

/* One pass of the sweep behind link: its records, from the ring. */
static int sweep_pass(struct sampler *s, struct bpf_link *link)
{
	int ret = read_threads(s, link, NULL, NULL);

	if (ret < 0)
		return ret;
	return ring_buffer__consume(s->sweep_rb);
}

/* Sweep pids one by one, their links kept; those of processes no longer
 * listed are let go.  A link visits the leader alone, whose program
 * walks its threads. */
static int sweep_bounded(struct sampler *s, const pid_t *pids, int n)
{
	struct sweep_link kept[SAMPLER_SWEEP_PIDS];
	int i, j, nkept = 0, ret, all = 0;

	for (i = 0; i < n; i++) {
		kept[nkept].pid = pids[i];
		kept[nkept].link = NULL;
		for (j = 0; j < s->nbounded; j++) {
			if (s->bounded[j].pid == pids[i]) {
				kept[nkept].link = s->bounded[j].link;
				s->bounded[j].link = NULL;
				break;
			}
		}
		if (!kept[nkept].link)
			kept[nkept].link = iter_link(s->skel->progs.pysight_sweep,
						     pids[i], true);
		/* gone already: its exit says so */
		if (kept[nkept].link)
			nkept++;
	}
	for (j = 0; j < s->nbounded; j++)
		bpf_link__destroy(s->bounded[j].link);
	memcpy(s->bounded, kept, nkept * sizeof(kept[0]));
	s->nbounded = nkept;
	for (i = 0; i < nkept; i++) {
		ret = sweep_pass(s, s->bounded[i].link);
		if (ret < 0)
			return ret;
		all += ret;
	}
	return all;
}

/* The gap between ktime and the scheduler's clock for the next passes:
 * the floor of the last second or two of readings (sweep_clock_gap).
 * They drift apart by NTP's slew at most, microseconds a second. */
static void fold_clock_gap(struct sampler *s)
{
	__u64 now = clock__now_ns();
	__s64 seen = s->skel->bss->clock_gap_seen, *f = s->gap_floor;

	if (now - s->gap_second >= 1000000000ULL) {
		f[1] = f[0];
		f[0] = 0;
		s->gap_second = now;
	}
	if (seen && (!f[0] || seen < f[0]))
		f[0] = seen;
	s->skel->bss->clock_gap = f[1] && (!f[0] || f[1] < f[0]) ? f[1] : f[0];
	s->skel->bss->clock_gap_seen = 0;
}

static int sweep_once(struct sampler *s, const pid_t *pids, int n)
{
	int ret;

	if (pids && n <= SAMPLER_SWEEP_PIDS && s->passes++ % SWEEP_RECOUNT &&
	    (__u64)n * SWEEP_TASKS_PER_LINK < s->host_tasks) {
		s->skel->bss->sweep_host = false;
		return sweep_bounded(s, pids, n);
	}
	/* keep the link: making one costs a BPF syscall and a file per
	 * tick.  It visits our own leader, whose program walks every
	 * process (sweep_all_processes). */
	if (!s->sweep_link) {
		s->sweep_link = iter_link(s->skel->progs.pysight_sweep,
					  getpid(), true);
		if (!s->sweep_link)
			return -errno;
	}
	s->skel->bss->sweep_host = true;
	s->skel->bss->iter_visits = 0;
	ret = sweep_pass(s, s->sweep_link);
	s->host_tasks = s->skel->bss->iter_visits;
	return ret;
}

int sampler__sweep(struct sampler *s, const pid_t *pids, int n, bool all,
		   sampler_thread_fn fn, void *ctx)
{
	int ret;

	if (!s || !s->sweep)
		return -ENODEV;
	s->skel->bss->iter_mode = all ? ITER_SWEEP : ITER_SWEEP_MOVED;
	s->sweep_fn = fn;
	s->sweep_ctx = ctx;
	ret = sweep_once(s, pids, n);
	fold_clock_gap(s);
	return ret;
}

int sampler__sweep_drain(struct sampler *s)
{
	if (!s || !s->sweep || !s->sweep_fn)
		return 0;
	return ring_buffer__consume(s->sweep_rb);
}

uint64_t sampler__sweep_capped(struct sampler *s)
{
	return s && s->sweep ? s->skel->bss->sweep_capped : 0;
}

int sampler__kernel_stack(struct sampler *s, int id, __u64 *ips, int max)
{
	__u64 buf[PYSIGHT_KSTACK_DEPTH];
	const struct bpf_map *map;
	__u32 key = id;
	int n;

	if (!s || id < 0)
		return -ENOENT;
	map = s->sweep ? s->skel->maps.task_kstacks : s->skel->maps.kstacks;
	if (bpf_map__lookup_elem(map, &key, sizeof(key), buf, sizeof(buf), 0))
		return -ENOENT;
	for (n = 0; n < PYSIGHT_KSTACK_DEPTH && n < max && buf[n]; n++)
		ips[n] = buf[n];
	return n;
}

uint64_t sampler__ktime_now(void)
{
	return clock__now_ns();
}

void sampler__map_sizes(struct sampler *s, struct sampler_sizes *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	out->procs = map_entries(s->skel->maps.procs);
	out->binaries = map_entries(s->skel->maps.binaries);
	out->not_python = map_entries(s->skel->maps.not_python);
	out->targets = map_entries(s->skel->maps.targets);
	out->tstates = map_entries(s->skel->maps.tstates);
	out->stacks_seen = map_entries(s->skel->maps.stacks_seen);
	out->probes = s->nprobes;
}

void sampler__destroy(struct sampler *s)
{
	int cpu;

	if (!s)
		return;
	bpf_link__destroy(s->sweep_link);
	for (cpu = 0; cpu < s->nbounded; cpu++)
		bpf_link__destroy(s->bounded[cpu].link);
	for (cpu = 0; cpu < s->nprobes; cpu++)
		bpf_link__destroy(s->probes[cpu].link);
	for (cpu = 0; s->cpus && cpu < s->ncpus; cpu++) {
		bpf_link__destroy(s->cpus[cpu].link);
		if (s->cpus[cpu].fd >= 0)
			close(s->cpus[cpu].fd);
	}
	free(s->cpus);
	ring_buffer__free(s->rb);
	ring_buffer__free(s->sweep_rb);
	if (s->native_rows)
		munmap(s->native_rows, s->native_len);
	pysight_bpf__destroy(s->skel);
	free(s);
}
