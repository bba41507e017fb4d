/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Every output format sits behind this one interface. */
#ifndef __PYSIGHT_WRITER_H
#define __PYSIGHT_WRITER_H

#include <stdio.h>
#include "profile.h"

struct writer {
	const char *name;	/* -f value */
	const char *ext;	/* file extension that implies it */
	int (*write)(struct profile *p, FILE *f);
};

extern const struct writer writer_folded;

/* By -f name; NULL when unknown. */
const struct writer *writer__find(const char *name);
/* By the output file's extension; folded when nothing matches. */
const struct writer *writer__for_path(const char *path);

/*
 * Write to a temporary file next to path and rename it into place, so an
 * interrupted run leaves the old file or a whole new one, never half.
 */
int writer__write_file(const struct writer *w, struct profile *p,
		       const char *path);

#endif /* __PYSIGHT_WRITER_H */
