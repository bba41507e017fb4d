// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer.h"

static const struct writer *const writers[] = {
	&writer_folded,
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

const struct writer *writer__for_path(const char *path)
{
	const char *dot = strrchr(path, '.');
	size_t i, e;

	for (i = 0; dot && i < NWRITERS; i++)
		for (e = 0; e < WRITER_EXTS && writers[i]->exts[e]; e++)
			if (!strcmp(writers[i]->exts[e], dot + 1))
				return writers[i];
	return &writer_folded;
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

int writer__write_file(const struct writer *w, struct profile *p,
		       const struct write_opts *o, const char *path)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f || fchmod(fd, 0644)) {
		err = -errno;
		if (f)
			fclose(f);
		else
			close(fd);
		unlink(tmp);
		return err;
	}
	err = w->write(p, o, f);
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
