/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's own files in a directory: the rolling profiles of
 * --output-dir (pysight-TIME.EXT) and the snapshots (snapshot-TIME.EXT).
 * Named by the wall clock in UTC, so that a listing sorts oldest first,
 * and deleted past --retain or, oldest first, past --retain-size.
 */
#ifndef __PYSIGHT_RETENTION_H
#define __PYSIGHT_RETENTION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct retention {
	const char *dir;
	const char *prefix;	/* files of ours are named PREFIX-... */
	double max_age_s;	/* by modification time */
	uint64_t max_bytes;	/* ours here, together; 0: no bound */
	uid_t owner;		/* whom we write for: their files are ours too */
	uint64_t pruned;	/* files deleted so far */
};

/* DIR/PREFIX-20250102T030405Z.EXT: the second of t_ns (wall clock). */
void retention__name(const struct retention *r, uint64_t t_ns,
		     const char *ext, char *buf, size_t len);
/* DIR/PREFIX-20250102T030405.678Z.EXT, to the millisecond, and -2, -3 ...
 * before the extension while a file has the name already: triggers come
 * in bursts, and each client is told its own file. */
void retention__unique_name(const struct retention *r, uint64_t t_ns,
			    const char *ext, char *buf, size_t len);
/* Delete our files past the age, and the oldest past the total size.
 * kept, the path just written (or NULL), is never deleted and counts
 * first.  A file is ours by its name and by its owner: in /tmp, another
 * user's pysight-* is not. */
void retention__prune(struct retention *r, const char *kept);

#endif /* __PYSIGHT_RETENTION_H */
