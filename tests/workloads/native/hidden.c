/* A library the --native tests strip: its frames have no names. */
volatile unsigned long hidden_sink;

static __attribute__((noinline)) void hidden_loop(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		hidden_sink += i ^ (i >> 3);
}

void hidden_burn(unsigned long n)
{
	hidden_loop(n);
	hidden_sink++;
}
