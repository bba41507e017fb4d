// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * OTLP profiles, v1development as opentelemetry-proto 1.45.2 has it
 * (the one collector v0.165.0's pdata reads): one dictionary for the whole
 * request, whose tables all keep index 0 for the empty element; samples
 * refer to a stack, a stack to locations (leaf first), a location to one
 * line of a function.  Functions are code objects, (qualname, file, first
 * line), as in the pprof writer; the off-CPU cause is a frame, under the
 * Python frames, and also a sample attribute.
 *
 * Every message comes from one arena, freed once the request is packed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <uthash.h>

#include "otlp.h"
#include "pysight.h"
#include "utf8.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "google/rpc/status.pb-c.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ResProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit KVU;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Request;

#define ARENA_BLOCK	(64u << 10)
#define MAX_RES_ATTRS	(12 + 32)	/* ours, and --tag's */
#define MAX_SAMPLE_ATTRS 4

struct block {
	struct block *next;
	size_t used, size;
	char mem[];
};

/* Interned: a string, or an attribute (key and value as one key). */
struct idx {
	UT_hash_handle hh;
	int32_t i;
	size_t len;
	char k[];
};

struct func_key {
	const char *name, *file;
	int firstline, kind;
};

struct func_idx {
	struct func_key key;
	int32_t i;
	UT_hash_handle hh;
};

/* A native binary's mapping (--native): its name and build-id, interned
 * by the profile, so their pointers tell it.  Each spans a range of
 * addresses of its own (PFRAME_MAPPING_SPAN). */
struct map_idx {
	struct {
		const char *binary, *build_id;
	} key;
	int32_t i;
	UT_hash_handle hh;
};

/* OpenTelemetry's semantic conventions: a binary's GNU build-id, hex */
#define ATTR_BUILD_ID	"process.executable.build_id.gnu"

/* The samples of one resource, while they are gathered. */
struct group {
	UT_hash_handle hh;
	char *key;			/* the resource's attributes, joined */
	struct otlp_process proc;	/* of its first process */
	pid_t pid;			/* its one pid, or 0 for several */
	/* [0] its threads' samples, [1] its asyncio tasks' own time (a
	 * profile of its own: task time never adds into thread time) */
	struct {
		Sample **samples;
		size_t n, cap;
	} of[2];
};

struct enc {
	const struct otlp_opts *o;
	struct profile *p;
	struct block *arena;
	Dict d;
	size_t cap_str, cap_fn, cap_loc, cap_attr, cap_stack, cap_map;
	struct idx *strs, *attrs;
	struct func_idx *funcs;
	struct map_idx *maps;
	int32_t *loc_of_frame;		/* by frame id; 0: not made */
	int32_t loc_of_kind[KIND__MAX];
	int32_t *stack_of[KIND__MAX];	/* by stack id; 0: not made */
	struct group *groups;
	int err;
};

static void *alloc(struct enc *e, size_t size)
{
	struct block *b = e->arena;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (!b || b->used + size > b->size) {
		size_t bs = size > ARENA_BLOCK ? size : ARENA_BLOCK;

		b = malloc(sizeof(*b) + bs);
		if (!b) {
			e->err = -ENOMEM;
			return NULL;
		}
		b->next = e->arena;
		b->used = 0;
		b->size = bs;
		e->arena = b;
	}
	p = b->mem + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

/* Room for one more in a table the arena does not hold (it grows). */
static bool room(struct enc *e, void **arr, size_t *cap, size_t n,
		 size_t size)
{
	void *p;

	if (n < *cap)
		return true;
	p = realloc(*arr, (*cap ? *cap * 2 : 64) * size);
	if (!p) {
		e->err = -ENOMEM;
		return false;
	}
	*arr = p;
	*cap = *cap ? *cap * 2 : 64;
	return true;
}

/* A copy in the arena, made valid UTF-8: a target's bytes (a comm, a
 * path, a code name) that are not would make a strict collector refuse
 * the whole request, every other process's samples with it. */
static char *dup(struct enc *e, const char *s)
{
	size_t len = strlen(s);
	char *d = alloc(e, len + 1);

	if (d) {
		memcpy(d, s, len + 1);
		utf8__fix(d, false);
	}
	return d;
}

/* Index of the string in the dictionary's table. */
static int32_t str(struct enc *e, const char *s)
{
	struct idx *x;
	size_t len;

	if (!s)
		s = "";
	if (!utf8__valid(s) && !(s = dup(e, s)))
		return 0;
	len = strlen(s);
	HASH_FIND(hh, e->strs, s, len, x);
	if (x)
		return x->i;
	if (!room(e, (void **)&e->d.string_table, &e->cap_str,
		  e->d.n_string_table, sizeof(char *)))
		return 0;
	x = alloc(e, sizeof(*x) + len + 1);
	if (!x)
		return 0;
	memcpy(x->k, s, len + 1);
	x->len = len;
	x->i = (int32_t)e->d.n_string_table;
	e->d.string_table[e->d.n_string_table++] = x->k;
	HASH_ADD_KEYPTR(hh, e->strs, x->k, len, x);
	return x->i;
}

static AnyValue *str_value(struct enc *e, const char *s)
{
	AnyValue *v = alloc(e, sizeof(*v));

	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	v->string_value = dup(e, s);
	return v->string_value ? v : NULL;
}

static AnyValue *int_value(struct enc *e, int64_t n)
{
	AnyValue *v = alloc(e, sizeof(*v));

	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	v->int_value = n;
	return v;
}

/* Index of (key, value) in the attribute table; s NULL for the number. */
static int32_t attr(struct enc *e, const char *key, const char *s, int64_t n)
{
	char k[512];
	size_t len;
	struct idx *x;
	KVU *kv;

	len = (size_t)snprintf(k, sizeof(k), "%s%c%c%s%c%lld", key, 0,
			       s ? 's' : 'i', s ? s : "", 0, (long long)n);
	if (len >= sizeof(k))
		len = sizeof(k) - 1;
	HASH_FIND(hh, e->attrs, k, len, x);
	if (x)
		return x->i;
	if (!room(e, (void **)&e->d.attribute_table, &e->cap_attr,
		  e->d.n_attribute_table, sizeof(KVU *)))
		return 0;
	x = alloc(e, sizeof(*x) + len);
	kv = alloc(e, sizeof(*kv));
	if (!x || !kv)
		return 0;
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(kv);
	kv->key_strindex = str(e, key);
	kv->value = s ? str_value(e, s) : int_value(e, n);
	if (!kv->value)
		return 0;
	memcpy(x->k, k, len);
	x->len = len;
	x->i = (int32_t)e->d.n_attribute_table;
	e->d.attribute_table[e->d.n_attribute_table++] = kv;
	HASH_ADD(hh, e->attrs, k, len, x);
	return x->i;
}

static int32_t function(struct enc *e, const char *name, const char *file,
			int firstline, int kind)
{
	struct func_key k;
	struct func_idx *x;
	Function *fn;

	memset(&k, 0, sizeof(k));
	k.name = name;
	k.file = file;
	k.firstline = firstline;
	k.kind = kind;
	HASH_FIND(hh, e->funcs, &k, sizeof(k), x);
	if (x)
		return x->i;
	if (!room(e, (void **)&e->d.function_table, &e->cap_fn,
		  e->d.n_function_table, sizeof(Function *)))
		return 0;
	fn = alloc(e, sizeof(*fn));
	x = alloc(e, sizeof(*x));
	if (!fn || !x)
		return 0;
	opentelemetry__proto__profiles__v1development__function__init(fn);
	fn->name_strindex = str(e, name);
	fn->system_name_strindex = fn->name_strindex;
	fn->filename_strindex = str(e, kind == PFRAME_KERNEL ? PFRAME_KERNEL_FILE : file);
	fn->start_line = firstline;
	x->key = k;
	x->i = (int32_t)e->d.n_function_table;
	e->d.function_table[e->d.n_function_table++] = fn;
	HASH_ADD(hh, e->funcs, key, sizeof(k), x);
	return x->i;
}

static int32_t location(struct enc *e, int32_t fn, int line)
{
	Location *loc;
	Line *ln;

	if (!room(e, (void **)&e->d.location_table, &e->cap_loc,
		  e->d.n_location_table, sizeof(Location *)))
		return 0;
	loc = alloc(e, sizeof(*loc));
	ln = alloc(e, sizeof(*ln));
	if (!loc || !ln)
		return 0;
	opentelemetry__proto__profiles__v1development__location__init(loc);
	opentelemetry__proto__profiles__v1development__line__init(ln);
	loc->lines = alloc(e, sizeof(Line *));
	if (!loc->lines)
		return 0;
	ln->function_index = fn;
	ln->line = line;
	loc->lines[0] = ln;
	loc->n_lines = 1;
	e->d.location_table[e->d.n_location_table] = loc;
	return (int32_t)e->d.n_location_table++;
}

/* The Mapping of a native frame's binary, made on first use; 0 on
 * ENOMEM. */
static int32_t mapping(struct enc *e, const struct pframe *f)
{
	struct map_idx probe, *x;
	Mapping *m;

	memset(&probe.key, 0, sizeof(probe.key));
	probe.key.binary = f->binary;
	probe.key.build_id = f->build_id;
	HASH_FIND(hh, e->maps, &probe.key, sizeof(probe.key), x);
	if (x)
		return x->i;
	if (!room(e, (void **)&e->d.mapping_table, &e->cap_map,
		  e->d.n_mapping_table, sizeof(Mapping *)))
		return 0;
	m = alloc(e, sizeof(*m));
	x = alloc(e, sizeof(*x));
	if (!m || !x)
		return 0;
	opentelemetry__proto__profiles__v1development__mapping__init(m);
	x->key = probe.key;
	x->i = (int32_t)e->d.n_mapping_table;
	m->memory_start = (uint64_t)x->i * PFRAME_MAPPING_SPAN;
	m->memory_limit = m->memory_start + PFRAME_MAPPING_SPAN;
	m->filename_strindex = str(e, f->binary);
	if (f->build_id && *f->build_id) {
		m->attribute_indices = alloc(e, sizeof(int32_t));
		if (!m->attribute_indices)
			return 0;
		m->attribute_indices[0] = attr(e, ATTR_BUILD_ID, f->build_id, 0);
		m->n_attribute_indices = 1;
	}
	e->d.mapping_table[e->d.n_mapping_table++] = m;
	HASH_ADD(hh, e->maps, key, sizeof(x->key), x);
	return x->i;
}

static int32_t frame_loc(struct enc *e, const struct pframe *f)
{
	int32_t *slot = &e->loc_of_frame[f->id], map;
	Location *loc;

	if (*slot)
		return *slot;
	*slot = location(e, function(e, f->name, f->file, f->firstline,
				     f->kind), f->line);
	if (*slot && f->binary && f->addr < PFRAME_MAPPING_SPAN) {
		map = mapping(e, f);
		if (!map)
			return 0;
		loc = e->d.location_table[*slot];
		loc->mapping_index = map;
		loc->address = e->d.mapping_table[map]->memory_start + f->addr;
	}
	return *slot;
}

static int32_t cause_loc(struct enc *e, int kind)
{
	int32_t *slot = &e->loc_of_kind[kind];

	if (!*slot)
		*slot = location(e, function(e, profile__kind_frame(kind), NULL,
					     0, PFRAME_PSEUDO), 0);
	return *slot;
}

/* The entry's stack: leaf first, the kernel's frames, the cause, then
 * Python's.  One per (stack, kind). */
static int32_t stack(struct enc *e, const struct pentry *en)
{
	const struct pstack *s = en->stack;
	int cause_at = pentry__cause_at(en);
	size_t n = s->n + (cause_at >= 0), j = 0;
	int32_t *slot = &e->stack_of[en->kind][s->id];
	unsigned int i;
	Stack *st;

	if (*slot)
		return *slot;
	if (!room(e, (void **)&e->d.stack_table, &e->cap_stack,
		  e->d.n_stack_table, sizeof(Stack *)))
		return 0;
	st = alloc(e, sizeof(*st));
	if (!st)
		return 0;
	opentelemetry__proto__profiles__v1development__stack__init(st);
	st->location_indices = alloc(e, (n + 1) * sizeof(int32_t));
	if (!st->location_indices)
		return 0;
	for (i = s->n; i-- > 0;) {
		if (cause_at >= 0 && i + 1 == (unsigned int)cause_at)
			st->location_indices[j++] = cause_loc(e, en->kind);
		st->location_indices[j++] = frame_loc(e, s->frames[i]);
	}
	if (cause_at == 0)
		st->location_indices[j++] = cause_loc(e, en->kind);
	st->n_location_indices = j;
	e->d.stack_table[e->d.n_stack_table] = st;
	*slot = (int32_t)e->d.n_stack_table++;
	return *slot;
}

/* The resource of an entry's process, and its samples' group. */
static struct group *group_of(struct enc *e, const struct pentry *en)
{
	struct otlp_process pr = { 0 };
	const struct pthread *t = en->thread;
	char key[1024], fallback[64];
	struct group *g;
	size_t len;

	if (!e->o->process || !t ||
	    e->o->process(e->o->ctx, t, en->cgroup, &pr)) {
		memset(&pr, 0, sizeof(pr));
		if (en->cgroup)
			pr.container = en->cgroup->container;
	}
	if (!pr.service) {
		snprintf(fallback, sizeof(fallback), "unknown_service:%s",
			 t && t->process ? t->process : "python");
		pr.service = fallback;
	}
	len = (size_t)snprintf(key, sizeof(key), "%s%c%s%c%s%c%s%c%s",
			       pr.service, 0, pr.exe_path ?: "", 0,
			       pr.runtime_version ?: "", 0,
			       pr.container ?: "", 0, pr.pod ?: "");
	if (len >= sizeof(key))
		len = sizeof(key) - 1;
	HASH_FIND(hh, e->groups, key, len, g);
	if (g) {
		if (t && g->pid != t->pid)
			g->pid = 0;
		return g;
	}
	g = alloc(e, sizeof(*g));
	if (!g || !(g->key = alloc(e, len)))
		return NULL;
	memcpy(g->key, key, len);
	g->pid = t ? t->pid : 0;
	g->proc.service = dup(e, pr.service);
	g->proc.exe_name = pr.exe_name ? dup(e, pr.exe_name) : NULL;
	g->proc.exe_path = pr.exe_path ? dup(e, pr.exe_path) : NULL;
	g->proc.runtime_version = pr.runtime_version ? dup(e, pr.runtime_version) : NULL;
	g->proc.container = pr.container ? dup(e, pr.container) : NULL;
	g->proc.pod = pr.pod ? dup(e, pr.pod) : NULL;
	if (e->err)
		return NULL;
	HASH_ADD_KEYPTR(hh, e->groups, g->key, len, g);
	return g;
}

static int add_sample(struct enc *e, const struct pentry *en)
{
	const struct pthread *t = en->thread;
	struct group *g = group_of(e, en);
	int task = profile__kind_is_task(en->kind);
	Sample *s;
	size_t n = 0;

	if (!g || !room(e, (void **)&g->of[task].samples, &g->of[task].cap,
			g->of[task].n, sizeof(Sample *)))
		return e->err ?: -ENOMEM;
	s = alloc(e, sizeof(*s));
	if (!s)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__sample__init(s);
	s->values = alloc(e, sizeof(int64_t));
	s->attribute_indices = alloc(e, MAX_SAMPLE_ATTRS * sizeof(int32_t));
	if (!s->values || !s->attribute_indices)
		return -ENOMEM;
	s->stack_index = stack(e, en);
	s->values[0] = (int64_t)en->weight;
	s->n_values = 1;
	if (t && t->pid)
		s->attribute_indices[n++] = attr(e, "process.pid", NULL, t->pid);
	if (t && t->tid)
		s->attribute_indices[n++] = attr(e, "thread.id", NULL, t->tid);
	if (t && t->name)
		s->attribute_indices[n++] = attr(e, "thread.name", t->name, 0);
	if (task)
		s->attribute_indices[n++] = attr(e, "pysight.asyncio.await",
						 profile__kind_name(en->kind), 0);
	else if (en->kind != KIND_CPU)
		s->attribute_indices[n++] = attr(e, "pysight.off_cpu.cause",
						 profile__kind_name(en->kind), 0);
	s->n_attribute_indices = n;
	g->of[task].samples[g->of[task].n++] = s;
	return e->err;
}

static KeyValue *kv(struct enc *e, const char *key, AnyValue *v)
{
	KeyValue *k = alloc(e, sizeof(*k));

	if (!k || !v)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(k);
	k->key = dup(e, key);
	k->value = v;
	return k->key ? k : NULL;
}

/* The resource: the semantic conventions' names, then --tag's. */
static Resource *resource(struct enc *e, const struct group *g)
{
	const struct otlp_process *p = &g->proc;
	Resource *r = alloc(e, sizeof(*r));
	KeyValue **a = alloc(e, MAX_RES_ATTRS * sizeof(*a));
	size_t n = 0;
	int i;

	if (!r || !a)
		return NULL;
	opentelemetry__proto__resource__v1__resource__init(r);
	a[n++] = kv(e, "service.name", str_value(e, p->service));
	if (e->o->host)
		a[n++] = kv(e, "host.name", str_value(e, e->o->host));
	if (g->pid)
		a[n++] = kv(e, "process.pid", int_value(e, g->pid));
	if (p->exe_name)
		a[n++] = kv(e, "process.executable.name", str_value(e, p->exe_name));
	if (p->exe_path)
		a[n++] = kv(e, "process.executable.path", str_value(e, p->exe_path));
	a[n++] = kv(e, "process.runtime.name", str_value(e, "cpython"));
	if (p->runtime_version)
		a[n++] = kv(e, "process.runtime.version",
			    str_value(e, p->runtime_version));
	if (p->container)
		a[n++] = kv(e, "container.id", str_value(e, p->container));
	if (p->pod)
		a[n++] = kv(e, "k8s.pod.uid", str_value(e, p->pod));
	for (i = 0; i < e->o->ntags && n < MAX_RES_ATTRS; i++) {
		const char *eq = strchr(e->o->tags[i], '=');
		char key[256];
		size_t j;

		if (!eq || eq == e->o->tags[i] ||
		    (size_t)(eq - e->o->tags[i]) >= sizeof(key))
			continue;
		memcpy(key, e->o->tags[i], (size_t)(eq - e->o->tags[i]));
		key[eq - e->o->tags[i]] = 0;
		/* a tag overrides what we found (service.name=checkout) */
		for (j = 0; j < n && a[j] && strcmp(a[j]->key, key); j++)
			;
		if (j < n && a[j])
			a[j]->value = str_value(e, eq + 1);
		else
			a[n++] = kv(e, key, str_value(e, eq + 1));
	}
	for (i = 0; i < (int)n; i++)
		if (!a[i])
			return NULL;
	r->attributes = a;
	r->n_attributes = n;
	return r;
}

static ValueType *value_type(struct enc *e, const char *type, const char *unit)
{
	ValueType *v = alloc(e, sizeof(*v));

	if (!v)
		return NULL;
	opentelemetry__proto__profiles__v1development__value_type__init(v);
	v->type_strindex = str(e, type);
	v->unit_strindex = str(e, unit);
	return v;
}

static Profile *profile_of(struct enc *e, struct group *g, int task)
{
	static const char *const types[] = {
		[MODE_CPU] = "samples", [MODE_WALL] = "wall", [MODE_OFF] = "off_cpu",
	};
	const struct otlp_opts *o = e->o;
	Profile *p = alloc(e, sizeof(*p));
	uint8_t *id = alloc(e, 16);
	int mode = o->mode >= MODE_CPU && o->mode <= MODE_OFF ? o->mode : MODE_CPU;

	if (!p || !id)
		return NULL;
	opentelemetry__proto__profiles__v1development__profile__init(p);
	p->sample_type = task ? value_type(e, PROFILE_TASK_TYPE, "nanoseconds") :
		value_type(e, types[mode], mode == MODE_CPU ? "count" : "nanoseconds");
	p->samples = g->of[task].samples;
	p->n_samples = g->of[task].n;
	p->time_unix_nano = o->start_ns;
	p->duration_nano = o->end_ns > o->start_ns ? o->end_ns - o->start_ns : 0;
	if (o->rate_hz) {
		p->period_type = value_type(e, "cpu", "nanoseconds");
		p->period = profile__period_ns(o->rate_hz);
	}
	if (getrandom(id, 16, 0) != 16)
		memset(id, 0, 16);
	p->profile_id.data = id;
	p->profile_id.len = 16;
	if (o->trigger) {
		p->attribute_indices = alloc(e, sizeof(int32_t));
		if (!p->attribute_indices)
			return NULL;
		p->attribute_indices[0] = attr(e, "trigger", o->trigger, 0);
		p->n_attribute_indices = 1;
	}
	return p->sample_type ? p : NULL;
}

static ResProfiles *resource_profiles(struct enc *e, struct group *g)
{
	ResProfiles *rp = alloc(e, sizeof(*rp));
	ScopeProfiles *sp = alloc(e, sizeof(*sp));
	Scope *sc = alloc(e, sizeof(*sc));
	int task;

	if (!rp || !sp || !sc)
		return NULL;
	opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
	opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
	opentelemetry__proto__common__v1__instrumentation_scope__init(sc);
	sc->name = "pysight";
	sc->version = PYSIGHT_VERSION;
	sp->scope = sc;
	sp->profiles = alloc(e, 2 * sizeof(Profile *));
	rp->scope_profiles = alloc(e, sizeof(ScopeProfiles *));
	rp->resource = resource(e, g);
	if (!sp->profiles || !rp->scope_profiles || !rp->resource)
		return NULL;
	for (task = 0; task < 2; task++) {
		if (task && !g->of[task].n)
			break;
		sp->profiles[sp->n_profiles] = profile_of(e, g, task);
		if (!sp->profiles[sp->n_profiles++])
			return NULL;
	}
	rp->scope_profiles[0] = sp;
	rp->n_scope_profiles = 1;
	return rp;
}

/* Index 0 of every table is the empty element. */
static int zeroes(struct enc *e)
{
	static Mapping mapping = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT;
	static Link link = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;
	static Link *links[1] = { &link };
	Function *fn = alloc(e, sizeof(*fn));
	Location *loc = alloc(e, sizeof(*loc));
	Stack *st = alloc(e, sizeof(*st));
	KVU *a = alloc(e, sizeof(*a));

	if (!fn || !loc || !st || !a)
		return -ENOMEM;
	opentelemetry__proto__profiles__v1development__function__init(fn);
	opentelemetry__proto__profiles__v1development__location__init(loc);
	opentelemetry__proto__profiles__v1development__stack__init(st);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
	if (room(e, (void **)&e->d.mapping_table, &e->cap_map, 0,
		 sizeof(Mapping *)))
		e->d.mapping_table[e->d.n_mapping_table++] = &mapping;
	e->d.link_table = links;
	e->d.n_link_table = 1;
	str(e, "");
	if (room(e, (void **)&e->d.function_table, &e->cap_fn, 0, sizeof(fn)))
		e->d.function_table[e->d.n_function_table++] = fn;
	if (room(e, (void **)&e->d.location_table, &e->cap_loc, 0, sizeof(loc)))
		e->d.location_table[e->d.n_location_table++] = loc;
	if (room(e, (void **)&e->d.stack_table, &e->cap_stack, 0, sizeof(st)))
		e->d.stack_table[e->d.n_stack_table++] = st;
	if (room(e, (void **)&e->d.attribute_table, &e->cap_attr, 0, sizeof(a)))
		e->d.attribute_table[e->d.n_attribute_table++] = a;
	return e->err;
}

static int pack(struct enc *e, void **buf, size_t *len)
{
	Request req = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	struct group *g, *tmp;
	size_t n = 0;

	req.dictionary = &e->d;
	req.resource_profiles = alloc(e, (HASH_COUNT(e->groups) + 1) * sizeof(ResProfiles *));
	if (!req.resource_profiles)
		return -ENOMEM;
	HASH_ITER(hh, e->groups, g, tmp) {
		req.resource_profiles[n] = resource_profiles(e, g);
		if (!req.resource_profiles[n++])
			return e->err ?: -ENOMEM;
	}
	req.n_resource_profiles = n;
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&req);
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		return -ENOMEM;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&req, *buf);
	return 0;
}

