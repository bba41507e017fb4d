// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "filename.h"
#include "profile.h"

static const char *after_last(const char *path, const char *needle)
{
	const char *p = path, *hit = NULL;

	while ((p = strstr(p, needle))) {
		hit = p + strlen(needle);
		p++;
	}
	return hit;
}

/* ".../lib/python3.11/x/y.py" -> "x/y.py" */
static const char *after_stdlib(const char *path)
{
	const char *p = after_last(path, "/python3.");
	const char *slash;

	if (!p || p - path < 12 || strncmp(p - 12, "lib", 3) ||
	    !(p[0] >= '0' && p[0] <= '9'))
		return NULL;
	slash = strchr(p, '/');
	return slash && slash[1] ? slash + 1 : NULL;
}

const char *filename__shorten(const char *path, const char *cwd)
{
	const char *p;
	size_t n;

	p = after_last(path, "/site-packages/");
	if (!p)
		p = after_last(path, "/dist-packages/");
	if (p && *p)
		return p;
	p = after_stdlib(path);
	if (p)
		return p;
	if (cwd && cwd[0] == '/' && cwd[1]) {
		n = strlen(cwd);
		if (!strncmp(path, cwd, n) && path[n] == '/' && path[n + 1])
			return path + n + 1;
	}
	return path;
}

int filename__origin(const char *path)
{
	if (strstr(path, "/site-packages/") || strstr(path, "/dist-packages/"))
		return ORIGIN_SITE;
	/* a frozen module is the stdlib's, compiled in: "<frozen os>" */
	if (after_stdlib(path) || !strncmp(path, "<frozen ", 8))
		return ORIGIN_STDLIB;
	return ORIGIN_OWN;
}
