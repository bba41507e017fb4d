/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* JSON strings of a target's text.  json-c copies a string's bytes as they
 * are, so one that is not UTF-8 (a comm, a path, a cgroup) would make the
 * whole document unreadable to a strict parser: it is fixed first. */
#ifndef __PYSIGHT_JSONTEXT_H
#define __PYSIGHT_JSONTEXT_H

#include <stdlib.h>
#include <json-c/json.h>
#include "utf8.h"

/* A JSON string of s, valid UTF-8 (utf8__fix); NULL on ENOMEM. */
static inline json_object *json_text(const char *s)
{
	json_object *j;
	char *fixed;

	if (utf8__valid(s))
		return json_object_new_string(s);
	fixed = utf8__fixed_dup(s);
	if (!fixed)
		return NULL;
	j = json_object_new_string(fixed);
	free(fixed);
	return j;
}

/* o[key] = v, with key made valid UTF-8 as above. */
static inline void json_text_add(json_object *o, const char *key,
				 json_object *v)
{
	char *fixed;

	if (utf8__valid(key)) {
		json_object_object_add(o, key, v);
		return;
	}
	fixed = utf8__fixed_dup(key);
	if (fixed)
		json_object_object_add(o, fixed, v);
	else
		json_object_put(v);
	free(fixed);
}

#endif /* __PYSIGHT_JSONTEXT_H */
