/* A library the --native tests strip: its frames have no names. */
volatile unsigned long hidden_sink;

static __attribute__((noinline)) void hidden_loop(unsigned long n)
{
	unsigned long i, j;

	/* about as long per n as libshapes' loop */
	for (i = 0; i < n; i++)
		for (j = 0; j < 6; j++)
			hidden_sink += i ^ (j << 3);
}

void hidden_burn(unsigned long n)
{
	hidden_loop(n);
	hidden_sink++;
}
