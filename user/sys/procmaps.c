// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The files a process maps, from /proc/PID/maps, and opening exactly the
 * file a mapping names.
 *
 * The process may be hostile, and we are root.  So a file is opened
 * once, as exactly the inode it maps (/proc/PID/map_files, which also
 * reaches a deleted file), or else resolved inside the process's own
 * root (openat2 RESOLVE_IN_ROOT), never against ours; it must then be
 * the inode /proc/PID/maps names.  Everything after that goes through
 * the open descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procmaps.h"

#define DELETED		" (deleted)"

/* A replaced file reads "path (deleted)" in /proc: cut the mark. */
void procmaps__cut_deleted(char *path)
{
	size_t n = strlen(path), d = strlen(DELETED);

	if (n > d && !strcmp(path + n - d, DELETED))
		path[n - d] = 0;
}

int procmaps__parse(char *line, struct mapping *m)
{
	char *file, perms[5] = "";
	int n = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64
		   " %n", &m->start, &m->end, perms, &m->offset, &m->dev_major,
		   &m->dev_minor, &m->ino, &n) < 7 || !n)
		return -EINVAL;
	m->exec = perms[2] == 'x';
	file = line + n;
	file[strcspn(file, "\n")] = 0;
	if (file[0] != '/')
		return -EINVAL;
	snprintf(m->path, sizeof(m->path), "%s", file);
	procmaps__cut_deleted(m->path);
	return 0;
}

int procmaps__each(pid_t pid, int (*fn)(void *ctx, const struct mapping *m),
			  void *ctx)
{
	char path[64], line[PATH_MAX + 128];
	struct mapping m;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') && !feof(f)) {
			/* a path longer than the line: the rest is the
			 * process's own text, never a line of its own */
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (!procmaps__parse(line, &m))
			ret = fn(ctx, &m);
	}
	fclose(f);
	return ret;
}

/* openat2 with these flags and resolve flags: the fd, or -errno. */
static int open_how_at(int dirfd, const char *path, __u64 flags,
		       __u64 resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* Read-only; O_NONBLOCK: a FIFO planted at the path must not hang us. */
static int open_resolved(int dirfd, const char *path, __u64 resolve)
{
	return open_how_at(dirfd, path,
			   O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
			   resolve);
}

int procmaps__regular_in_root(int rootfd, const char *path, uint64_t max,
			      struct stat *st)
{
	int pfd = open_how_at(rootfd, path, O_PATH | O_CLOEXEC,
			      RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	char self[64];
	int fd;

	if (pfd < 0)
		return pfd;
	/* an O_PATH descriptor opens nothing: a device or a FIFO is
	 * never opened, and the reopen below is of this very inode */
	if (fstat(pfd, st) || !S_ISREG(st->st_mode) || !st->st_size ||
	    (uint64_t)st->st_size > max) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	close(pfd);
	return fd < 0 ? -errno : fd;
}

int procmaps__open_in_root(int rootfd, const char *path)
{
	return open_resolved(rootfd, path,
			     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

/*
 * The path /proc/PID/maps gives is the mapped dentry's own path, with
 * no symlink in it: one met now was planted since, so none is followed.
 * It reads from our root when the file is reachable from it (a chroot),
 * else from the process's root (another mount namespace): both are
 * tried, inside their root, and procmaps__open() checks the inode.
 */
static int open_by_path(pid_t pid, const char *path, int attempt)
{
	const __u64 strict = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	char root[64];
	int rfd, fd;

	if (attempt == 0)
		return open_resolved(AT_FDCWD, path, strict);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = open_resolved(rfd, path, strict | RESOLVE_IN_ROOT);
	close(rfd);
	return fd;
}

static bool is_mapped_file(int fd, const struct mapping *m, bool exact,
			   struct stat *st)
{
	return !fstat(fd, st) && S_ISREG(st->st_mode) && st->st_ino == m->ino &&
	       (!exact || (major(st->st_dev) == m->dev_major &&
			   minor(st->st_dev) == m->dev_minor));
}

/*
 * A descriptor on exactly the file mapped at m, and its identity; -errno.
 * First /proc/PID/map_files (the mapped file itself, deleted or not;
 * needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), then /proc/PID/exe for
 * the executable (the same, for the program file), then by path.  Each
 * must be the inode the mapping names; through overlayfs a path gives
 * another device, so there only the inode number is compared.
 */
int procmaps__open(pid_t pid, const struct mapping *m, bool is_exe,
		   struct stat *st)
{
	char path[96];
	int fd, i, err = -ENOENT;

	for (i = 0; i < 4; i++) {
		bool exact = i < 2;

		if (i == 0)
			snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64
				 "-%" PRIx64, pid, m->start, m->end);
		if (i == 1 && !is_exe)
			continue;
		if (i == 1)
			snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		fd = i < 2 ? open(path, O_RDONLY | O_CLOEXEC) :
			     open_by_path(pid, m->path, i - 2);
		if (fd < 0)
			continue;
		if (is_mapped_file(fd, m, exact, st))
			return fd;
		close(fd);
		err = -ESTALE;
	}
	return err;
}

__u64 procmaps__kernel_dev(dev_t dev)
{
	return ((__u64)major(dev) << 20) | minor(dev);
}

void procmaps__file_key(const struct stat *st, struct py_binary_key *key)
{
	memset(key, 0, sizeof(*key));
	key->dev = procmaps__kernel_dev(st->st_dev);
	key->ino = st->st_ino;
	key->size = st->st_size;
	key->mtime_sec = st->st_mtim.tv_sec;
	key->mtime_nsec = st->st_mtim.tv_nsec;
}
