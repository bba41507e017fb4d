/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Every output format sits behind this one interface. */
#ifndef __PYSIGHT_WRITER_H
#define __PYSIGHT_WRITER_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "labels.h"
#include "profile.h"

/* How a profile is to be shown, whatever the format. */
struct write_opts {
	int groups[GROUP__MAX];	/* --group-by roots, in order */
	int ngroups;
};

#define WRITER_EXTS 3

struct writer {
	const char *name;		/* -f value */
	const char *exts[WRITER_EXTS];	/* file extensions that imply it */
	int (*write)(struct profile *p, const struct write_opts *o, FILE *f);
};

extern const struct writer writer_folded;
extern const struct writer writer_speedscope;
extern const struct writer writer_pprof;
extern const struct writer writer_svg;

/* A differential flame graph: AFTER's widths, red where a frame's share
 * grew since BEFORE, blue where it shrank. */
int svg__write_diff(struct profile *before, struct profile *after,
		    const struct write_opts *o, FILE *f);

/* By -f name; NULL when unknown. */
const struct writer *writer__find(const char *name);
/* By the output file's extension; folded for a name without one, NULL
 * for an extension no writer has. */
const struct writer *writer__for_path(const char *path);
/* "folded, speedscope, ...": the -f choices, for errors. */
const char *writer__names(char *buf, size_t len);
/* -f's argument, checked: exits 2 naming the choices when no writer has it. */
const char *writer__check_format(const char *name);
/* The writer -f names, else the one path's extension names; exits 2 with
 * the formats and extensions to choose from when neither does. */
const struct writer *writer__choose(const char *format, const char *path);

/*
 * Write a profile where the user's -o points.  A regular file, or a name
 * not yet taken, is written under a temporary name next to it and renamed
 * into place, so an interrupted run leaves the old file or a whole new
 * one, never half.  A character device, a FIFO or a socket is written
 * into, never replaced (-o /dev/null).  "-", /dev/stdout, /dev/stderr and
 * /dev/fd/N are the descriptors we hold.  A directory is -EISDIR, a
 * block device -ENOTSUP.
 */
int writer__write_file(const struct writer *w, struct profile *p,
		       const struct write_opts *o, const char *path);

/* The same for any writing function: fn's error, or the file's. */
int writer__atomic(const char *path, int (*fn)(void *ctx, FILE *f),
		   void *ctx);

/* A file whose name we made ourselves (the agent's): only ever a regular
 * file, replaced whole; anything else at path is -EEXIST. */
int writer__write_own_file(const struct writer *w, struct profile *p,
			   const struct write_opts *o, const char *path);

/* p in w's format, in memory: *buf (malloc'd, the caller's to free)
 * and its *len bytes.  0, or -errno with *buf NULL. */
int writer__write_mem(const struct writer *w, struct profile *p,
		      const struct write_opts *o, char **buf, size_t *len);

/* Before any work: 0 when -o path can be written as above, else -errno
 * (-EISDIR, -ENOTSUP, -EACCES ...), for a one-line error at the start. */
int writer__check_path(const char *path);

/* -o's argument, checked by writer__check_path: exits 2 with one line
 * when it cannot be written. */
const char *writer__output_arg(const char *opt, const char *arg);

/* path as a message names it: "stdout" for "-". */
const char *writer__path_name(const char *path);

/* Who files are written for: the user behind sudo (SUDO_UID, as perf
 * does), else the effective uid. */
uid_t writer__owner(void);

#endif /* __PYSIGHT_WRITER_H */
