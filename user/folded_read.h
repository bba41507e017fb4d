/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading folded stacks back: for report, and later diff. */
#ifndef __PYSIGHT_FOLDED_READ_H
#define __PYSIGHT_FOLDED_READ_H

#include <stdint.h>
#include <stdio.h>

/* frames[0] is the root; the strings live until the callback returns. */
typedef int (*folded_cb)(char **frames, int n, uint64_t count, void *ctx);

/*
 * Parse "a;b;c COUNT" lines.  Returns 0, a callback's non-zero return, or
 * -EINVAL with "line N: why" in err for input that is not folded stacks.
 */
int folded__read(FILE *f, folded_cb cb, void *ctx, char *err, size_t errlen);

#endif /* __PYSIGHT_FOLDED_READ_H */
