// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof: a gzip-compressed perftools.profiles.Profile, as go tool pprof,
 * Pyroscope, Parca and Grafana read it.
 *
 * One sample per profile entry, its stack leaf first.  A Location is a
 * frame (a function at a line); a Function is a code object: qualname,
 * file and first line.  The off-CPU cause is a frame of its own, where
 * the folded writer puts it.  Ids of mappings, locations and functions
 * run 1..N in the order they are made, and string_table[0] is "" (Parca
 * refuses anything else).  Mapping 1 is Python's, whose code has no
 * addresses; each binary of native frames (--native) has one of its own,
 * with its build-id, and their Locations addresses in it: each mapping
 * spans a range of its own, from which an address less the mapping's
 * start is the binary's own virtual address.  Labels carry the thread, process, cgroup and
 * container, under names Prometheus accepts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <zlib.h>

#include "hashfree.h"
#include "pprof.h"
#include "utf8.h"
#include "writer.h"

struct str_idx {
	UT_hash_handle hh;
	int64_t idx;
	char s[];
};

struct func_key {
	const char *name, *file;
	int firstline, kind;
};

struct func_idx {
	struct func_key key;
	uint64_t id;
	UT_hash_handle hh;
};

/* A native binary's mapping: its name and build-id, interned by the
 * profile, so their pointers tell it. */
struct map_idx {
	struct {
		const char *binary, *build_id;
	} key;
	uint64_t id;
	UT_hash_handle hh;
};

struct pprof_out {
	Perftools__Profiles__Profile pb;
	struct str_idx *strs;
	struct func_idx *funcs;
	struct map_idx *maps;
	uint64_t *loc_of_frame;		/* by frame id; 0: not made yet */
	uint64_t loc_of_kind[KIND__MAX];
	size_t cap_strs, cap_funcs, cap_locs, cap_maps;
	int nvalues;
	int vi_cpu, vi_wall, vi_off, vi_task;	/* value indexes, -1: absent */
};

