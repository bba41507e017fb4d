/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What top shows, without the screen: each interval's profile tallied
 * into rows per (frame, process), and what every row has weighed since
 * the start.  Rows are kept by line and by function at once, so that
 * switching lines on or off, or grouping by process, loses no history.
 */
#ifndef __PYSIGHT_TOPVIEW_H
#define __PYSIGHT_TOPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "profile.h"

/* The columns rows sort by, as top's keys 1 to 4 pick them. */
enum topview_sort {
	SORT_OWN = 0,		/* own share of the last interval */
	SORT_TOTAL,		/* total share of the last interval */
	SORT_OWN_TIME,		/* own weight since the start */
	SORT_TOTAL_TIME,	/* total weight since the start */
	SORT__MAX,
};

struct topview_opts {
	bool lines;		/* rows by line, else by function */
	bool by_process;	/* a row per process, rows of one process together */
	int sort;		/* enum topview_sort */
};

struct topview_row {
	const char *text;	/* "name (file:line)"; the view's */
	pid_t pid;		/* its process; 0 when it spans several */
	const char *process;	/* that process's name; NULL if unknown or several */
	unsigned int nprocs;	/* processes it spans */
	uint64_t self, total;	/* in the last interval, in the profile's unit */
	uint64_t self_acc, total_acc;	/* since the start */
	uint64_t group;		/* by_process: its process's own weight, by the sort's span */
};

struct topview;

struct topview *topview__new(void);
void topview__free(struct topview *v);

/* Tally p as the latest interval; -ENOMEM. */
int topview__add(struct topview *v, const struct profile *p);
/* The weight of the latest interval: what shares are of. */
uint64_t topview__interval_total(const struct topview *v);
unsigned int topview__intervals(const struct topview *v);

/* The rows with weight in the latest interval or before, sorted for o,
 * in an array the caller frees; texts stay the view's until it is freed. */
int topview__rows(const struct topview *v, const struct topview_opts *o,
		  struct topview_row **rows, size_t *n);

#endif /* __PYSIGHT_TOPVIEW_H */
