// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The structured readers' toolkit: errors, whole-file reads, stacks. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "read_kit.h"

int read_kit__error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int read_kit__slurp(FILE *f, size_t max, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0, got;
	uint8_t *buf = malloc(cap + 1), *nb;

	if (!buf)
		return -ENOMEM;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n < cap)
			continue;
		if (cap >= max) {
			free(buf);
			return -EFBIG;
		}
		cap = cap * 2 > max ? max : cap * 2;
		nb = realloc(buf, cap + 1);
		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
	}
	if (ferror(f)) {
		free(buf);
		return -EIO;
	}
	buf[n] = 0;	/* text readers may treat it as a string */
	*out = buf;
	*len = n;
	return 0;
}

int stack_build__push(struct profile *p, struct stack_build *b,
		      const char *name, const char *file, int line,
		      int firstline)
{
	int kind = PFRAME_OTHER, cause;

	if (!name)
		name = "";
	if (!file || !*file) {
		cause = profile__kind_of_frame(name);
		if (cause > 0) {
			b->kind = cause;
			return 0;
		}
		file = NULL;
		if (profile__native_name(name))
			kind = PFRAME_NATIVE;
		else if (name[0] == '[' && name[strlen(name) - 1] == ']')
			kind = PFRAME_PSEUDO;
	} else if (!strcmp(file, PFRAME_KERNEL_FILE)) {
		kind = PFRAME_KERNEL;
		file = NULL;
	} else {
		kind = PFRAME_PYTHON;
	}
	if (line < 0 || line >= (1 << 30))
		line = 0;
	if (firstline < 0 || firstline >= (1 << 30))
		firstline = 0;
	if (b->n == READER_MAX_DEPTH)
		return -E2BIG;
	b->frames[b->n] = profile__frame(p, name, file, line, firstline, kind);
	return b->frames[b->n++] ? 0 : -ENOMEM;
}

int stack_build__add(struct profile *p, const struct stack_build *b,
		     const struct parsed_labels *lab, uint64_t count,
		     uint64_t weight)
{
	static const struct parsed_labels none;
	const struct pthread *t = NULL;
	const struct pcgroup *c = NULL;
	const struct pstack *s;
	bool has_thread, has_cgroup;

	if (!lab)
		lab = &none;
	has_thread = lab->pid || lab->tid;
	has_cgroup = lab->cgroup || lab->container;
	if (!b->n && b->kind == KIND_CPU)
		return -EINVAL;
	s = profile__stack(p, b->frames, b->n);
	if (has_thread)
		t = profile__thread(p, lab->pid, lab->ns_pid, lab->tid,
				    lab->process, lab->thread);
	if (has_cgroup)
		c = profile__cgroup(p, 0, lab->cgroup,
				    lab->container && *lab->container ?
					    lab->container : NULL,
				    lab->pod);
	if (!s || (has_thread && !t) || (has_cgroup && !c))
		return -ENOMEM;
	return profile__add(p, s, t, c, b->kind, count, weight);
}
