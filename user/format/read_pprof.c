// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof profiles back into the model: ours, and those of other tools.
 * The weight is wall time when the profile has it, else off-CPU time,
 * else the sample count, else its default sample type.  Every index in
 * the message is checked, and decompression stops at the size limit: a
 * small file must not become gigabytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "labels.h"
#include "pprof.h"
#include "read_kit.h"
#include "reader.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Sample Sample;

struct pprof_in {
	struct profile *p;
	const Profile *pb;
	Function **funcs;		/* by id, for bsearch */
	Location **locs;
	int weight_at, count_at;	/* value indexes; count_at may be -1 */
	int task_at;		/* PROFILE_TASK_TYPE's, or -1 */
	struct stack_build *b;
	char *err;
	size_t errlen;
};

/* The reason, in err: -EINVAL. */
#define fail(in, ...) read_kit__error((in)->err, (in)->errlen, __VA_ARGS__)

/* gzip'd input inflated, at most max bytes. */
static int gunzip(const uint8_t *src, size_t len, size_t max, uint8_t **out,
		  size_t *outlen, char *err, size_t errlen)
{
	size_t cap = len * 4 < max ? len * 4 + 1024 : max;
	uint8_t *buf = malloc(cap), *nb;
	z_stream z;
	int ret;

	if (!buf)
		return -ENOMEM;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 32)) {	/* gzip or zlib header */
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (uint8_t *)src;
	z.avail_in = len;
	for (;;) {
		z.next_out = buf + z.total_out;
		z.avail_out = cap - z.total_out;
		ret = inflate(&z, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			break;
		if (ret == Z_BUF_ERROR && !z.avail_in) {
			snprintf(err, errlen, "byte %lu: truncated gzip data",
				 z.total_in);
			ret = -EINVAL;
			goto fail;
		}
		if (ret != Z_OK && ret != Z_BUF_ERROR) {
			snprintf(err, errlen, "byte %lu: corrupt gzip data (%s)",
				 z.total_in, z.msg ? z.msg : "?");
			ret = -EINVAL;
			goto fail;
		}
		if (z.avail_out)
			continue;
		if (cap >= max) {
			snprintf(err, errlen, "more than %zu MiB uncompressed",
				 max >> 20);
			ret = -EFBIG;
			goto fail;
		}
		cap = cap * 2 > max ? max : cap * 2;
		nb = realloc(buf, cap);
		if (!nb) {
			ret = -ENOMEM;
			goto fail;
		}
		buf = nb;
	}
	*outlen = z.total_out;
	*out = buf;
	inflateEnd(&z);
	return 0;
fail:
	inflateEnd(&z);
	free(buf);
	return ret;
}

static const char *string_at(const Profile *pb, int64_t i)
{
	return i >= 0 && (size_t)i < pb->n_string_table ?
		       pb->string_table[i] : NULL;
}

static int by_func_id(const void *a, const void *b)
{
	uint64_t x = (*(Function *const *)a)->id;
	uint64_t y = (*(Function *const *)b)->id;

	return x < y ? -1 : x > y;
}

static int by_loc_id(const void *a, const void *b)
{
	uint64_t x = (*(Location *const *)a)->id;
	uint64_t y = (*(Location *const *)b)->id;

	return x < y ? -1 : x > y;
}

static Function *find_func(struct pprof_in *in, uint64_t id)
{
	Function key = { .id = id }, *k = &key, **f;

	f = bsearch(&k, in->funcs, in->pb->n_function, sizeof(*f), by_func_id);
	return f ? *f : NULL;
}

static Location *find_loc(struct pprof_in *in, uint64_t id)
{
	Location key = { .id = id }, *k = &key, **l;

	l = bsearch(&k, in->locs, in->pb->n_location, sizeof(*l), by_loc_id);
	return l ? *l : NULL;
}

/* The tables sorted by id, and every string index checked once. */
static int index_tables(struct pprof_in *in)
{
	const Profile *pb = in->pb;
	size_t i;

	if (!pb->n_string_table || strcmp(pb->string_table[0], ""))
		return fail(in, "string_table[0] is not \"\"");
	in->funcs = malloc((pb->n_function + 1) * sizeof(*in->funcs));
	in->locs = malloc((pb->n_location + 1) * sizeof(*in->locs));
	if (!in->funcs || !in->locs)
		return -ENOMEM;
	for (i = 0; i < pb->n_function; i++) {
		Function *f = pb->function[i];

		if (!string_at(pb, f->name) || !string_at(pb, f->filename) ||
		    !string_at(pb, f->system_name))
			return fail(in, "function %zu: string index out of range", i);
		in->funcs[i] = f;
	}
	for (i = 0; i < pb->n_location; i++)
		in->locs[i] = pb->location[i];
	qsort(in->funcs, pb->n_function, sizeof(*in->funcs), by_func_id);
	qsort(in->locs, pb->n_location, sizeof(*in->locs), by_loc_id);
	return 0;
}

static bool type_is(const Profile *pb, size_t i, const char *type,
		    const char *unit)
{
	const char *t = string_at(pb, pb->sample_type[i]->type);
	const char *u = string_at(pb, pb->sample_type[i]->unit);

	return t && u && !strcmp(t, type) && !strcmp(u, unit);
}

static int find_type(const Profile *pb, const char *type, const char *unit)
{
	size_t i;

	for (i = 0; i < pb->n_sample_type; i++)
		if (type_is(pb, i, type, unit))
			return (int)i;
	return -1;
}

/* Which value is the weight, and so the unit and mode. */
static int choose_values(struct pprof_in *in, enum profile_unit *unit,
			 int *mode)
{
	const Profile *pb = in->pb;
	int samples = find_type(pb, "samples", "count");
	int wall = find_type(pb, "wall", "nanoseconds");
	int off = find_type(pb, "off_cpu", "nanoseconds");
	const char *u;
	size_t i;

	if (!pb->n_sample_type)
		return fail(in, "no sample types");
	in->count_at = samples;
	in->task_at = find_type(pb, PROFILE_TASK_TYPE, "nanoseconds");
	*unit = UNIT_NANOSECONDS;
	if (wall >= 0) {
		in->weight_at = wall;
		*mode = MODE_WALL;
	} else if (off >= 0) {
		in->weight_at = off;
		*mode = MODE_OFF;
	} else if (samples >= 0) {
		in->weight_at = samples;
		*unit = UNIT_SAMPLES;
		*mode = MODE_CPU;
	} else {
		/* someone else's: the default type, else the last */
		in->weight_at = (int)pb->n_sample_type - 1;
		for (i = 0; i < pb->n_sample_type; i++)
			if (pb->sample_type[i]->type == pb->default_sample_type &&
			    pb->default_sample_type)
				in->weight_at = (int)i;
		u = string_at(pb, pb->sample_type[in->weight_at]->unit);
		if (!u || strcmp(u, "nanoseconds"))
			*unit = UNIT_SAMPLES;
		*mode = *unit == UNIT_SAMPLES ? MODE_CPU : MODE_WALL;
	}
	return 0;
}

static int push_location(struct pprof_in *in, const Location *loc,
			 size_t si)
{
	char addr[32];
	size_t i;
	int ret;

	if (!loc->n_line) {	/* not symbolized: its address */
		snprintf(addr, sizeof(addr), "0x%llx",
			 (unsigned long long)loc->address);
		return stack_build__push(in->p, in->b, addr, NULL, 0, 0);
	}
	/* the last line is the caller the others were inlined into */
	for (i = loc->n_line; i-- > 0;) {
		Function *f = find_func(in, loc->line[i]->function_id);

		if (!f)
			return fail(in, "sample %zu: function id %llu not defined",
				    si, (unsigned long long)loc->line[i]->function_id);
		ret = stack_build__push(in->p, in->b, string_at(in->pb, f->name),
				   string_at(in->pb, f->filename),
				   (int)loc->line[i]->line, (int)f->start_line);
		if (ret)
			return ret;
	}
	return 0;
}

static void read_labels(const Profile *pb, const Sample *s,
			struct parsed_labels *lab)
{
	size_t i;

	memset(lab, 0, sizeof(*lab));
	for (i = 0; i < s->n_label; i++) {
		const char *key = string_at(pb, s->label[i]->key);
		const char *str = string_at(pb, s->label[i]->str);
		int64_t num = s->label[i]->num;
		bool id = num > 0 && num < (1 << 30);

		if (!key)
			continue;
		if (!strcmp(key, "pid") && id)
			lab->pid = (pid_t)num;
		else if (!strcmp(key, "thread_id") && id)
			lab->tid = (pid_t)num;
		else if (!strcmp(key, "thread_name") && str && *str)
			lab->thread = str;
		else if (!strcmp(key, "process_name") && str && *str)
			lab->process = str;
		else if (!strcmp(key, "cgroup") && str && *str)
			lab->cgroup = str;
		else if (!strcmp(key, "container_id") && str && *str)
			lab->container = str;
	}
}

static int read_sample(struct pprof_in *in, const Sample *s, size_t si)
{
	struct parsed_labels lab;
	int64_t weight, count = 1;
	size_t i;
	int ret;

	if (s->n_value != in->pb->n_sample_type)
		return fail(in, "sample %zu: %zu values for %zu sample types", si,
			    s->n_value, in->pb->n_sample_type);
	weight = s->value[in->weight_at];
	if (in->count_at >= 0)
		count = s->value[in->count_at];
	/* a task's time: its own type alone (its cause frame says so) */
	if (!weight && in->task_at >= 0 && in->task_at != in->weight_at) {
		weight = s->value[in->task_at];
		count = 1;
	}
	if (weight < 0 || count < 0)
		return fail(in, "sample %zu: negative value", si);
	if (!weight)
		return 0;
	in->b->n = 0;
	in->b->kind = KIND_CPU;
	/* leaf first in the file, root first in the model */
	for (i = s->n_location_id; i-- > 0;) {
		Location *loc = find_loc(in, s->location_id[i]);

		if (!loc)
			return fail(in, "sample %zu: location id %llu not defined",
				    si, (unsigned long long)s->location_id[i]);
		ret = push_location(in, loc, si);
		if (ret == -E2BIG)
			return fail(in, "sample %zu: stack deeper than %d frames",
				    si, READER_MAX_DEPTH);
		if (ret)
			return ret;
	}
	read_labels(in->pb, s, &lab);
	if (profile__unit(in->p) == UNIT_SAMPLES)
		count = weight;
	ret = stack_build__add(in->p, in->b, &lab, (uint64_t)count,
			  (uint64_t)weight);
	return ret == -EINVAL ? 0 : ret;	/* an empty stack: nothing */
}

/* Our comments: mode=..., target=... */
static void read_meta(struct pprof_in *in, struct profile_meta *m)
{
	const Profile *pb = in->pb;
	const char *c;
	size_t i, lm = strlen(PPROF_MODE), lt = strlen(PPROF_TARGET);

	m->start_unix_ns = pb->time_nanos > 0 ? (uint64_t)pb->time_nanos : 0;
	m->duration_s = pb->duration_nanos > 0 ? pb->duration_nanos / 1e9 : 0;
	if (pb->period > 0 && pb->period_type &&
	    (c = string_at(pb, pb->period_type->unit)) &&
	    !strcmp(c, "nanoseconds") && pb->period <= 1000000000)
		m->rate_hz = 1e9 / (double)pb->period;
	for (i = 0; i < pb->n_comment; i++) {
		c = string_at(pb, pb->comment[i]);
		if (c && !strncmp(c, PPROF_TARGET, lt))
			snprintf(m->target, sizeof(m->target), "%s", c + lt);
		if (c && !strncmp(c, PPROF_MODE, lm) && !strcmp(c + lm, "wall"))
			m->mode = MODE_WALL;
		if (c && !strncmp(c, PPROF_MODE, lm) && !strcmp(c + lm, "off"))
			m->mode = MODE_OFF;
	}
}

static int read_message(struct pprof_in *in, struct profile **out)
{
	enum profile_unit unit = UNIT_SAMPLES;
	int mode = MODE_CPU, ret;
	size_t i;

	ret = index_tables(in);
	if (!ret)
		ret = choose_values(in, &unit, &mode);
	if (ret)
		return ret;
	in->p = profile__new(unit);
	in->b = calloc(1, sizeof(*in->b));
	if (!in->p || !in->b)
		ret = -ENOMEM;
	if (!ret) {
		profile__meta(in->p)->mode = mode;
		read_meta(in, profile__meta(in->p));
	}
	for (i = 0; !ret && i < in->pb->n_sample; i++)
		ret = read_sample(in, in->pb->sample[i], i);
	free(in->b);
	if (ret) {
		profile__free(in->p);
		return ret;
	}
	*out = in->p;
	return 0;
}

int read_pprof(FILE *f, size_t max, struct profile **out, char *err,
	       size_t errlen)
{
	struct pprof_in in = { .err = err, .errlen = errlen };
	uint8_t *raw, *msg = NULL;
	size_t len, msglen;
	Profile *pb;
	int ret;

	ret = read_kit__slurp(f, max, &raw, &len);
	if (ret)
		return ret;
	if (len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
		ret = gunzip(raw, len, max, &msg, &msglen, err, errlen);
		free(raw);
		if (ret)
			return ret;
	} else {
		msg = raw;
		msglen = len;
	}
	pb = perftools__profiles__profile__unpack(NULL, msglen, msg);
	free(msg);
	if (!pb)
		return fail(&in, "not a perftools.profiles.Profile message (%zu bytes)",
			    msglen);
	in.pb = pb;
	ret = read_message(&in, out);
	free(in.funcs);
	free(in.locs);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	return ret;
}
