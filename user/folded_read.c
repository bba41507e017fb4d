// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "folded_read.h"

#define MAX_DEPTH 4096

static int parse_count(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || (*end && *end != '\n' && *end != '\r'))
		return -EINVAL;
	return 0;
}

static int parse_line(char *line, char **frames, int *n, uint64_t *count)
{
	char *sp = strrchr(line, ' '), *p, *save = NULL;

	if (!sp || sp == line || parse_count(sp + 1, count))
		return -EINVAL;
	*sp = 0;
	*n = 0;
	for (p = strtok_r(line, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
		if (*n == MAX_DEPTH)
			return -E2BIG;
		frames[(*n)++] = p;
	}
	return *n ? 0 : -EINVAL;
}

int folded__read(FILE *f, folded_cb cb, void *ctx, char *err, size_t errlen)
{
	char **frames = calloc(MAX_DEPTH, sizeof(*frames));
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	ssize_t len;
	int ret = 0;

	if (!frames)
		return -ENOMEM;
	while ((len = getline(&line, &cap, f)) >= 0) {
		uint64_t count;
		int n;

		lineno++;
		if (len == 0 || line[0] == '\n' || line[0] == '#')
			continue;
		if (memchr(line, 0, len)) {
			ret = -EINVAL;
			snprintf(err, errlen, "line %ld: binary data", lineno);
			break;
		}
		ret = parse_line(line, frames, &n, &count);
		if (ret) {
			snprintf(err, errlen, "line %ld: %s", lineno,
				 ret == -E2BIG ? "stack deeper than 4096 frames" :
				 "not 'frame;frame;... COUNT'");
			ret = -EINVAL;
			break;
		}
		ret = cb(frames, n, count, ctx);
		if (ret)
			break;
	}
	free(line);
	free(frames);
	return ret;
}
