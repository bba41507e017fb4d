/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __PYSIGHT_FILENAME_H
#define __PYSIGHT_FILENAME_H

#include <stddef.h>

/*
 * py-spy's short file names: the part after site-packages/dist-packages,
 * after the stdlib directory (lib/python3.X/), or relative to the
 * process's working directory cwd (may be NULL).  Otherwise unchanged.
 * Returns a pointer into path.
 */
const char *filename__shorten(const char *path, const char *cwd);

/* Where path's code lives by the same rules: enum pframe_origin's
 * ORIGIN_SITE, ORIGIN_STDLIB or ORIGIN_OWN. */
int filename__origin(const char *path);

#endif /* __PYSIGHT_FILENAME_H */
