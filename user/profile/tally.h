/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A profile flattened into rows with self and total weight: what report,
 * diff and top show.  A row is a frame as written (function and line),
 * a function, or a file.
 */
#ifndef __PYSIGHT_TALLY_H
#define __PYSIGHT_TALLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "profile.h"

enum tally_by {
	BY_LINE = 0,		/* name (file:line), as the frame reads */
	BY_FUNCTION,		/* name (file) */
	BY_FILE,		/* file */
};

struct tally_opts {
	int by;			/* enum tally_by */
	pid_t pid;		/* only this process, when not 0 */
	pid_t tid;		/* only this thread, when not 0 */
	const char *process;	/* only processes of this name, when set */
	const char *thread;	/* only threads of this name, when set */
	bool per_process;	/* a row per (frame, process), as top groups */
	/* asyncio tasks' own time alone (profile__kind_is_task), else
	 * everything but it: the two never add up */
	bool tasks;
};

/* "line", "function", "file"; -EINVAL. */
int tally__parse_by(const char *s, int *by);
/* A number is an id, anything else a name; -EINVAL for "". */
int tally__parse_label(const char *s, pid_t *id, const char **name);

struct tally_row {
	char *text;		/* how the row reads */
	const struct pframe *frame;	/* one frame of the row */
	uint64_t self, total;	/* in the profile's unit */
	pid_t pid;		/* with per_process: its process, 0 unknown */
	const char *process;	/* and that process's name, or NULL */
};

struct tally {
	struct tally_row *rows;	/* by self, then total, then text */
	size_t n;
	uint64_t total;		/* of the entries kept */
	uint64_t by_kind[KIND__MAX];
	bool tasks;		/* tally_opts' */
};

int tally__build(const struct profile *p, const struct tally_opts *o,
		 struct tally *out);
void tally__free(struct tally *t);

#endif /* __PYSIGHT_TALLY_H */
