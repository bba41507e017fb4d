// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"

ssize_t fdio__read(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = read(fd, p + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return got ? (ssize_t)got : -errno;
		if (!r)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

ssize_t fdio__read_path(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = fdio__read(fd, buf, len);
	close(fd);
	return r;
}

int fdio__write(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	struct stat st;
	bool sock = !fstat(fd, &st) && S_ISSOCK(st.st_mode);
	ssize_t w;

	while (len) {
		w = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int fdio__mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (!path[0])
		return -ENOENT;
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}
