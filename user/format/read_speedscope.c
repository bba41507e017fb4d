// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * speedscope documents back into the model: the "sampled" profiles that
 * pysight and other tools write.  The profile's name gives the thread
 * when it reads like ours ("python3 812 / worker 815").  Every index and
 * weight is checked: the document may come from anywhere.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "labels.h"
#include "read_kit.h"
#include "reader.h"
#include "speedscope.h"

struct ss_in {
	struct profile *p;
	json_object *frames;
	size_t nframes;
	double scale;		/* to nanoseconds, or 1 for samples */
	struct stack_build *b;
	char *err;
	size_t errlen;
};

/* The reason, in err: -EINVAL. */
#define fail(in, ...) read_kit__error((in)->err, (in)->errlen, __VA_ARGS__)

static json_object *member(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* Time units to nanoseconds; "none" and "bytes" count. */
static int unit_scale(const char *unit, double *scale, bool *time)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {
		{ "none", 0 }, { "bytes", 0 }, { "nanoseconds", 1 },
		{ "microseconds", 1e3 }, { "milliseconds", 1e6 },
		{ "seconds", 1e9 },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(unit, units[i].name))
			continue;
		*time = units[i].ns > 0;
		*scale = *time ? units[i].ns : 1;
		return 0;
	}
	return -EINVAL;
}

static int push_frame(struct ss_in *in, int64_t idx, const char *where)
{
	json_object *fr, *name, *file, *line;
	int ret;

	if (idx < 0 || (size_t)idx >= in->nframes)
		return fail(in, "%s: frame %lld out of range (%zu frames)",
			    where, (long long)idx, in->nframes);
	fr = json_object_array_get_idx(in->frames, idx);
	name = member(fr, "name", json_type_string);
	file = member(fr, "file", json_type_string);
	line = member(fr, "line", json_type_int);
	ret = stack_build__push(in->p, in->b, json_object_get_string(name),
			   file ? json_object_get_string(file) : NULL,
			   line ? json_object_get_int(line) : 0, 0);
	if (ret == -E2BIG)
		return fail(in, "%s: stack deeper than %d frames", where,
			    READER_MAX_DEPTH);
	return ret;
}

static int read_sample(struct ss_in *in, json_object *stack, double w,
		       const struct parsed_labels *lab, const char *where)
{
	size_t i, n;
	uint64_t weight;
	int ret;

	if (!json_object_is_type(stack, json_type_array))
		return fail(in, "%s: not an array of frame indexes", where);
	if (!isfinite(w) || w < 0 || w * in->scale > 1e18)
		return fail(in, "%s: weight out of range", where);
	in->b->n = 0;
	in->b->kind = KIND_CPU;
	n = json_object_array_length(stack);
	for (i = 0; i < n; i++) {
		json_object *idx = json_object_array_get_idx(stack, i);

		if (!json_object_is_type(idx, json_type_int))
			return fail(in, "%s: frame index is not an integer",
				    where);
		ret = push_frame(in, json_object_get_int64(idx), where);
		if (ret)
			return ret;
	}
	weight = (uint64_t)llround(w * in->scale);
	if (!weight || (!in->b->n && in->b->kind == KIND_CPU))
		return 0;	/* nothing to add */
	return stack_build__add(in->p, in->b, lab,
			   profile__unit(in->p) == UNIT_NANOSECONDS ? 1 : weight,
			   weight);
}

static int read_profile(struct ss_in *in, json_object *prof, size_t pi)
{
	json_object *type, *name, *samples, *weights;
	struct parsed_labels lab = {};
	char where[64], title[LABEL_MAX];
	size_t i, n;
	int ret;

	type = member(prof, "type", json_type_string);
	if (!type)
		return fail(in, "profiles[%zu]: no type", pi);
	if (strcmp(json_object_get_string(type), "sampled"))
		return fail(in, "profiles[%zu]: %s profiles are not supported, only sampled ones",
			    pi, json_object_get_string(type));
	samples = member(prof, "samples", json_type_array);
	weights = member(prof, "weights", json_type_array);
	if (!samples || !weights)
		return fail(in, "profiles[%zu]: no samples or weights", pi);
	n = json_object_array_length(samples);
	if (json_object_array_length(weights) != n)
		return fail(in, "profiles[%zu]: %zu samples but %zu weights", pi,
			    n, json_object_array_length(weights));
	name = member(prof, "name", json_type_string);
	if (name) {
		snprintf(title, sizeof(title), "%s", json_object_get_string(name));
		labels__parse_title(title, &lab);
	}
	for (i = 0; i < n; i++) {
		json_object *w = json_object_array_get_idx(weights, i);

		snprintf(where, sizeof(where), "profiles[%zu].samples[%zu]", pi, i);
		if (!json_object_is_type(w, json_type_int) &&
		    !json_object_is_type(w, json_type_double))
			return fail(in, "%s: weight is not a number", where);
		ret = read_sample(in, json_object_array_get_idx(samples, i),
				  json_object_get_double(w), &lab, where);
		if (ret)
			return ret;
	}
	return 0;
}

