/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A thread's scheduler counts from /proc, read now. */
#ifndef __PYSIGHT_SCHEDSTAT_H
#define __PYSIGHT_SCHEDSTAT_H

#include <stdint.h>
#include <sys/types.h>

/*
 * How many times thread tid of process pid was switched in
 * (sched_info.pcount, the third count of /proc/PID/task/TID/schedstat):
 * 0, or -errno (-ENOENT: gone, or a kernel without CONFIG_SCHED_INFO).
 * It grows the moment the thread runs, unlike its CPU time, which a
 * running thread's count lags by up to a scheduler tick.
 */
int schedstat__arrivals(pid_t pid, pid_t tid, uint64_t *out);

#endif /* __PYSIGHT_SCHEDSTAT_H */
