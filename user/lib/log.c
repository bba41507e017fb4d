// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int log_verbose;

void log__print(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!log__on(level))
		return;
	/* the agent's exporter thread speaks too: whole lines only */
	flockfile(stderr);
	fputs("pysight: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}
