/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's health as a Prometheus text endpoint (--metrics-addr), by
 * libmicrohttpd on a thread of its own.  The agent sets the text; a
 * scrape reads the latest.
 */
#ifndef __PYSIGHT_METRICS_H
#define __PYSIGHT_METRICS_H

#include <stddef.h>

struct metrics;

/* addr is HOST:PORT, HOST an IPv4 address.  -errno with why in err. */
int metrics__start(const char *addr, struct metrics **out, char *err,
		   size_t errlen);
/* The exposition served from now on (copied). */
void metrics__set(struct metrics *m, const char *text);
void metrics__stop(struct metrics *m);

#endif /* __PYSIGHT_METRICS_H */
