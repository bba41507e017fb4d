/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's health as a Prometheus text endpoint (--metrics-addr), by
 * libmicrohttpd on a thread of its own.  The address is taken at start,
 * before BPF is loaded, so a bad one fails there; the thread starts only
 * once the agent has dropped its privileges, so that it holds no more
 * than the agent does (a thread's capabilities are its own).  The text is
 * made when a scrape asks for it: the scrape says so (metrics__wanted)
 * and waits a moment for the agent's loop to set it.
 */
#ifndef __PYSIGHT_METRICS_H
#define __PYSIGHT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "exporter.h"
#include "spool.h"

struct metrics;

/* What the endpoint shows: the agent's counts, as its loop reads them. */
struct metrics_values {
	uint64_t samples, sample_errors;
	uint64_t ringbuf_lost;		/* and ids never named */
	unsigned int python_processes;
	struct exporter_stats ex;	/* zeros without --otlp */
	struct spool_stats spool;
	uint64_t snapshots;
	size_t window_entries;		/* the history's */
	double cpu_s;			/* the agent's own, since it started */
	uint64_t resident_bytes;
	unsigned int interned;		/* objects the collector's profile holds */
};

/* addr is HOST:PORT, HOST an IPv4 address: bound and listening, not yet
 * served.  -errno with why in err. */
int metrics__open(const char *addr, struct metrics **out, char *err,
		  size_t errlen);
/* Serve it, from a thread started now.  -errno with why in err. */
int metrics__start(struct metrics *m, char *err, size_t errlen);
/* A scrape waits for fresh text. */
bool metrics__wanted(struct metrics *m);
/* The text's room: every count at its largest fits (test_agent.c). */
#define METRICS_TEXT_MAX	2048

/* v in the Prometheus text format, into buf: what snprintf returns. */
int metrics__format(const struct metrics_values *v, char *buf, size_t len);
/* Serve v from now on; a waiting scrape gets it. */
void metrics__update(struct metrics *m, const struct metrics_values *v);
void metrics__stop(struct metrics *m);

#endif /* __PYSIGHT_METRICS_H */
