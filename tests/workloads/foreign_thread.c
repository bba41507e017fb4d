/*
 * A thread Python did not create, calling into Python again and again:
 * each call builds a new thread state (PyGILState_Ensure) and frees it
 * on return.  Between calls the thread spins in C, holding on to the
 * blocks malloc just got back, so the next thread state lands at
 * another address while the old one lies freed with its id intact.
 * Built by tests/integration/test_hostile.py.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define HOLD 128

static void (*callback)(void);
static volatile int stop;
static double spun;

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *loop(void *arg)
{
	void *hold[HOLD] = { 0 };
	volatile unsigned long x = 0;
	double t;
	int i;

	(void)arg;
	while (!stop) {
		callback();
		for (i = 0; i < HOLD; i++) {
			free(hold[i]);
			hold[i] = malloc(16 + 16 * i);
		}
		t = cpu_now();
		while (cpu_now() - t < 0.002)
			x++;
		spun += cpu_now() - t;
	}
	for (i = 0; i < HOLD; i++)
		free(hold[i]);
	return NULL;
}

static pthread_t th;

int foreign_start(void (*cb)(void))
{
	callback = cb;
	return pthread_create(&th, NULL, loop, NULL);
}

double foreign_stop(void)
{
	stop = 1;
	pthread_join(th, NULL);
	return spun;
}
