/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Bad command lines: one line on stderr and exit status 2, every command. */
#ifndef __PYSIGHT_USAGE_H
#define __PYSIGHT_USAGE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noreturn, format(printf, 1, 2)))
static inline void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("pysight: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

__attribute__((noreturn))
static inline void bad_value(const char *opt, const char *arg,
			     const char *want)
{
	usage_error("invalid value '%s' for %s: %s", arg, opt, want);
}

#endif /* __PYSIGHT_USAGE_H */
