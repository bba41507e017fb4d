// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Placeholder until the flame graph lands. */
#include <errno.h>
#include "writer.h"

static int write_svg(struct profile *p, const struct write_opts *o, FILE *f)
{
	(void)p, (void)o, (void)f;
	return -ENOTSUP;
}

int svg__write_diff(struct profile *before, struct profile *after,
		    const struct write_opts *o, FILE *f)
{
	(void)before, (void)after, (void)o, (void)f;
	return -ENOTSUP;
}

const struct writer writer_svg = {
	.name = "svg",
	.exts = { "svg" },
	.write = write_svg,
};
