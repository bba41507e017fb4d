// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per thread, named "python3 812 / worker 815",
 * whose samples index one shared list of frames {name, file, line}.
 * Weights are sample counts (unit "none") or nanoseconds.  The off-CPU
 * cause is a frame, where the folded writer puts it; a kernel frame has
 * the file "[kernel]".  Built with json-c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "jsontext.h"
#include "labels.h"
#include "speedscope.h"
#include "writer.h"

struct ss_out {
	json_object *frames;		/* shared.frames */
	int *frame_idx;			/* by frame id; -1: not added yet */
	int kind_idx[KIND__MAX];	/* the cause frames */
	int nframes;
};

static int add_frame(struct ss_out *o, const char *name, const char *file,
		     int line)
{
	json_object *f = json_object_new_object();

	if (!f)
		return -1;
	json_object_object_add(f, "name", json_text(name));
	if (file)
		json_object_object_add(f, "file", json_text(file));
	if (line > 0)
		json_object_object_add(f, "line", json_object_new_int(line));
	if (json_object_array_add(o->frames, f)) {
		json_object_put(f);
		return -1;
	}
	return o->nframes++;
}

static int frame_index(struct ss_out *o, const struct pframe *f)
{
	int *slot = &o->frame_idx[f->id];

	if (*slot < 0)
		*slot = add_frame(o, f->name, f->kind == PFRAME_KERNEL ?
				  PFRAME_KERNEL_FILE : f->file, f->line);
	return *slot;
}

static int kind_index(struct ss_out *o, int kind)
{
	if (o->kind_idx[kind] < 0)
		o->kind_idx[kind] = add_frame(o, profile__kind_frame(kind),
					      NULL, 0);
	return o->kind_idx[kind];
}

