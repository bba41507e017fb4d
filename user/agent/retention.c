// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "retention.h"

#define NS	1000000000ULL

static void stamp(uint64_t t_ns, const char *fmt, char *buf, size_t len)
{
	time_t t = (time_t)(t_ns / NS);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, fmt, &tm);
}

void retention__name(const struct retention *r, uint64_t t_ns,
		     const char *ext, char *buf, size_t len)
{
	char when[32];

	stamp(t_ns, "%Y%m%dT%H%M%SZ", when, sizeof(when));
	snprintf(buf, len, "%s/%s-%s.%s", r->dir, r->prefix, when, ext);
}

void retention__unique_name(const struct retention *r, uint64_t t_ns,
			    const char *ext, char *buf, size_t len)
{
	unsigned int ms = (unsigned int)(t_ns % NS / 1000000);
	struct stat st;
	char when[32];
	int n;

	stamp(t_ns, "%Y%m%dT%H%M%S", when, sizeof(when));
	snprintf(buf, len, "%s/%s-%s.%03uZ.%s", r->dir, r->prefix, when, ms, ext);
	for (n = 2; !lstat(buf, &st) && n < 1000; n++)
		snprintf(buf, len, "%s/%s-%s.%03uZ-%d.%s", r->dir, r->prefix,
			 when, ms, n, ext);
}

/* A regular file named PREFIX-..., of ours or of whom we write for, and
 * its *st.  The name first: a crowded directory's other files cost no
 * stat. */
static bool ours(const struct retention *r, int dfd, const char *name,
		 struct stat *st)
{
	size_t plen = strlen(r->prefix);

	if (strncmp(name, r->prefix, plen) || name[plen] != '-')
		return false;
	return !fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st->st_mode) &&
	       (st->st_uid == geteuid() || st->st_uid == r->owner);
}

void retention__prune(struct retention *r, const char *kept)
{
	const char *kname = kept ? strrchr(kept, '/') : NULL;
	time_t now = time(NULL);
	struct dirent **names;
	uint64_t total = 0;
	struct stat st;
	int dfd, n, i;

	kname = kname ? kname + 1 : kept ? kept : "";
	if (kept && !lstat(kept, &st))
		total = (uint64_t)st.st_size;
	/* one directory, held, for the listing, the stats and the unlinks */
	dfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	n = scandirat(dfd, ".", &names, NULL, alphasort);
	/* newest first, so the total counts what is kept */
	for (i = n; i-- > 0;) {
		const char *nm = names[i]->d_name;

		if (strcmp(nm, kname) && ours(r, dfd, nm, &st)) {
			total += (uint64_t)st.st_size;
			if ((now - st.st_mtime > r->max_age_s ||
			     (r->max_bytes && total > r->max_bytes)) &&
			    !unlinkat(dfd, nm, 0))
				r->pruned++;
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	close(dfd);
}
