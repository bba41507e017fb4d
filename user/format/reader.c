// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Which reader a file wants, by its first bytes rather than its name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "labels.h"
#include "reader.h"

/* Files larger than this are refused rather than read into memory. */
#define MAX_FILE	(1ULL << 30)

/* The mode a profile without one is in: time with on-CPU weight is wall. */
static void infer_mode(struct profile *p)
{
	struct profile_meta *m = profile__meta(p);

	if (m->mode != MODE_CPU || profile__unit(p) == UNIT_SAMPLES)
		return;
	m->mode = profile__total_kind(p, KIND_CPU) ? MODE_WALL : MODE_OFF;
}

enum format { FMT_FOLDED, FMT_PPROF, FMT_SPEEDSCOPE };

static const char *const format_names[] = {
	[FMT_FOLDED] = "folded",
	[FMT_PPROF] = "pprof",
	[FMT_SPEEDSCOPE] = "speedscope",
};

static enum format sniff(FILE *f)
{
	unsigned char head[2] = {};
	int c;

	if (fread(head, 1, 2, f) == 2 &&
	    ((head[0] == 0x1f && head[1] == 0x8b) ||
	     /* field 1 of a Profile, length-delimited, short: an
	      * uncompressed pprof, not a text line */
	     (head[0] == 0x0a && head[1] < 0x20 && !strchr("\t\n\r", head[1])))) {
		rewind(f);
		return FMT_PPROF;
	}
	rewind(f);
	while ((c = fgetc(f)) == ' ' || c == '\n' || c == '\t' || c == '\r')
		;
	rewind(f);
	return c == '{' ? FMT_SPEEDSCOPE : FMT_FOLDED;
}

int reader__read(FILE *f, size_t max, struct profile **out,
		 const char **format, char *err, size_t errlen)
{
	enum format fmt = sniff(f);
	int ret;

	*format = format_names[fmt];
	switch (fmt) {
	case FMT_PPROF:
		ret = read_pprof(f, max, out, err, errlen);
		break;
	case FMT_SPEEDSCOPE:
		ret = read_speedscope(f, max, out, err, errlen);
		break;
	default:
		ret = read_folded(f, out, err, errlen);
		break;
	}
	if (ret)
		return ret;
	profile__meta(*out)->format = *format;
	infer_mode(*out);
	return 0;
}

int reader__load(const char *path, struct profile **out, char *err,
		 size_t errlen)
{
	char why[256] = "";
	const char *name;
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
	if ((unsigned long long)st.st_size > MAX_FILE) {
		fclose(f);
		snprintf(err, errlen, "%s: larger than 1 GiB", path);
		return -EFBIG;
	}
	if (!st.st_size) {
		fclose(f);
		snprintf(err, errlen, "%s: empty file", path);
		return -EINVAL;
	}
	ret = reader__read(f, MAX_FILE, out, &name, why, sizeof(why));
	fclose(f);
	if (ret) {
		snprintf(err, errlen, "%s is not a %s profile: %s", path, name,
			 why[0] ? why : strerror(-ret));
		return ret;
	}
	return 0;
}
