// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks back into the model.  The root labels (thread, process,
 * cgroup) become fields, the off-CPU pseudo-frames the kind, and the
 * rest frames.  Files given to report and diff may be anything, so the
 * depth and the length of a line are bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "reader.h"

#define MAX_DEPTH	4096
#define MAX_LINE	(16 << 20)

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

struct folded_line {
	const struct pframe **frames;
	int n, kind;
	struct parsed_labels lab;
	uint64_t count;
};

static int parse_line(struct profile *p, char *line, struct folded_line *l)
{
	char *sp = strrchr(line, ' '), *tok, *save = NULL;
	struct parsed_frame f;
	bool root = true;

	if (!sp || sp == line || parse_count(sp + 1, &l->count))
		return -EINVAL;
	*sp = 0;
	l->n = 0;
	l->kind = KIND_CPU;
	memset(&l->lab, 0, sizeof(l->lab));
	for (tok = strtok_r(line, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save)) {
		switch (labels__parse(tok, root, &f, &l->lab, &l->kind)) {
		case LABEL_ROOT:
			continue;
		case LABEL_KIND:
			root = false;
			continue;
		}
		root = false;
		if (l->n == MAX_DEPTH)
			return -E2BIG;
		l->frames[l->n] = profile__frame(p, f.name, f.file, f.line, 0,
						 f.kind);
		if (!l->frames[l->n++])
			return -ENOMEM;
	}
	return l->n || l->kind != KIND_CPU ? 0 : -EINVAL;
}

static int add_line(struct profile *p, struct folded_line *l)
{
	const struct pthread *t = NULL;
	const struct pcgroup *c = NULL;
	const struct pstack *s;
	bool time = profile__unit(p) == UNIT_NANOSECONDS;

	s = profile__stack(p, l->frames, l->n);
	if (l->lab.pid || l->lab.tid)
		t = profile__thread(p, l->lab.pid, l->lab.ns_pid, l->lab.tid,
				    l->lab.process, l->lab.thread);
	if (l->lab.cgroup || l->lab.container)
		c = profile__cgroup(p, 0, l->lab.cgroup,
				    l->lab.container && *l->lab.container ?
					    l->lab.container : NULL,
				    l->lab.pod);
	if (!s || ((l->lab.pid || l->lab.tid) && !t) ||
	    ((l->lab.cgroup || l->lab.container) && !c))
		return -ENOMEM;
	if (time && l->count > UINT64_MAX / 1000)
		return -ERANGE;
	return profile__add(p, s, t, c, l->kind, time ? 1 : l->count,
			    time ? l->count * 1000 : l->count);
}

/* Do the stacks name off-CPU causes?  Then the counts are microseconds. */
static bool names_causes(FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	int k;

	while (!found && getline(&line, &cap, f) >= 0)
		for (k = KIND_CPU + 1; k < KIND__MAX && !found; k++)
			found = strstr(line, profile__kind_frame(k)) != NULL;
	free(line);
	rewind(f);
	return found;
}

static const char *why(int ret)
{
	switch (ret) {
	case -E2BIG:
		return "stack deeper than 4096 frames";
	case -EFBIG:
		return "line longer than 16 MiB";
	case -ERANGE:
		return "count too large";
	case -ENOMEM:
		return "out of memory";
	default:
		return "not 'frame;frame;... COUNT'";
	}
}

int read_folded(FILE *f, struct profile **out, char *err, size_t errlen)
{
	struct folded_line l = {};
	struct profile *p;
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	ssize_t len;
	int ret = 0;

	p = profile__new(names_causes(f) ? UNIT_NANOSECONDS : UNIT_SAMPLES);
	l.frames = calloc(MAX_DEPTH, sizeof(*l.frames));
	if (!p || !l.frames) {
		ret = -ENOMEM;
		goto out;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		bool binary = memchr(line, 0, len) != NULL;

		lineno++;
		if (len == 0 || line[0] == '\n' || line[0] == '#')
			continue;
		if (len > MAX_LINE)
			ret = -EFBIG;
		else if (binary)
			ret = -EINVAL;
		else
			ret = parse_line(p, line, &l);
		if (!ret)
			ret = add_line(p, &l);
		if (ret) {
			snprintf(err, errlen, "line %ld: %s", lineno,
				 binary ? "binary data" : why(ret));
			break;
		}
	}
out:
	free(line);
	free(l.frames);
	if (ret) {
		profile__free(p);
		return ret == -ENOMEM ? ret : -EINVAL;
	}
	*out = p;
	return 0;
}
