// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Which reader a file wants, by its first bytes rather than its name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "reader.h"

int reader__load(const char *path, struct profile **out, char *err,
		 size_t errlen)
{
	char why[256] = "";
	struct stat st;
	FILE *f;
	int ret;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	ret = read_folded(f, out, why, sizeof(why));
	fclose(f);
	if (ret)
		snprintf(err, errlen, "%s is not a folded profile: %s", path,
			 why[0] ? why : strerror(-ret));
	return ret;
}
