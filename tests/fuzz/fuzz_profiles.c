// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for the readers report and diff give any file to:
 * folded, pprof (gzip'd or not) and speedscope.  Byte 0 picks the
 * reader, or (3) the format sniffing of reader__load that picks one;
 * the rest is the file.  A profile that reads is written again in every
 * format, the SVG flame graph too, and tallied, so what a reader lets
 * through must also be safe for the writers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "reader.h"
#include "tally.h"
#include "writer.h"

#define MAX_INPUT	(1 << 20)

static void exercise(struct profile *p)
{
	const struct writer *w[] = { &writer_folded, &writer_pprof,
				     &writer_speedscope, &writer_svg };
	struct tally_opts o = { .by = BY_FUNCTION };
	struct tally t;
	size_t i;

	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		FILE *f = fopen("/dev/null", "w");

		if (f) {
			w[i]->write(p, NULL, f);
			fclose(f);
		}
	}
	if (!tally__build(p, &o, &t))
		tally__free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL;
	const char *format;
	char err[256];
	FILE *f;
	int ret;

	if (size < 1 || size > MAX_INPUT)
		return 0;
	f = fmemopen((void *)(data + 1), size - 1 ? size - 1 : 1, "r");
	if (!f)
		return 0;
	if (size == 1)
		fgetc(f);	/* an empty file */
	switch (data[0] % 4) {
	case 0:
		ret = read_folded(f, &p, err, sizeof(err));
		break;
	case 1:
		ret = read_pprof(f, MAX_INPUT * 8, &p, err, sizeof(err));
		break;
	case 2:
		ret = read_speedscope(f, MAX_INPUT, &p, err, sizeof(err));
		break;
	default:
		ret = reader__read(f, MAX_INPUT * 8, &p, &format, err, sizeof(err));
		break;
	}
	fclose(f);
	if (!ret) {
		exercise(p);
		profile__free(p);
	}
	return 0;
}
