/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading profiles back into the model: for report, and later diff. */
#ifndef __PYSIGHT_READER_H
#define __PYSIGHT_READER_H

#include <stddef.h>
#include <stdio.h>
#include "profile.h"

/*
 * Read the profile in path, whatever format of ours it is in.  0, or
 * -errno with a one-line reason in err that names the file and the line
 * or byte where it went wrong.
 */
int reader__load(const char *path, struct profile **out, char *err,
		 size_t errlen);

/* Folded stacks from f, into a new profile.  The unit is time (the file
 * holds microseconds) when the stacks name off-CPU causes, else samples.
 * -EINVAL with "line N: why" in err. */
int read_folded(FILE *f, struct profile **out, char *err, size_t errlen);

#endif /* __PYSIGHT_READER_H */