static void enc_free(struct enc *e)
{
	struct group *g, *tmp;
	struct block *b;
	int k;

	HASH_ITER(hh, e->groups, g, tmp) {
		HASH_DELETE(hh, e->groups, g);
		free(g->of[0].samples);
		free(g->of[1].samples);
	}
	HASH_CLEAR(hh, e->strs);
	HASH_CLEAR(hh, e->attrs);
	HASH_CLEAR(hh, e->funcs);
	HASH_CLEAR(hh, e->maps);
	free(e->d.string_table);
	free(e->d.mapping_table);
	free(e->d.function_table);
	free(e->d.location_table);
	free(e->d.attribute_table);
	free(e->d.stack_table);
	free(e->loc_of_frame);
	for (k = 0; k < KIND__MAX; k++)
		free(e->stack_of[k]);
	while ((b = e->arena)) {
		e->arena = b->next;
		free(b);
	}
}

int otlp__encode(struct profile *p, const struct otlp_opts *o, void **buf,
		 size_t *len)
{
	struct enc e = { .o = o, .p = p };
	const struct pentry **entries = NULL;
	size_t n = 0, i;
	int k, err;

	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&e.d);
	e.loc_of_frame = calloc(profile__nframes(p) + 1, sizeof(int32_t));
	err = e.loc_of_frame ? zeroes(&e) : -ENOMEM;
	for (k = 0; k < KIND__MAX && !err; k++) {
		e.stack_of[k] = calloc(profile__nstacks(p) + 1, sizeof(int32_t));
		if (!e.stack_of[k])
			err = -ENOMEM;
	}
	if (!err)
		err = profile__entries(p, &entries, &n);
	for (i = 0; i < n && !err; i++)
		err = add_sample(&e, entries[i]);
	free(entries);
	if (!err)
		err = e.err ?: pack(&e, buf, len);
	enc_free(&e);
	return err;
}

int otlp__status_message(const void *buf, size_t len, char *out,
			 size_t outlen)
{
	Google__Rpc__Status *st;

	st = google__rpc__status__unpack(NULL, len, buf);
	if (!st)
		return -EINVAL;
	if (!st->message || !*st->message) {
		google__rpc__status__free_unpacked(st, NULL);
		return -EINVAL;
	}
	utf8__escape(out, outlen, st->message);	/* for a log line */
	google__rpc__status__free_unpacked(st, NULL);
	return 0;
}

int otlp__partial_success(const void *buf, size_t len, int64_t *rejected,
			  char *msg, size_t msglen)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse *r;
	const Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess *ps;

	*rejected = 0;
	msg[0] = 0;
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
		NULL, len, buf);
	if (!r)
		return -EINVAL;
	ps = r->partial_success;
	if (ps) {
		*rejected = ps->rejected_profiles;
		utf8__escape(msg, msglen, ps->error_message ? ps->error_message : "");
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(
		r, NULL);
	return 0;
}