/* "pysight: TARGET (MODE)" */
static void read_name(struct profile *p, json_object *doc)
{
	json_object *name = member(doc, "name", json_type_string);
	struct profile_meta *m = profile__meta(p);
	const char *s, *open;
	size_t len, plen = strlen(SPEEDSCOPE_NAME);

	if (!name)
		return;
	s = json_object_get_string(name);
	len = strlen(s);
	open = strrchr(s, '(');
	if (strncmp(s, SPEEDSCOPE_NAME, plen) || !open || s[len - 1] != ')')
		return;
	snprintf(m->target, sizeof(m->target), "%.*s",
		 (int)(open - s - plen - (open > s + plen)), s + plen);
	if (!strcmp(m->target, SPEEDSCOPE_ALL))
		m->target[0] = 0;
	if (!strncmp(open, "(wall)", 6))
		m->mode = MODE_WALL;
	else if (!strncmp(open, "(off)", 5))
		m->mode = MODE_OFF;
}

/* The unit of every profile, which must agree. */
static int doc_unit(struct ss_in *in, json_object *profiles, bool *time)
{
	size_t i, n = json_object_array_length(profiles);
	bool t0 = false, t;
	double s0 = 1, s;

	for (i = 0; i < n; i++) {
		json_object *prof = json_object_array_get_idx(profiles, i);
		json_object *unit = member(prof, "unit", json_type_string);

		if (!json_object_is_type(prof, json_type_object))
			return fail(in, "profiles[%zu]: not an object", i);
		if (!unit || unit_scale(json_object_get_string(unit), &s, &t))
			return fail(in, "profiles[%zu]: unknown unit", i);
		if (i && (t != t0 || s != s0))
			return fail(in, "profiles[%zu]: unit differs from profiles[0]'s", i);
		t0 = t;
		s0 = s;
	}
	in->scale = s0;
	*time = t0;
	return 0;
}

static int read_doc(struct ss_in *in, json_object *doc, struct profile **out)
{
	json_object *shared, *profiles;
	size_t i, n;
	bool time = false;
	int ret;

	if (!json_object_is_type(doc, json_type_object))
		return fail(in, "not a JSON object");
	shared = member(doc, "shared", json_type_object);
	in->frames = shared ? member(shared, "frames", json_type_array) : NULL;
	profiles = member(doc, "profiles", json_type_array);
	if (!in->frames || !profiles)
		return fail(in, "no shared.frames or profiles: not speedscope's format");
	in->nframes = json_object_array_length(in->frames);
	for (i = 0; i < in->nframes; i++) {
		json_object *f = json_object_array_get_idx(in->frames, i);

		if (!json_object_is_type(f, json_type_object) ||
		    !member(f, "name", json_type_string))
			return fail(in, "shared.frames[%zu]: no name", i);
	}
	ret = doc_unit(in, profiles, &time);
	if (ret)
		return ret;
	in->p = profile__new(time ? UNIT_NANOSECONDS : UNIT_SAMPLES);
	if (!in->p)
		return -ENOMEM;
	read_name(in->p, doc);
	n = json_object_array_length(profiles);
	for (i = 0; i < n; i++) {
		ret = read_profile(in, json_object_array_get_idx(profiles, i), i);
		if (ret) {
			profile__free(in->p);
			return ret;
		}
	}
	*out = in->p;
	return 0;
}

int read_speedscope(FILE *f, size_t max, struct profile **out, char *err,
		    size_t errlen)
{
	struct ss_in in = { .err = err, .errlen = errlen };
	enum json_tokener_error jerr;
	json_tokener *tok;
	json_object *doc;
	uint8_t *buf;
	size_t len;
	int ret;

	ret = read_kit__slurp(f, max, &buf, &len);
	if (ret)
		return ret;
	tok = json_tokener_new_ex(64);
	if (!tok) {
		free(buf);
		return -ENOMEM;
	}
	doc = json_tokener_parse_ex(tok, (char *)buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!doc || jerr != json_tokener_success) {
		ret = fail(&in, "byte %zu: %s", json_tokener_get_parse_end(tok),
			   jerr == json_tokener_continue ?
			   "unexpected end of file" :
			   json_tokener_error_desc(jerr));
	} else if (json_tokener_get_parse_end(tok) < len &&
		   strspn((char *)buf + json_tokener_get_parse_end(tok),
			  " \t\r\n") != len - json_tokener_get_parse_end(tok)) {
		ret = fail(&in, "byte %zu: data after the document",
			   json_tokener_get_parse_end(tok));
	} else {
		in.b = calloc(1, sizeof(*in.b));
		ret = in.b ? read_doc(&in, doc, out) : -ENOMEM;
		free(in.b);
	}
	json_object_put(doc);
	json_tokener_free(tok);
	free(buf);
	return ret;
}
