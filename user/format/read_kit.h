/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the pprof and speedscope readers share; reader.c only sniffs a
 * file and hands it to one of them. */
#ifndef __PYSIGHT_READ_KIT_H
#define __PYSIGHT_READ_KIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "profile.h"

/*
 * What the structured readers share: a stack built root first from
 * (name, file, line) frames, where a kernel frame has the file PFRAME_KERNEL_FILE
 * and an off-CPU pseudo-frame sets the kind, then added with its labels.
 */
#define READER_MAX_DEPTH	4096

struct stack_build {
	const struct pframe *frames[READER_MAX_DEPTH];
	unsigned int n;
	int kind;		/* enum sample_kind */
};

/* -E2BIG past READER_MAX_DEPTH frames, -ENOMEM. */
int stack_build__push(struct profile *p, struct stack_build *b,
		      const char *name, const char *file, int line,
		      int firstline);
/* Add the stack with these labels (parsed_labels of labels.h, may be
 * NULL); -ENOMEM, -EINVAL when the stack is empty. */
struct parsed_labels;
int stack_build__add(struct profile *p, const struct stack_build *b,
		     const struct parsed_labels *lab, uint64_t count,
		     uint64_t weight);

/* A reader's one-line reason into err; returns -EINVAL. */
int read_kit__error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* All of f, NUL-terminated, at most max bytes: -EFBIG beyond. */
int read_kit__slurp(FILE *f, size_t max, uint8_t **out, size_t *len);

#endif /* __PYSIGHT_READ_KIT_H */
