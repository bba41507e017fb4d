/*
 * libburn for the --native tests (tests/integration/test_native.py):
 * a CPU loop two calls deep, a read() on a pipe nobody writes, and a
 * callback into Python.  Built by the test with and without frame
 * pointers.
 */
#include <unistd.h>

volatile unsigned long burn_sink;

__attribute__((noinline)) void burn_inner(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		burn_sink += i * i;
}

__attribute__((noinline)) void burn_outer(unsigned long n)
{
	burn_inner(n);
	burn_sink++;	/* not a tail call: burn_outer stays on the stack */
}

int burn_io(void)
{
	int p[2];
	char c;

	if (pipe(p))
		return -1;
	return (int)read(p[0], &c, 1);
}

/* burn_inner's loop depth calls down (tools/bench: the cost a frame) */
__attribute__((noinline)) unsigned long burn_deep(int depth, unsigned long n)
{
	unsigned long r;

	if (depth <= 0) {
		burn_inner(n);
		return burn_sink;
	}
	r = burn_deep(depth - 1, n);
	burn_sink++;	/* not a tail call */
	return r + 1;
}

int burn_cb(int (*cb)(int), int n)
{
	int r = cb(n);

	burn_sink++;
	return r + 1;
}
