/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's export path.  The history's slices between two times
 * become a profile of their own; what goes out on a schedule (exports,
 * rotated files) is thinned back to -r when --window-rate samples
 * faster; and a profile goes to the spool as an OTLP request, with each
 * process's resource, kept while the process has samples.  The
 * exporter's thread sends what the spool holds.
 */
#ifndef __PYSIGHT_EXPORT_H
#define __PYSIGHT_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "history.h"
#include "profile.h"

struct spool;
struct exporter;

struct export_opts {
	int mode;			/* enum profile_mode */
	unsigned int rate;		/* Hz, as sampled */
	unsigned int export_rate;	/* Hz, of what goes out on a schedule */
	const char *host;		/* host.name */
	const char *const *tags;	/* "key=value": resource attributes */
	int ntags;
	struct history *history;
	struct spool *spool;		/* NULL: nothing goes out by OTLP */
	struct exporter *exporter;	/* kicked for each export queued */
	/* The version of pid's interpreter ("3.12.1") into out, left
	 * alone when unknown: the collector knows it, a layer above. */
	void (*runtime_version)(void *ctx, pid_t pid, char *out, size_t len);
	void *ctx;
};

struct export;

/* o's pointers are borrowed: they outlive the export.  NULL on ENOMEM. */
struct export *export__new(const struct export_opts *o);
/* Forget every process known, and free. */
void export__free(struct export *x);

/* The slices that end after since and by until, filtered (f may be
 * NULL), as a profile of src's unit and metadata (src: the profile they
 * were cut from), its time range what they cover; NULL on ENOMEM. */
struct profile *export__window(struct export *x, struct profile *src,
			       uint64_t since, uint64_t until,
			       const struct history_filter *f);
/* The same unfiltered, at the export rate: what exports and files hold. */
struct profile *export__period(struct export *x, struct profile *src,
			       uint64_t since, uint64_t until);
/* q, covering since..until, into the spool as an OTLP request marked
 * with trigger (NULL: a scheduled export); a no-op without a spool.  0,
 * or -ENOMEM.  A full disk is logged, not returned: the loop goes on. */
int export__send(struct export *x, struct profile *q, uint64_t since,
		 uint64_t until, const char *trigger);
/* The scheduled export of since..until, when anything was sampled; then
 * processes that recent exports did not use are forgotten.  0, or
 * -ENOMEM when its profile could not be made: the period is still to
 * export, with the next. */
int export__interval(struct export *x, struct profile *src, uint64_t since,
		     uint64_t until);
/* Exports put to the spool, or dropped there for room. */
uint64_t export__made(const struct export *x);

#endif /* __PYSIGHT_EXPORT_H */
