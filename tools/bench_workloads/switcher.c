// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Context-switch workloads without Python, for the off-CPU and cgroup
 * benchmarks (tools/benchlib/sections.py builds this with cc).
 *
 *   switcher pingpong SECONDS [CPU]
 *	Two processes hand one byte back and forth over two pipes, as
 *	`perf bench sched pipe` does: every round trip is two switches per
 *	side.  With CPU, both run there: every hand-off is then a switch on
 *	that CPU, with no cross-CPU wake-up or idle exit to add noise.  Prints "ready PID", waits for a line on stdin (so that a
 *	profiler can attach first), runs SECONDS and prints
 *	{"round_trips": N, "wall": S, "rate": N/S}.
 *
 *   switcher busy THREADS SPIN_US SLEEP_US SECONDS
 *	THREADS threads, each spinning SPIN_US then sleeping SLEEP_US, for
 *	SECONDS: many busy tasks that are not the profiler's target, at a
 *	load that leaves the machine usable.  Prints "ready PID".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int pingpong(double seconds, int cpu)
{
	int ping[2], pong[2];
	char c = 0, line[64];
	long n = 0;
	double t0, t1;
	pid_t child;

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	if (pipe(ping) || pipe(pong)) {
		perror("pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		/* the echo side: exits when the parent closes its end */
		close(ping[1]);
		close(pong[0]);
		while (read(ping[0], &c, 1) == 1)
			if (write(pong[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = now();
	t1 = t0;
	while (t1 - t0 < seconds) {
		/* check the clock every 256 round trips: the check costs less
		 * than a switch, but not nothing */
		for (int i = 0; i < 256; i++) {
			if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) {
				perror("pipe i/o");
				return 1;
			}
		}
		n += 256;
		t1 = now();
	}
	close(ping[1]);
	waitpid(child, NULL, 0);
	printf("{\"round_trips\": %ld, \"wall\": %.6f, \"rate\": %.1f}\n", n, t1 - t0,
	       n / (t1 - t0));
	return 0;
}

static long spin_ns, sleep_ns;
static double end_at;

static void *busy_thread(void *arg)
{
	struct timespec ts = { sleep_ns / 1000000000L, sleep_ns % 1000000000L };
	volatile unsigned long x = 0;

	(void)arg;
	while (now() < end_at) {
		double stop = now() + spin_ns / 1e9;

		while (now() < stop)
			x++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int busy(int threads, long spin_us, long sleep_us, double seconds)
{
	pthread_t *tids = calloc(threads, sizeof(*tids));
	pthread_attr_t attr;
	int i;

	if (!tids)
		return 1;
	spin_ns = spin_us * 1000;
	sleep_ns = sleep_us * 1000;
	end_at = now() + seconds;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < threads; i++) {
		if (pthread_create(&tids[i], &attr, busy_thread, NULL)) {
			fprintf(stderr, "failed to create thread %d\n", i);
			return 1;
		}
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "pingpong"))
		return pingpong(atof(argv[2]), argc == 4 ? atoi(argv[3]) : -1);
	if (argc == 6 && !strcmp(argv[1], "busy"))
		return busy(atoi(argv[2]), atol(argv[3]), atol(argv[4]), atof(argv[5]));
	fprintf(stderr, "usage: switcher pingpong SECONDS [CPU]\n"
			"       switcher busy THREADS SPIN_US SLEEP_US SECONDS\n");
	return 2;
}
