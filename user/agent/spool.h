/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's export queue: a directory of numbered files, one encoded
 * export each, sent oldest first.  Bounded in bytes: when a new export
 * does not fit, the oldest are dropped and counted.  On disk so that an
 * outage, or a restart during one, loses nothing while there is room.
 * Thread-safe: the sampling loop pushes, the sender peeks and pops.
 */
#ifndef __PYSIGHT_SPOOL_H
#define __PYSIGHT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

struct spool_stats {
	uint64_t depth;		/* exports queued */
	uint64_t bytes;		/* their size */
	uint64_t dropped;	/* the oldest, dropped for room */
	uint64_t pushed;
};

/* Open (creating, mode 0700) dir, taking up what a previous run left in
 * it; max_bytes bounds it.  -errno with a one-line reason in err. */
int spool__open(const char *dir, uint64_t max_bytes, struct spool **out,
		char *err, size_t errlen);
void spool__free(struct spool *s);

/* Queue one export: 0, or -errno (the disk refused it: it is lost,
 * and counted as dropped). -E2BIG when it alone exceeds the bound. */
int spool__push(struct spool *s, const void *data, size_t len);
/* The oldest export, read into *data (malloc'd, the caller frees) with
 * its sequence number: 0, -ENOENT when empty, -errno. */
int spool__peek(struct spool *s, void **data, size_t *len, uint64_t *seq);
/* Done with seq: refused for good, or not ours to send. */
void spool__pop(struct spool *s, uint64_t seq);
/* Done with seq: the server took it.  A push that dropped it for room
 * meanwhile did not count it: it was not lost. */
void spool__sent(struct spool *s, uint64_t seq);
/* Its send failed, to be retried: if a push dropped it for room while
 * it was out, it is lost, and counted now. */
void spool__failed(struct spool *s, uint64_t seq);
void spool__stats(struct spool *s, struct spool_stats *st);

#endif /* __PYSIGHT_SPOOL_H */
