/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The smallest test harness: CHECK, and a closing "N passed, M failed". */
#ifndef __PYSIGHT_CHECK_H
#define __PYSIGHT_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                \
	do {                                                            \
		if (cond) {                                             \
			check_passed++;                                 \
		} else {                                                \
			check_failed++;                                 \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__,   \
				__LINE__, #cond);                       \
			fprintf(stderr, __VA_ARGS__);                   \
			fputc('\n', stderr);                            \
		}                                                       \
	} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed != 0;
}

#endif /* __PYSIGHT_CHECK_H */