/* The entry's stack, root first, as frame indexes. */
static json_object *sample_stack(struct ss_out *o, const struct pentry *e)
{
	int cause_at = pentry__cause_at(e), idx;
	json_object *a = json_object_new_array_ext(e->stack->n + 1);
	unsigned int i;

	for (i = 0; a && i <= e->stack->n; i++) {
		if ((int)i == cause_at &&
		    (idx = kind_index(o, e->kind)) >= 0)
			json_object_array_add(a, json_object_new_int(idx));
		if (i == e->stack->n)
			break;
		idx = frame_index(o, e->stack->frames[i]);
		if (idx < 0 ||
		    json_object_array_add(a, json_object_new_int(idx))) {
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

/* Entries of one thread, then of the next: threads in pid, tid order. */
static int by_thread(const void *pa, const void *pb)
{
	const struct pentry *a = *(const struct pentry **)pa;
	const struct pentry *b = *(const struct pentry **)pb;
	long ka = a->thread ? (long)a->thread->pid << 32 | a->thread->tid : 0;
	long kb = b->thread ? (long)b->thread->pid << 32 | b->thread->tid : 0;
	unsigned int ia = a->thread ? a->thread->id + 1 : 0;
	unsigned int ib = b->thread ? b->thread->id + 1 : 0;
	unsigned int ca = a->cgroup ? a->cgroup->num + 1 : 0;
	unsigned int cb = b->cgroup ? b->cgroup->num + 1 : 0;
	bool ta = profile__kind_is_task(a->kind);
	bool tb = profile__kind_is_task(b->kind);

	/* asyncio tasks' time after every thread's, in profiles of its own */
	if (ta != tb)
		return ta ? 1 : -1;
	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (ia != ib)
		return ia < ib ? -1 : 1;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	/* heaviest first reads best in speedscope's "left heavy" view too */
	return a->weight > b->weight ? -1 : a->weight < b->weight;
}

static bool same_profile(const struct pentry *a, const struct pentry *b)
{
	return a->thread == b->thread && a->cgroup == b->cgroup &&
	       profile__kind_is_task(a->kind) == profile__kind_is_task(b->kind);
}

/* One sampled profile of the entries [from, to). */
static json_object *thread_profile(struct ss_out *o, const struct profile *p,
				   const struct pentry **e, size_t n)
{
	json_object *prof = json_object_new_object();
	json_object *samples = json_object_new_array_ext(n);
	json_object *weights = json_object_new_array_ext(n);
	char title[LABEL_MAX];
	uint64_t total = 0;
	size_t i;

	if (!prof || !samples || !weights)
		goto fail;
	for (i = 0; i < n; i++) {
		json_object *s = sample_stack(o, e[i]);

		if (!s || json_object_array_add(samples, s) ||
		    json_object_array_add(weights,
				json_object_new_int64((int64_t)e[i]->weight)))
			goto fail;
		total += e[i]->weight;
	}
	if (profile__kind_is_task(e[0]->kind)) {
		size_t l = strlen(PROFILE_TASKS_ROOT) + 1;

		snprintf(title, sizeof(title), "%s ", PROFILE_TASKS_ROOT);
		labels__thread_title(e[0]->thread, e[0]->cgroup, title + l,
				     sizeof(title) - l);
	} else {
		labels__thread_title(e[0]->thread, e[0]->cgroup, title,
				     sizeof(title));
	}
	json_object_object_add(prof, "type", json_object_new_string("sampled"));
	json_object_object_add(prof, "name", json_text(title));
	json_object_object_add(prof, "unit", json_object_new_string(
		profile__unit(p) == UNIT_NANOSECONDS ? "nanoseconds" : "none"));
	json_object_object_add(prof, "startValue", json_object_new_int(0));
	json_object_object_add(prof, "endValue",
			       json_object_new_int64((int64_t)total));
	json_object_object_add(prof, "samples", samples);
	json_object_object_add(prof, "weights", weights);
	return prof;
fail:
	json_object_put(prof);
	json_object_put(samples);
	json_object_put(weights);
	return NULL;
}

static json_object *document(struct ss_out *o, struct profile *p,
			     const struct pentry **e, size_t n)
{
	const struct profile_meta *m = profile__meta(p);
	json_object *doc = json_object_new_object();
	json_object *shared = json_object_new_object();
	json_object *profiles = json_object_new_array();
	char name[512];
	size_t i, j;

	o->frames = json_object_new_array();
	if (!doc || !shared || !profiles || !o->frames)
		goto fail;
	json_object_object_add(doc, "$schema",
			       json_object_new_string(SPEEDSCOPE_SCHEMA));
	json_object_object_add(shared, "frames", o->frames);
	json_object_object_add(doc, "shared", shared);
	shared = NULL;
	for (i = 0; i < n; i = j) {
		json_object *prof;

		for (j = i + 1; j < n && same_profile(e[i], e[j]); j++)
			;
		prof = thread_profile(o, p, e + i, j - i);
		if (!prof || json_object_array_add(profiles, prof)) {
			json_object_put(prof);
			goto fail;
		}
	}
	json_object_object_add(doc, "profiles", profiles);
	snprintf(name, sizeof(name), "%s%s (%s)", SPEEDSCOPE_NAME,
		 m->target[0] ? m->target : SPEEDSCOPE_ALL,
		 profile__mode_name(m->mode));
	json_object_object_add(doc, "name", json_text(name));
	json_object_object_add(doc, "activeProfileIndex", json_object_new_int(0));
	json_object_object_add(doc, "exporter",
			       json_object_new_string(SPEEDSCOPE_EXPORTER));
	return doc;
fail:
	json_object_put(shared);
	json_object_put(profiles);
	json_object_put(doc);
	return NULL;
}

static int write_speedscope(struct profile *p, const struct write_opts *wo,
			    FILE *f)
{
	struct ss_out o = { .nframes = 0 };
	const struct pentry **entries;
	json_object *doc = NULL;
	size_t n, i, kept = 0;
	const char *text;
	int err, k;

	(void)wo;	/* a profile per thread is speedscope's own grouping */
	err = profile__entries(p, &entries, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		if (entries[i]->weight)
			entries[kept++] = entries[i];
	qsort(entries, kept, sizeof(*entries), by_thread);
	for (k = 0; k < KIND__MAX; k++)
		o.kind_idx[k] = -1;
	o.frame_idx = malloc((profile__nframes(p) + 1) * sizeof(int));
	if (o.frame_idx) {
		memset(o.frame_idx, 0xff,
		       (profile__nframes(p) + 1) * sizeof(int));
		doc = document(&o, p, entries, kept);
	}
	free(entries);
	free(o.frame_idx);
	if (!doc)
		return -ENOMEM;
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text)
		err = -ENOMEM;
	else if (fputs(text, f) < 0 || fputc('\n', f) < 0)
		err = -EIO;
	json_object_put(doc);
	return err;
}

const struct writer writer_speedscope = {
	.name = "speedscope",
	.exts = { "speedscope.json", "json" },
	.write = write_speedscope,
};