static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	p = realloc(*arr, c * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

/* The valid UTF-8 string's index in the table, adding it on first use;
 * -1 on ENOMEM. */
static int64_t valid_str(struct pprof_out *o, const char *s)
{
	struct str_idx *e;
	size_t len;

	len = strlen(s);
	HASH_FIND(hh, o->strs, s, len, e);
	if (e)
		return e->idx;
	if (grow((void **)&o->pb.string_table, &o->cap_strs,
		 o->pb.n_string_table, sizeof(char *)))
		return -1;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -1;
	memcpy(e->s, s, len + 1);
	e->idx = (int64_t)o->pb.n_string_table;
	o->pb.string_table[o->pb.n_string_table++] = e->s;
	HASH_ADD_KEYPTR(hh, o->strs, e->s, len, e);
	return e->idx;
}

/* The same for any string: a target's bytes that are not UTF-8 (a comm,
 * a path) would make pprof and other proto3 readers refuse the whole
 * profile, so they are fixed first (utf8.h). */
static int64_t str(struct pprof_out *o, const char *s)
{
	char *fixed;
	int64_t i;

	if (!s)
		s = "";
	if (utf8__valid(s))
		return valid_str(o, s);
	fixed = utf8__fixed_dup(s);
	if (!fixed)
		return -1;
	i = valid_str(o, fixed);
	free(fixed);
	return i;
}

/* The Function of (name, file, first line), made on first use; 0 on
 * ENOMEM. */
static uint64_t function(struct pprof_out *o, const char *name,
			 const char *file, int firstline, int kind)
{
	Perftools__Profiles__Function *fn;
	struct func_key k;
	struct func_idx *e;
	int64_t ni, fi;

	memset(&k, 0, sizeof(k));
	k.name = name;
	k.file = file;
	k.firstline = firstline;
	k.kind = kind;
	HASH_FIND(hh, o->funcs, &k, sizeof(k), e);
	if (e)
		return e->id;
	ni = str(o, name);
	/* kernel frames say so where pprof shows a file */
	fi = str(o, kind == PFRAME_KERNEL ? PFRAME_KERNEL_FILE : file);
	if (ni < 0 || fi < 0 ||
	    grow((void **)&o->pb.function, &o->cap_funcs, o->pb.n_function,
		 sizeof(*o->pb.function)))
		return 0;
	fn = calloc(1, sizeof(*fn));
	e = calloc(1, sizeof(*e));
	if (!fn || !e) {
		free(fn);
		free(e);
		return 0;
	}
	perftools__profiles__function__init(fn);
	fn->id = o->pb.n_function + 1;
	fn->name = ni;
	fn->system_name = ni;
	fn->filename = fi;
	fn->start_line = firstline;
	o->pb.function[o->pb.n_function++] = fn;
	e->key = k;
	e->id = fn->id;
	HASH_ADD(hh, o->funcs, key, sizeof(k), e);
	return e->id;
}

/* The Mapping of a native frame's binary, made on first use; 0 on
 * ENOMEM. */
static uint64_t mapping(struct pprof_out *o, const struct pframe *f)
{
	Perftools__Profiles__Mapping *map;
	struct map_idx probe, *e;
	int64_t fi, bi;

	memset(&probe.key, 0, sizeof(probe.key));
	probe.key.binary = f->binary;
	probe.key.build_id = f->build_id;
	HASH_FIND(hh, o->maps, &probe.key, sizeof(probe.key), e);
	if (e)
		return e->id;
	fi = str(o, f->binary);
	bi = str(o, f->build_id);
	if (fi < 0 || bi < 0 ||
	    grow((void **)&o->pb.mapping, &o->cap_maps, o->pb.n_mapping,
		 sizeof(*o->pb.mapping)))
		return 0;
	map = calloc(1, sizeof(*map));
	e = calloc(1, sizeof(*e));
	if (!map || !e) {
		free(map);
		free(e);
		return 0;
	}
	perftools__profiles__mapping__init(map);
	map->id = o->pb.n_mapping + 1;
	map->memory_start = map->id * PFRAME_MAPPING_SPAN;
	map->memory_limit = map->memory_start + PFRAME_MAPPING_SPAN;
	map->filename = fi;
	map->build_id = bi;
	map->has_functions = 1;
	o->pb.mapping[o->pb.n_mapping++] = map;
	e->key = probe.key;
	e->id = map->id;
	HASH_ADD(hh, o->maps, key, sizeof(e->key), e);
	return e->id;
}

/* A new Location of one line of a function; 0 on ENOMEM. */
static uint64_t location(struct pprof_out *o, uint64_t func, int line)
{
	Perftools__Profiles__Location *loc;
	Perftools__Profiles__Line *ln;

	if (!func || grow((void **)&o->pb.location, &o->cap_locs,
			  o->pb.n_location, sizeof(*o->pb.location)))
		return 0;
	loc = calloc(1, sizeof(*loc) + sizeof(*ln) + sizeof(ln));
	if (!loc)
		return 0;
	perftools__profiles__location__init(loc);
	ln = (void *)(loc + 1);
	perftools__profiles__line__init(ln);
	ln->function_id = func;
	ln->line = line;
	loc->line = (void *)(ln + 1);
	loc->line[0] = ln;
	loc->n_line = 1;
	loc->id = o->pb.n_location + 1;
	loc->mapping_id = 1;
	o->pb.location[o->pb.n_location++] = loc;
	return loc->id;
}

static uint64_t frame_location(struct pprof_out *o, const struct pframe *f)
{
	uint64_t *slot = &o->loc_of_frame[f->id], map;
	Perftools__Profiles__Location *loc;

	if (*slot)
		return *slot;
	*slot = location(o, function(o, f->name, f->file, f->firstline,
				     f->kind), f->line);
	if (*slot && f->binary && f->addr < PFRAME_MAPPING_SPAN) {
		map = mapping(o, f);
		if (!map)
			return 0;
		loc = o->pb.location[*slot - 1];
		loc->mapping_id = map;
		loc->address = o->pb.mapping[map - 1]->memory_start + f->addr;
	}
	return *slot;
}

static uint64_t cause_location(struct pprof_out *o, int kind)
{
	uint64_t *slot = &o->loc_of_kind[kind];

	if (!*slot)
		*slot = location(o, function(o, profile__kind_frame(kind), NULL,
					     0, PFRAME_PSEUDO), 0);
	return *slot;
}

static int value_type(struct pprof_out *o, Perftools__Profiles__ValueType *v,
		      const char *type, const char *unit)
{
	perftools__profiles__value_type__init(v);
	v->type = str(o, type);
	v->unit = str(o, unit);
	return v->type < 0 || v->unit < 0 ? -ENOMEM : 0;
}

/* Add a sample type; its index. */
static int add_type(struct pprof_out *o, Perftools__Profiles__ValueType *v,
		    const char *type, const char *unit, int *err)
{
	int i = o->nvalues++;

	*err = *err ?: value_type(o, &v[i], type, unit);
	o->pb.sample_type[i] = &v[i];
	return i;
}

static bool has_tasks(const struct profile *p)
{
	int k;

	for (k = KIND_AWAIT_FIRST; k < KIND__MAX; k++)
		if (profile__total_kind(p, k))
			return true;
	return false;
}

/* samples/count first, then the time types of the mode, the mode's own
 * the default one.  A sampled profile's cpu time is its samples times
 * the period, when the rate is known. */
static int sample_types(struct pprof_out *o, const struct profile *p,
			const struct profile_meta *m)
{
	bool time = profile__unit(p) == UNIT_NANOSECONDS;
	Perftools__Profiles__ValueType *v;
	int err = 0, deflt;

	o->vi_cpu = o->vi_wall = o->vi_off = o->vi_task = -1;
	v = calloc(5, sizeof(*v));
	o->pb.sample_type = calloc(5, sizeof(*o->pb.sample_type));
	if (!v || !o->pb.sample_type) {
		free(v);
		return -ENOMEM;
	}
	deflt = add_type(o, v, "samples", "count", &err);
	if (!time && m->rate_hz)
		deflt = o->vi_cpu = add_type(o, v, "cpu", "nanoseconds", &err);
	if (time && m->mode != MODE_OFF) {
		o->vi_cpu = add_type(o, v, "cpu", "nanoseconds", &err);
		deflt = o->vi_wall = add_type(o, v, "wall", "nanoseconds", &err);
	}
	if (time) {
		o->vi_off = add_type(o, v, "off_cpu", "nanoseconds", &err);
		if (o->vi_wall < 0)
			deflt = o->vi_off;
	}
	/* asyncio tasks' own time: a type of its own, never in the others */
	if (time && has_tasks(p))
		o->vi_task = add_type(o, v, PROFILE_TASK_TYPE, "nanoseconds", &err);
	o->pb.n_sample_type = o->nvalues;
	o->pb.default_sample_type = v[deflt].type;
	if (err || o->vi_cpu < 0)
		return err;
	o->pb.period_type = calloc(1, sizeof(*o->pb.period_type));
	if (!o->pb.period_type)
		return -ENOMEM;
	o->pb.period = m->rate_hz ? profile__period_ns(m->rate_hz) : 0;
	return value_type(o, o->pb.period_type, "cpu", "nanoseconds");
}

static void sample_values(const struct pprof_out *o, const struct profile *p,
			  const struct pentry *e, int64_t *val)
{
	const struct profile_meta *m = profile__meta((struct profile *)p);

	memset(val, 0, o->nvalues * sizeof(*val));
	if (profile__unit(p) == UNIT_SAMPLES) {
		val[0] = (int64_t)e->weight;
		/* a file read in may hold any count: saturate, do not wrap */
		if (o->vi_cpu >= 0 &&
		    (e->weight > INT64_MAX ||
		     __builtin_mul_overflow((int64_t)e->weight,
					    profile__period_ns(m->rate_hz),
					    &val[o->vi_cpu])))
			val[o->vi_cpu] = INT64_MAX;
		return;
	}
	if (profile__kind_is_task(e->kind)) {
		if (o->vi_task >= 0)
			val[o->vi_task] = (int64_t)e->weight;
		return;
	}
	val[0] = (int64_t)e->count;
	if (o->vi_wall >= 0)
		val[o->vi_wall] = (int64_t)e->weight;
	if (e->kind == KIND_CPU && o->vi_cpu >= 0)
		val[o->vi_cpu] = (int64_t)e->weight;
	if (e->kind != KIND_CPU && o->vi_off >= 0)
		val[o->vi_off] = (int64_t)e->weight;
}

#define MAX_LABELS 6

static int label(struct pprof_out *o, Perftools__Profiles__Label *l,
		 const char *key, const char *s, int64_t num)
{
	perftools__profiles__label__init(l);
	l->key = str(o, key);
	if (s)
		l->str = str(o, s);
	l->num = num;
	return l->key < 0 || l->str < 0 ? -ENOMEM : 0;
}

/* The entry's labels, those it has. */
static int sample_labels(struct pprof_out *o, const struct pentry *e,
			 Perftools__Profiles__Label *l, size_t *n)
{
	const struct pthread *t = e->thread;
	const struct pcgroup *c = e->cgroup;
	int err = 0;

	*n = 0;
	if (t && t->pid)
		err = err ?: label(o, &l[(*n)++], "pid", NULL, t->pid);
	if (t && t->tid)
		err = err ?: label(o, &l[(*n)++], "thread_id", NULL, t->tid);
	if (t && t->name)
		err = err ?: label(o, &l[(*n)++], "thread_name", t->name, 0);
	if (t && t->process)
		err = err ?: label(o, &l[(*n)++], "process_name", t->process, 0);
	if (c && c->path)
		err = err ?: label(o, &l[(*n)++], "cgroup", c->path, 0);
	if (c && c->container)
		err = err ?: label(o, &l[(*n)++], "container_id", c->container, 0);
	return err;
}

/*
 * One sample, with its arrays in the same allocation.  The frames are
 * leaf first: the kernel's, then the cause, then Python's.
 */
static int sample(struct pprof_out *o, const struct profile *p,
		  const struct pentry *e, Perftools__Profiles__Sample **out)
{
	const struct pstack *s = e->stack;
	int cause_at = pentry__cause_at(e);
	Perftools__Profiles__Label lab[MAX_LABELS];
	Perftools__Profiles__Sample *smp;
	size_t nloc = s->n + (cause_at >= 0), nlab, i, j;
	char *mem;
	int err;

	err = sample_labels(o, e, lab, &nlab);
	if (err)
		return err;
	mem = calloc(1, sizeof(*smp) + nloc * sizeof(uint64_t) +
			o->nvalues * sizeof(int64_t) +
			nlab * (sizeof(*lab) + sizeof(void *)));
	if (!mem)
		return -ENOMEM;
	smp = (void *)mem;
	perftools__profiles__sample__init(smp);
	smp->location_id = (void *)(smp + 1);
	smp->value = (void *)(smp->location_id + nloc);
	smp->label = (void *)(smp->value + o->nvalues);
	for (i = 0; i < nlab; i++) {
		Perftools__Profiles__Label *l = (void *)(smp->label + nlab);

		l[i] = lab[i];
		smp->label[i] = &l[i];
	}
	smp->n_label = nlab;
	for (i = 0, j = nloc; i < s->n; i++) {
		if ((int)i == cause_at)
			smp->location_id[--j] = cause_location(o, e->kind);
		smp->location_id[--j] = frame_location(o, s->frames[i]);
	}
	if (cause_at == (int)s->n)
		smp->location_id[--j] = cause_location(o, e->kind);
	for (i = 0; i < nloc; i++)
		if (!smp->location_id[i])
			err = -ENOMEM;
	smp->n_location_id = nloc;
	sample_values(o, p, e, smp->value);
	smp->n_value = o->nvalues;
	*out = smp;
	return err;
}

static int comments(struct pprof_out *o, const struct profile_meta *m)
{
	char buf[512];
	int64_t *c = calloc(3, sizeof(*c));
	int n = 0;

	if (!c)
		return -ENOMEM;
	o->pb.comment = c;
	c[n++] = str(o, PPROF_EXPORTER);
	snprintf(buf, sizeof(buf), "%s%s", PPROF_MODE, profile__mode_name(m->mode));
	c[n++] = str(o, buf);
	if (m->target[0]) {
		snprintf(buf, sizeof(buf), "%s%s", PPROF_TARGET, m->target);
		c[n++] = str(o, buf);
	}
	o->pb.n_comment = n;
	return c[0] < 0 || c[1] < 0 || c[n - 1] < 0 ? -ENOMEM : 0;
}

static int build(struct pprof_out *o, struct profile *p)
{
	const struct profile_meta *m = profile__meta(p);
	Perftools__Profiles__Mapping *map;
	const struct pentry **entries;
	size_t n, i;
	int err;

	perftools__profiles__profile__init(&o->pb);
	if (str(o, "") != 0)
		return -ENOMEM;
	err = sample_types(o, p, m) ?: comments(o, m);
	if (err)
		return err;
	/* the first mapping: Python code has no addresses */
	map = calloc(1, sizeof(*map));
	if (!map || grow((void **)&o->pb.mapping, &o->cap_maps, 0,
			 sizeof(*o->pb.mapping))) {
		free(map);
		return -ENOMEM;
	}
	perftools__profiles__mapping__init(map);
	map->id = 1;
	map->filename = str(o, "python");
	map->has_functions = map->has_filenames = map->has_line_numbers = 1;
	o->pb.mapping[0] = map;
	o->pb.n_mapping = 1;
	o->pb.time_nanos = (int64_t)m->start_unix_ns;
	o->pb.duration_nanos = (int64_t)(m->duration_s * 1e9);

	o->loc_of_frame = calloc(profile__nframes(p) + 1, sizeof(uint64_t));
	if (!o->loc_of_frame)
		return -ENOMEM;
	err = profile__entries(p, &entries, &n);
	if (err)
		return err;
	o->pb.sample = calloc(n ? n : 1, sizeof(*o->pb.sample));
	if (!o->pb.sample)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		if (!entries[i]->weight)
			continue;
		err = sample(o, p, entries[i],
			     &o->pb.sample[o->pb.n_sample++]);
	}
	free(entries);
	return err;
}

