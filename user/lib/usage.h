/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Bad command lines: one line on stderr and exit status 2, every command. */
#ifndef __PYSIGHT_USAGE_H
#define __PYSIGHT_USAGE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <linux/futex.h>

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

/* A path an option names; an empty one is a usage error now, not a
 * failure to write after the whole recording. */
static inline const char *path_arg(const char *opt, const char *arg)
{
	if (!*arg)
		bad_value(opt, arg, "expected a path");
	return arg;
}

/* An option's number: an integer from min to max, else exit 2 saying
 * what was wanted. */
static inline long parse_long(const char *opt, const char *arg, long min,
			      long max, const char *want)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(arg, &end, 10);
	if (errno || end == arg || *end || l < min || l > max)
		bad_value(opt, arg, want);
	return l;
}

/* A pid or tid: none exceeds FUTEX_TID_MASK, the kernel's own bound. */
static inline pid_t parse_pid(const char *opt, const char *arg)
{
	return (pid_t)parse_long(opt, arg, 1, FUTEX_TID_MASK,
				 "expected a process id");
}

/* The same for seconds and such: a number above min (or equal to it
 * when min_ok) and at most max. */
static inline double parse_double(const char *opt, const char *arg,
				  double min, bool min_ok, double max,
				  const char *want)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(arg, &end);
	if (errno || end == arg || *end || !(d > min || (min_ok && d == min)) ||
	    d > max)
		bad_value(opt, arg, want);
	return d;
}

/* A duration, the same syntax for every option: seconds, or a number
 * with s, m, h or d ("90", "1.5m", "24h"), bounded as parse_double is. */
static inline double parse_duration(const char *opt, const char *arg,
				    double min, bool min_ok, double max)
{
	char want[128], *end;
	double v, unit = 1;

	errno = 0;
	v = strtod(arg, &end);
	if (*end && !end[1])
		unit = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 :
		       *end == 'd' ? 86400 : 0;
	snprintf(want, sizeof(want), "expected a duration such as 30, 60s, 5m "
		 "or 24h, %s %g s and at most %.10g s", min_ok ? "from" : "above",
		 min, max);
	if (errno || end == arg || (*end && (end[1] || !unit)) ||
	    !(v * unit > min || (min_ok && v * unit == min)) || v * unit > max)
		bad_value(opt, arg, want);
	return v * unit;
}

#endif /* __PYSIGHT_USAGE_H */
