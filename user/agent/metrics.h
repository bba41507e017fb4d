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

struct metrics;

/* addr is HOST:PORT, HOST an IPv4 address: bound and listening, not yet
 * served.  -errno with why in err. */
int metrics__open(const char *addr, struct metrics **out, char *err,
		  size_t errlen);
/* Serve it, from a thread started now.  -errno with why in err. */
int metrics__start(struct metrics *m, char *err, size_t errlen);
/* A scrape waits for fresh text. */
bool metrics__wanted(struct metrics *m);
/* The exposition served from now on (copied); a waiting scrape gets it. */
void metrics__set(struct metrics *m, const char *text);
void metrics__stop(struct metrics *m);

#endif /* __PYSIGHT_METRICS_H */
