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
 * "-", /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a
 * descriptor we already hold: that descriptor, else -1.  Opening them by
 * path would fail for a socket, and renaming onto them would replace a
 * link in /dev.
 */
static int own_fd(const char *path)
{
	const char *n = NULL;
	char *end;
	long v;

	if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
		return STDOUT_FILENO;
	if (!strcmp(path, "/dev/stderr"))
		return STDERR_FILENO;
	if (!strncmp(path, "/dev/fd/", 8))
		n = path + 8;
	else if (!strncmp(path, "/proc/self/fd/", 14))
		n = path + 14;
	if (!n || !*n)
		return -1;
	errno = 0;
	v = strtol(n, &end, 10);
	if (*end || errno || v < 0 || v > INT_MAX || fcntl((int)v, F_GETFD) < 0)
		return -1;
	return (int)v;
}

/* The directory path is in, into dir. */
static void dir_of(const char *path, char *dir, size_t len)
{
	char *slash;

	snprintf(dir, len, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(dir, len, ".");
}

/*
 * In a directory others may write to (sticky, like /tmp), what is at path
 * may be someone's plant: use it only when it is ours and no link (a
 * regular file to replace, or a FIFO to write into).  -EPERM otherwise.
 */
static int safe_to_use(const char *path, uid_t uid)
{
	char dir[PATH_MAX];
	struct stat st, ds;

	if (lstat(path, &st))
		return 0;			/* nothing there */
	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &ds) || !(ds.st_mode & S_ISVTX) ||
	    !(ds.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;			/* only we can plant here */
	if (S_ISLNK(st.st_mode) || st.st_uid != uid)
		return -EPERM;
	return 0;
}

/* fn's output into f, then f closed: fn's error, or the stream's. */
static int finish(FILE *f, bool sync, int (*fn)(void *ctx, FILE *f), void *ctx)
{
	int err;

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
	if (sync && fsync(fileno(f)) && !err)
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/*
 * Straight into what is there: a terminal, /dev/null, a FIFO's reader,
 * a descriptor we were given.  There is nothing to rename: a device or a
 * FIFO replaced by a regular file breaks every other user of its name.
 */
static int stream(const char *path, int fd, int (*fn)(void *ctx, FILE *f),
		  void *ctx)
{
	FILE *f;

	fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) :
		       open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	return finish(f, false, fn, ctx);
}

static int atomic(const char *path, int (*fn)(void *ctx, FILE *f), void *ctx,
		  uid_t uid, gid_t gid)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, err;

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
	err = finish(f, true, fn, ctx);
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
static int atomic_blocked(const char *path, int (*fn)(void *ctx, FILE *f),
			  void *ctx, uid_t uid, gid_t gid)
{
	sigset_t stop, old;
	int err;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	err = atomic(path, fn, ctx, uid, gid);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* What is at path, as an output: 0 (nothing, or a regular file: made
 * anew), 1 (a device, FIFO or socket: written into), or -errno. */
static int kind_of(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISBLK(st.st_mode))
		return -ENOTSUP;	/* a disk is never a profile's place */
	return 1;
}

int writer__check_path(const char *path)
{
	int k;

	if (own_fd(path) >= 0)
		return 0;
	k = kind_of(path);
	return k < 0 ? k : 0;
}

const char *writer__output_arg(const char *opt, const char *arg)
{
	int err = writer__check_path(path_arg(opt, arg));

	if (err)
		usage_error("cannot write a profile to %s: %s", arg,
			    strerror(-err));
	return arg;
}

const char *writer__path_name(const char *path)
{
	return strcmp(path, "-") ? path : "stdout";
}

static int output(const char *path, bool files_only,
		  int (*fn)(void *ctx, FILE *f), void *ctx)
{
	uid_t uid;
	gid_t gid;
	int fd, k, err;

	fd = files_only ? -1 : own_fd(path);
	if (fd >= 0)
		return stream(path, fd, fn, ctx);
	owner(&uid, &gid);
	err = safe_to_use(path, uid);
	if (err)
		return err;
	k = kind_of(path);
	if (k < 0)
		return k;
	if (k == 1)
		return files_only ? -EEXIST : stream(path, -1, fn, ctx);
	return atomic_blocked(path, fn, ctx, uid, gid);
}

int writer__atomic(const char *path, int (*fn)(void *ctx, FILE *f),
		   void *ctx)
{
	return output(path, false, fn, ctx);
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

	return output(path, false, write_one, &op);
}

int writer__write_own_file(const struct writer *w, struct profile *p,
			   const struct write_opts *o, const char *path)
{
	struct one_profile op = { w, p, o };

	return output(path, true, write_one, &op);
}

int writer__write_mem(const struct writer *w, struct profile *p,
		      const struct write_opts *o, char **buf, size_t *len)
{
	FILE *mem = open_memstream(buf, len);
	int err;

	if (!mem)
		return -errno;
	err = w->write(p, o, mem);
	if (fclose(mem) && !err)
		err = -EIO;
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}
