// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "usage.h"
#include "writer.h"

static const struct writer *const writers[] = {
	&writer_folded,
	&writer_speedscope,
	&writer_pprof,
	&writer_svg,
};

#define NWRITERS (sizeof(writers) / sizeof(writers[0]))

const struct writer *writer__find(const char *name)
{
	size_t i;

	for (i = 0; i < NWRITERS; i++)
		if (!strcmp(writers[i]->name, name))
			return writers[i];
	return NULL;
}

/* Does path end in "." ext? */
static bool has_ext(const char *path, const char *ext)
{
	size_t lp = strlen(path), le = strlen(ext);

	return lp > le + 1 && path[lp - le - 1] == '.' &&
	       !strcasecmp(path + lp - le, ext);
}

const struct writer *writer__for_path(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t i, e;

	/* a name without an extension is plain text: folded */
	if (!strchr(base ? base + 1 : path, '.'))
		return &writer_folded;
	for (i = 0; i < NWRITERS; i++)
		for (e = 0; e < WRITER_EXTS && writers[i]->exts[e]; e++)
			if (has_ext(path, writers[i]->exts[e]))
				return writers[i];
	return NULL;
}

const char *writer__names(char *buf, size_t len)
{
	size_t i, o = 0;

	buf[0] = 0;
	for (i = 0; i < NWRITERS && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%s", i ? ", " : "",
			      writers[i]->name);
	return buf;
}

const char *writer__check_format(const char *name)
{
	char names[128], want[160];

	if (!writer__find(name)) {
		snprintf(want, sizeof(want), "expected one of %s",
			 writer__names(names, sizeof(names)));
		bad_value("--format", name, want);
	}
	return name;
}

const struct writer *writer__choose(const char *format, const char *path)
{
	const struct writer *w;
	char names[128], exts[128];
	size_t i, e, o = 0;

	if (format)
		return writer__find(writer__check_format(format));
	w = writer__for_path(path);
	if (w)
		return w;
	exts[0] = 0;
	for (i = 0; i < NWRITERS; i++)
		for (e = 0; e < WRITER_EXTS && writers[i]->exts[e]; e++)
			if (o < sizeof(exts))
				o += snprintf(exts + o, sizeof(exts) - o, "%s.%s",
					      o ? ", " : "", writers[i]->exts[e]);
	usage_error("cannot tell the format of %s from its extension; give -f (%s) or name it %s",
		    path, writer__names(names, sizeof(names)), exts);
	return NULL;
}

/* Who the file is for: the user behind sudo, as perf does, else us. */
static void owner(uid_t *uid, gid_t *gid)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	char *end;
	long v;

	*uid = geteuid();
	*gid = getegid();
	if (*uid || !su || !sg)
		return;
	v = strtol(su, &end, 10);
	if (*end || v <= 0 || v >= (1L << 31))
		return;
	*uid = (uid_t)v;
	v = strtol(sg, &end, 10);
	*gid = !*end && v >= 0 && v < (1L << 31) ? (gid_t)v : *gid;
}

uid_t writer__owner(void)
{
	uid_t uid;
	gid_t gid;

	owner(&uid, &gid);
	return uid;
}

/*
 * In a directory others may write to (sticky, like /tmp), what is at path
 * may be someone's plant: replace it only when it is a regular file of
 * ours.  -EPERM otherwise.
 */
static int safe_to_replace(const char *path, uid_t uid)
{
	char dir[PATH_MAX], *slash;
	struct stat st, ds;

	if (lstat(path, &st))
		return 0;			/* nothing there */
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	if (stat(dir, &ds) || !(ds.st_mode & S_ISVTX) ||
	    !(ds.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;			/* only we can plant here */
	if (!S_ISREG(st.st_mode) || st.st_uid != uid)
		return -EPERM;
	return 0;
}

static int atomic(const char *path, int (*fn)(void *ctx, FILE *f), void *ctx)
{
	char tmp[PATH_MAX];
	uid_t uid;
	gid_t gid;
	FILE *f;
	int fd, err;

	owner(&uid, &gid);
	err = safe_to_replace(path, uid);
	if (err)
		return err;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/* O_EXCL: never a file or link someone made first */
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f || fchmod(fd, 0644) ||
	    (uid != geteuid() && fchown(fd, uid, gid))) {
		err = -errno;
		if (f)
			fclose(f);
		else
			close(fd);
		unlink(tmp);
		return err;
	}
	errno = 0;
	err = fn(ctx, f);
	/*
	 * A writer knows only that a stdio call failed (-EIO).  When it failed
	 * in the middle, on a full buffer's write(2), errno still says why: a
	 * full disk or a quota, which is what the user must read.
	 */
	if (err == -EIO && ferror(f) && errno)
		err = -errno;
	if (fflush(f) && !err)
		err = -errno;
	if (fsync(fileno(f)) && !err)
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/*
 * The signals that stop a command wait while a file is made: it is then
 * renamed whole, or removed, and the signal acts after.  A command that
 * has no handler of its own (convert, diff, snapshot) would otherwise die
 * with the temporary file left beside the one asked for.
 */
int writer__atomic(const char *path, int (*fn)(void *ctx, FILE *f),
		   void *ctx)
{
	sigset_t stop, old;
	int err;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	err = atomic(path, fn, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

struct one_profile {
	const struct writer *w;
	struct profile *p;
	const struct write_opts *o;
};

static int write_one(void *ctx, FILE *f)
{
	struct one_profile *op = ctx;

	return op->w->write(op->p, op->o, f);
}

int writer__write_file(const struct writer *w, struct profile *p,
		       const struct write_opts *o, const char *path)
{
	struct one_profile op = { w, p, o };

	return writer__atomic(path, write_one, &op);
}
