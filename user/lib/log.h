/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One way to speak on stderr, as perf's debug.h and bpftool's p_err do.
 * Every line starts "pysight: " and ends with a newline the caller does
 * not write.  pr_err and pr_warn always print, pr_info is the normal
 * progress line, pr_debug needs -v and pr_debug2 -vv.  What a target
 * named goes through utf8__escape first: these print as they are told.
 */
#ifndef __PYSIGHT_LOG_H
#define __PYSIGHT_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_ERR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,	/* -v */
	LOG_DEBUG2,	/* -vv */
};

/* How many -v were given: set once, by the option parser. */
extern int log_verbose;

__attribute__((format(printf, 2, 3)))
void log__print(enum log_level level, const char *fmt, ...);

static inline bool log__on(enum log_level level)
{
	return level <= LOG_INFO || log_verbose >= (int)level - LOG_INFO;
}

#define pr_err(...)	log__print(LOG_ERR, __VA_ARGS__)
#define pr_warn(...)	log__print(LOG_WARN, __VA_ARGS__)
#define pr_info(...)	log__print(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log__print(LOG_DEBUG, __VA_ARGS__)
#define pr_debug2(...)	log__print(LOG_DEBUG2, __VA_ARGS__)

#endif /* __PYSIGHT_LOG_H */
