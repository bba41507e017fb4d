/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one-line reason a library call leaves in its caller's err buffer
 * (char *err, size_t errlen), for the functions that may be given none.
 */
#ifndef __PYSIGHT_ERRMSG_H
#define __PYSIGHT_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format into err, unless err is NULL or errlen is 0. */
__attribute__((format(printf, 3, 4)))
static inline void errmsg__set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif /* __PYSIGHT_ERRMSG_H */
