// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "cgroup.h"

#define WALK_DEPTH 32

int cgroup__v2_mount(char *buf, size_t len)
{
	char line[4096], mnt[PATH_MAX], fstype[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SRC" */
	while (ret && fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s", fstype) != 1 ||
		    strcmp(fstype, "cgroup2"))
			continue;
		snprintf(buf, len, "%s", mnt);
		ret = 0;
	}
	fclose(f);
	return ret;
}

static unsigned int level_of(const char *rel)
{
	unsigned int n = 0;

	for (; *rel; rel++)
		if (*rel == '/' && rel[1] && rel[1] != '/')
			n++;
	return n;
}

/* rel: "/a/b" for mount/a/b; fill id, level and path from the open dir. */
static int fill(int fd, const char *rel, struct cgroup_ref *out)
{
	struct statfs sfs;
	struct stat st;

	if (fstatfs(fd, &sfs) || fstat(fd, &st))
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	out->id = st.st_ino;
	out->level = level_of(rel);
	snprintf(out->path, sizeof(out->path), "%s", *rel ? rel : "/");
	return 0;
}

int cgroup__resolve(const char *arg, struct cgroup_ref *out, char *err,
		    size_t errlen)
{
	char mnt[PATH_MAX], full[PATH_MAX], real[PATH_MAX];
	const char *rel;
	size_t n;
	int fd, ret;

	if (cgroup__v2_mount(mnt, sizeof(mnt))) {
		snprintf(err, errlen, "--cgroup %s: this host has no cgroup v2 "
			 "hierarchy mounted (the filter needs cgroup v2)", arg);
		return -ENOTSUP;
	}
	n = strlen(mnt);
	if (!strncmp(arg, mnt, n) && (arg[n] == '/' || !arg[n]))
		snprintf(full, sizeof(full), "%s", arg);
	else if (snprintf(full, sizeof(full), "%s/%s", mnt,
			  arg[0] == '/' ? arg + 1 : arg) >= (int)sizeof(full)) {
		snprintf(err, errlen, "--cgroup %s: path too long", arg);
		return -ENAMETOOLONG;
	}
	if (!realpath(full, real)) {
		ret = -errno;
		snprintf(err, errlen, "--cgroup %s: %s (%s)", arg, strerror(-ret),
			 full);
		return ret;
	}
	if (strncmp(real, mnt, n) || (real[n] != '/' && real[n])) {
		snprintf(err, errlen, "--cgroup %s: %s is not under the cgroup v2 "
			 "mount %s", arg, real, mnt);
		return -ENOTDIR;
	}
	fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "--cgroup %s: %s", arg, strerror(-ret));
		return ret;
	}
	rel = real + n;
	ret = fill(fd, rel, out);
	close(fd);
	if (ret)
		snprintf(err, errlen, "--cgroup %s: not a cgroup v2 directory", arg);
	return ret;
}

int cgroup__path_in(FILE *f, char *path, size_t len)
{
	char line[PATH_MAX];

	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(path, len, "%s", line + 3);
		return 0;
	}
	return -ENOENT;
}

int cgroup__path_of_pid(pid_t pid, char *path, size_t len)
{
	char p[64];
	FILE *f;
	int ret;

	snprintf(p, sizeof(p), "/proc/%d/cgroup", pid);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	ret = cgroup__path_in(f, path, len);
	fclose(f);
	return ret;
}

int cgroup__of_pid(pid_t pid, uint64_t id, char *path, size_t len)
{
	char mnt[PATH_MAX], rel[PATH_MAX], full[2 * PATH_MAX];
	struct stat st;

	if (cgroup__v2_mount(mnt, sizeof(mnt)) ||
	    cgroup__path_of_pid(pid, rel, sizeof(rel)))
		return -ENOENT;
	snprintf(full, sizeof(full), "%s%s", mnt, rel);
	if (stat(full, &st) || (uint64_t)st.st_ino != id)
		return -ESTALE;
	snprintf(path, len, "%s", rel);
	return 0;
}

static int walk(int dfd, char *rel, size_t used, size_t cap, int depth,
		int (*fn)(const struct cgroup_ref *, void *), void *ctx)
{
	struct cgroup_ref cg;
	struct dirent *d;
	DIR *dir;
	int ret;

	if (fill(dfd, rel, &cg))
		return 0;
	ret = fn(&cg, ctx);
	if (ret || depth >= WALK_DEPTH)
		return ret;
	dir = fdopendir(dup(dfd));
	if (!dir)
		return 0;
	while (!ret && (d = readdir(dir))) {
		int sub;
		size_t n = strlen(d->d_name);

		if (d->d_type != DT_DIR || d->d_name[0] == '.' ||
		    used + 1 + n + 1 > cap)
			continue;
		sub = openat(dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
			     O_NOFOLLOW);
		if (sub < 0)
			continue;
		rel[used] = '/';
		memcpy(rel + used + 1, d->d_name, n + 1);
		ret = walk(sub, rel, used + 1 + n, cap, depth + 1, fn, ctx);
		rel[used] = 0;
		close(sub);
	}
	closedir(dir);
	return ret;
}

int cgroup__walk(int (*fn)(const struct cgroup_ref *cg, void *ctx), void *ctx)
{
	char mnt[PATH_MAX], rel[PATH_MAX] = "";
	int fd, ret;

	if (cgroup__v2_mount(mnt, sizeof(mnt)))
		return -ENOENT;
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = walk(fd, rel, 0, sizeof(rel), 0, fn, ctx);
	close(fd);
	return ret;
}
