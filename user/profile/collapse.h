/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --collapse REGEX: hide frames, such as a web framework's floor or
 * asyncio's event loop, and attach their children to the nearest kept
 * ancestor.  A regex (POSIX extended) is matched against the frame as the
 * folded output spells it: "name (file:line)".
 */
#ifndef __PYSIGHT_COLLAPSE_H
#define __PYSIGHT_COLLAPSE_H

#include <argp.h>
#include <regex.h>
#include "profile.h"

#define COLLAPSE_MAX 32

struct collapse {
	regex_t re[COLLAPSE_MAX];
	int n;
};

/* Add a regex; -EINVAL with why in err when it does not compile, -E2BIG
 * past COLLAPSE_MAX. */
int collapse__add(struct collapse *c, const char *regex, char *err,
		  size_t errlen);
/* --collapse-asyncio: the event loop, its handles, tasks and selector. */
int collapse__add_asyncio(struct collapse *c);
void collapse__free(struct collapse *c);

/* A copy of p without the matching frames; p itself when there are no
 * regexes (check out != p before freeing).  -ENOMEM. */
int collapse__apply(const struct collapse *c, struct profile *p,
		    struct profile **out);

/* --collapse and --collapse-asyncio, for a command's argp as a child
 * whose input (state->child_inputs[i]) is a struct collapse. */
extern const struct argp collapse__argp;

#endif /* __PYSIGHT_COLLAPSE_H */
