// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Each export is a file "SEQ.otlp" (SEQ: 20 decimal digits, so names sort
 * as numbers do), written under a temporary name and renamed, so a crash
 * leaves whole exports only.  The index of what is queued is kept in
 * memory; the files are read back only to be sent.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "spool.h"

#define SEQ_DIGITS	20
#define SUFFIX		".otlp"
#define TMP_PREFIX	".tmp-"
/* one export is a few hundred KiB at most; a file past this is not ours */
#define MAX_FILE	(256u << 20)

struct item {
	uint64_t seq;
	uint64_t size;
};

struct spool {
	int dirfd;
	uint64_t max_bytes;
	pthread_mutex_t lock;
	struct item *items;	/* a ring, oldest at head */
	size_t head, n, cap;
	uint64_t next_seq;
	struct spool_stats st;
	/* the export the sender has out, and whether a push dropped it for
	 * room meanwhile: lost only if its send then fails */
	uint64_t flying;
	bool flying_set, flying_gone;
};

static void name_of(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%0*" PRIu64 SUFFIX, SEQ_DIGITS, seq);
}

/* SEQ of a queued export's name, or false for any other name. */
static bool parse_name(const char *name, uint64_t *seq)
{
	uint64_t v = 0;
	int i;

	if (strlen(name) != SEQ_DIGITS + strlen(SUFFIX) ||
	    strcmp(name + SEQ_DIGITS, SUFFIX))
		return false;
	for (i = 0; i < SEQ_DIGITS; i++) {
		if (name[i] < '0' || name[i] > '9' ||
		    v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	*seq = v;
	return true;
}

static struct item *at(struct spool *s, size_t i)
{
	return &s->items[(s->head + i) % s->cap];
}

static int grow(struct spool *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64, i;
	struct item *items;

	if (s->n < s->cap)
		return 0;
	items = calloc(cap, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (i = 0; i < s->n; i++)
		items[i] = *at(s, i);
	free(s->items);
	s->items = items;
	s->head = 0;
	s->cap = cap;
	return 0;
}

/* Forget the oldest, and its file. */
static void drop_oldest(struct spool *s)
{
	char name[64];
	struct item *it = at(s, 0);

	name_of(it->seq, name, sizeof(name));
	unlinkat(s->dirfd, name, 0);
	s->st.bytes -= it->size;
	s->head = (s->head + 1) % s->cap;
	s->n--;
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* What a previous run left: queued exports, in order; its temporary files
 * were never whole, and go. */
static int take_up(struct spool *s)
{
	struct dirent *de;
	struct stat st;
	uint64_t seq;
	DIR *d;
	int fd, err = 0;

	fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			unlinkat(s->dirfd, de->d_name, 0);
			continue;
		}
		if (!parse_name(de->d_name, &seq) ||
		    fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE)
			continue;
		err = grow(s);
		if (err)
			break;
		s->items[s->n++] = (struct item){ seq, (uint64_t)st.st_size };
		s->st.bytes += (uint64_t)st.st_size;
		if (seq >= s->next_seq)
			s->next_seq = seq + 1;
	}
	closedir(d);
	if (s->n)
		qsort(s->items, s->n, sizeof(*s->items), cmp_item);
	while (s->n && s->st.bytes > s->max_bytes) {
		drop_oldest(s);
		s->st.dropped++;
	}
	return err;
}

/* dir is ours alone: created 0700, or already a directory of our user
 * that nobody else may write to, since we read back what it holds. */
static int open_dir(const char *dir, char *err, size_t errlen)
{
	int ret = fdio__mkdirs(dir, 0700);
	struct stat st;
	int fd;

	if (ret) {
		snprintf(err, errlen, "cannot create spool directory %s: %s",
			 dir, strerror(-ret));
		return ret;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open spool directory %s: %s",
			 dir, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen, "spool directory %s must belong to uid %u "
			 "and be writable by it alone", dir, (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

int spool__open(const char *dir, uint64_t max_bytes, struct spool **out,
		char *err, size_t errlen)
{
	struct spool *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->dirfd = open_dir(dir, err, errlen);
	if (s->dirfd < 0) {
		ret = s->dirfd;
		free(s);
		return ret;
	}
	s->max_bytes = max_bytes;
	s->next_seq = 1;
	pthread_mutex_init(&s->lock, NULL);
	ret = take_up(s);
	if (ret) {
		snprintf(err, errlen, "cannot read spool directory %s: %s",
			 dir, strerror(-ret));
		spool__free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void spool__free(struct spool *s)
{
	if (!s)
		return;
	close(s->dirfd);
	pthread_mutex_destroy(&s->lock);
	free(s->items);
	free(s);
}

/* The file of seq, whole or not at all. */
static int write_file(struct spool *s, uint64_t seq, const void *data,
		      size_t len)
{
	char tmp[80], name[64];
	int fd, err;

	name_of(seq, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name);
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = fdio__write(fd, data, len);
	if (!err && fdatasync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(s->dirfd, tmp, s->dirfd, name))
		err = -errno;
	if (err)
		unlinkat(s->dirfd, tmp, 0);
	return err;
}

int spool__push(struct spool *s, const void *data, size_t len)
{
	uint64_t seq;
	int err;

	if (len > s->max_bytes || len > MAX_FILE) {
		pthread_mutex_lock(&s->lock);
		s->st.dropped++;
		pthread_mutex_unlock(&s->lock);
		return -E2BIG;
	}
	pthread_mutex_lock(&s->lock);
	while (s->n && s->st.bytes + len > s->max_bytes) {
		if (s->flying_set && at(s, 0)->seq == s->flying)
			s->flying_gone = true;	/* counted if its send fails */
		else
			s->st.dropped++;
		drop_oldest(s);
	}
	seq = s->next_seq++;
	err = grow(s);
	pthread_mutex_unlock(&s->lock);
	/* the file is written outside the lock: the sender goes on */
	if (!err)
		err = write_file(s, seq, data, len);
	pthread_mutex_lock(&s->lock);
	/* the room grow() made is still there: the sender only pops */
	if (err) {
		s->st.dropped++;
	} else {
		/* seq is the newest: pushes come from one thread */
		*at(s, s->n) = (struct item){ seq, len };
		s->n++;
		s->st.bytes += len;
		s->st.pushed++;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static int read_file(int dirfd, uint64_t seq, uint64_t size, void **data,
		     size_t *len)
{
	char name[64];
	struct stat st;
	char *buf;
	ssize_t r;
	size_t got = 0;
	int fd;

	name_of(seq, name, sizeof(name));
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size) {
		close(fd);
		return -EIO;
	}
	buf = malloc(size ? size : 1);
	r = buf ? fdio__read(fd, buf, size) : -ENOMEM;
	got = r > 0 ? (size_t)r : 0;
	close(fd);
	if (!buf || got != size) {
		free(buf);
		return buf ? -EIO : -ENOMEM;
	}
	*data = buf;
	*len = size;
	return 0;
}

int spool__peek(struct spool *s, void **data, size_t *len, uint64_t *seq)
{
	struct item it;
	int err;

	for (;;) {
		pthread_mutex_lock(&s->lock);
		if (!s->n) {
			pthread_mutex_unlock(&s->lock);
			return -ENOENT;
		}
		it = *at(s, 0);
		pthread_mutex_unlock(&s->lock);
		err = read_file(s->dirfd, it.seq, it.size, data, len);
		if (err != -ENOENT && err != -EIO)
			break;
		/* gone or changed under us: not ours to send */
		spool__pop(s, it.seq);
	}
	if (!err) {
		*seq = it.seq;
		pthread_mutex_lock(&s->lock);
		s->flying = it.seq;
		s->flying_set = true;
		s->flying_gone = false;
		pthread_mutex_unlock(&s->lock);
	}
	return err;
}

/* The export out is back, sent or not: a push may drop it now. */
static void land(struct spool *s, uint64_t seq)
{
	if (s->flying_set && s->flying == seq)
		s->flying_set = s->flying_gone = false;
}

void spool__pop(struct spool *s, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	/* the oldest may have been dropped for room while it was sent */
	if (s->n && at(s, 0)->seq == seq)
		drop_oldest(s);
	land(s, seq);
	pthread_mutex_unlock(&s->lock);
}

void spool__sent(struct spool *s, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	/* else dropped for room while it was out: sent, so not lost */
	if (s->n && at(s, 0)->seq == seq)
		drop_oldest(s);
	land(s, seq);
	pthread_mutex_unlock(&s->lock);
}

void spool__failed(struct spool *s, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	if (s->flying_set && s->flying == seq && s->flying_gone)
		s->st.dropped++;	/* dropped for room, and not sent */
	land(s, seq);
	pthread_mutex_unlock(&s->lock);
}

void spool__stats(struct spool *s, struct spool_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->depth = s->n;
	pthread_mutex_unlock(&s->lock);
}