static void pprof_free(struct pprof_out *o)
{
	size_t i;

	HASH_FREE_ALL(o->strs);
	HASH_FREE_ALL(o->funcs);
	for (i = 0; i < o->pb.n_sample; i++)
		free(o->pb.sample[i]);
	for (i = 0; i < o->pb.n_location; i++)
		free(o->pb.location[i]);
	for (i = 0; i < o->pb.n_function; i++)
		free(o->pb.function[i]);
	if (o->pb.sample_type)
		free(o->pb.sample_type[0]);
	for (i = 0; i < o->pb.n_mapping; i++)
		free(o->pb.mapping[i]);
	free(o->pb.mapping);
	HASH_FREE_ALL(o->maps);
	free(o->pb.sample_type);
	free(o->pb.period_type);
	free(o->pb.sample);
	free(o->pb.location);
	free(o->pb.function);
	free(o->pb.string_table);
	free(o->pb.comment);
	free(o->loc_of_frame);
}

/* The packed message through gzip into f. */
static int gzip_to(FILE *f, const uint8_t *buf, size_t len)
{
	uint8_t out[1 << 16];
	z_stream z;
	int ret, err = 0;

	memset(&z, 0, sizeof(z));
	/* 15 bits of window, +16: a gzip header rather than zlib's */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	z.avail_in = len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		ret = deflate(&z, Z_FINISH);
		if (ret == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		if (fwrite(out, 1, sizeof(out) - z.avail_out, f) !=
		    sizeof(out) - z.avail_out) {
			err = -EIO;
			break;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}

static int write_pprof(struct profile *p, const struct write_opts *wo,
		       FILE *f)
{
	struct pprof_out o;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	(void)wo;	/* labels, not root frames, carry the groups */
	memset(&o, 0, sizeof(o));
	err = build(&o, p);
	if (!err) {
		len = perftools__profiles__profile__get_packed_size(&o.pb);
		buf = malloc(len ? len : 1);
		if (!buf)
			err = -ENOMEM;
	}
	if (!err) {
		perftools__profiles__profile__pack(&o.pb, buf);
		err = gzip_to(f, buf, len);
	}
	free(buf);
	pprof_free(&o);
	return err;
}

const struct writer writer_pprof = {
	.name = "pprof",
	.exts = { "pb.gz", "pprof" },
	.write = write_pprof,
};
