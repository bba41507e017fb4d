/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading profiles back into the model: for report and diff. */
#ifndef __PYSIGHT_READER_H
#define __PYSIGHT_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "profile.h"

/*
 * Read the profile in path, whatever format of ours it is in.  0, or
 * -errno with a one-line reason in err that names the file and the line
 * or byte where it went wrong.
 */
int reader__load(const char *path, struct profile **out, char *err,
		 size_t errlen);
/* The same from f, at most max bytes: the format it found in *format
 * (named in errors), and the reader's reason alone in err. */
int reader__read(FILE *f, size_t max, struct profile **out,
		 const char **format, char *err, size_t errlen);

/* Folded stacks from f, into a new profile.  The unit is time (the file
 * holds microseconds) when the stacks name off-CPU causes, else samples.
 * -EINVAL with "line N: why" in err. */
int read_folded(FILE *f, struct profile **out, char *err, size_t errlen);

/* A gzip-compressed (or plain) perftools.profiles.Profile, at most max
 * bytes either way.  -EINVAL with "byte N: why" or "sample N: why". */
int read_pprof(FILE *f, size_t max, struct profile **out, char *err,
	       size_t errlen);

/* A speedscope document of sampled profiles.  -EINVAL with "byte N: why"
 * for bad JSON, "profiles[2].samples[7]: why" for a bad document. */
int read_speedscope(FILE *f, size_t max, struct profile **out, char *err,
		    size_t errlen);

#endif /* __PYSIGHT_READER_H */
