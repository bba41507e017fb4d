/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a Python process calls itself, for the agent's resources:
 * OTEL_SERVICE_NAME from its own environment when set, else its
 * container's id, else the script or module it runs (`python3 -m
 * gunicorn` is "gunicorn", `python3 app/serve.py` is "serve").  All of
 * it read from /proc, bounded: the process is not trusted.
 */
#ifndef __PYSIGHT_SERVICE_H
#define __PYSIGHT_SERVICE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SERVICE_NAME_MAX	128

struct service_info {
	char service[SERVICE_NAME_MAX];
	char exe_path[PATH_MAX];
	char exe_name[64];
	unsigned long long start_time;	/* /proc/PID/stat, to tell reuse */
};

/* 0, or -errno when the process is gone.  container may be NULL. */
int service__of(pid_t pid, const char *container, struct service_info *out);
/* The name a command line gives (args NUL-separated, len bytes), into
 * out; empty when it names nothing.  For tests. */
void service__from_cmdline(const char *args, size_t len, char *out,
			   size_t outlen);
/* The process's start time (clock ticks since boot), 0 when gone. */
unsigned long long service__start_time(pid_t pid);
/* What service__of reads of /proc, parsed: OTEL_SERVICE_NAME from an
 * environ (len bytes), true when set; the start time in a stat line
 * (NUL-terminated), 0 when none.  For tests and the fuzzer. */
bool service__from_environ(const char *env, size_t len, char *out,
			   size_t outlen);
unsigned long long service__stat_start_time(const char *stat);

#endif /* __PYSIGHT_SERVICE_H */
