// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "clock.h"
#include "export.h"
#include "exporter.h"
#include "hashfree.h"
#include "log.h"
#include "otlp.h"
#include "service.h"
#include "spool.h"

/* Exports a process may go without samples before it is forgotten. */
#define FORGET_AFTER	4

/* What the agent knows of a process, kept while it has samples. */
struct known {
	pid_t pid;
	struct service_info info;
	char version[16];
	uint64_t seen;				/* the export that last used it */
	UT_hash_handle hh;
};

struct export {
	struct export_opts o;
	struct known *known;
	uint64_t exports;			/* scheduled, so far */
	uint64_t made;
	uint64_t thin_seed;
};

struct export *export__new(const struct export_opts *o)
{
	struct export *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->o = *o;
	x->thin_seed = clock__wall_ns() ^ (uint64_t)getpid() << 32;
	return x;
}

static void forget(struct export *x, struct known *k)
{
	HASH_DEL(x->known, k);
	free(k);
}

void export__free(struct export *x)
{
	if (!x)
		return;
	HASH_FREE_ALL(x->known);
	free(x);
}

/* Forget processes no export has used for a while. */
static void forget_idle(struct export *x)
{
	struct known *k, *tmp;

	HASH_ITER(hh, x->known, k, tmp)
		if (k->seen + FORGET_AFTER < x->exports)
			forget(x, k);
}

/* What /proc says of a thread's process now, or what its samples said
 * of it when it is gone. */
static struct known *learn(struct export *x, const struct pthread *t,
			   const struct pcgroup *g)
{
	struct known *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->pid = t->pid;
	if (service__of(t->pid, g ? g->container : NULL, &k->info))
		snprintf(k->info.service, sizeof(k->info.service), "%s",
			 g && g->container ? g->container :
			 t->process ? t->process : "python");
	if (x->o.runtime_version)
		x->o.runtime_version(x->o.ctx, t->pid, k->version,
				     sizeof(k->version));
	HASH_ADD_INT(x->known, pid, k);
	return k;
}

/* The resource of a thread's process, kept while the same process (by
 * start time) has samples. */
static int describe_process(void *ctx, const struct pthread *t,
			    const struct pcgroup *g, struct otlp_process *out)
{
	struct export *x = ctx;
	struct known *k;

	HASH_FIND_INT(x->known, &t->pid, k);
	/* once an export, not once a sample: is the pid another process now? */
	if (k && k->seen != x->exports) {
		unsigned long long start = service__start_time(t->pid);

		if (start && start != k->info.start_time) {
			forget(x, k);
			k = NULL;
		}
	}
	if (!k && !(k = learn(x, t, g)))
		return -ENOMEM;
	k->seen = x->exports;
	memset(out, 0, sizeof(*out));
	out->service = k->info.service;
	out->exe_name = k->info.exe_name[0] ? k->info.exe_name : NULL;
	out->exe_path = k->info.exe_path[0] ? k->info.exe_path : NULL;
	out->runtime_version = k->version[0] ? k->version : NULL;
	out->container = g ? g->container : NULL;
	out->pod = g ? g->pod : NULL;
	return 0;
}

struct profile *export__window(struct export *x, struct profile *src,
			       uint64_t since, uint64_t until,
			       const struct history_filter *f)
{
	struct profile *q = profile__new(profile__unit(src));
	struct history_span span;
	struct profile_meta *m;

	if (!q || history__collect(x->o.history, since, until, f, q, &span)) {
		profile__free(q);
		return NULL;
	}
	m = profile__meta(q);
	*m = *profile__meta(src);
	m->start_unix_ns = span.first_ns ? span.first_ns : since;
	m->duration_s = ((span.last_ns ? span.last_ns : until) -
			 m->start_unix_ns) / 1e9;
	/* the rate as sampled: a slowed sampler took fewer samples, and a
	 * period of 1 / -r would make the CPU time low by as much */
	if (x->o.mode == MODE_CPU)
		m->rate_hz *= span.keep;
	return q;
}

/*
 * With a --window-rate above -r, a cpu profile is thinned back to -r
 * (each sample kept with probability r / window rate), so exports and
 * files cost what -r costs and only the window (snapshots) has the
 * detail.  Time profiles are left whole: their weights are time,
 * whatever the rate.
 */
struct profile *export__period(struct export *x, struct profile *src,
			       uint64_t since, uint64_t until)
{
	struct profile *q = export__window(x, src, since, until, NULL), *thin;

	if (!q || x->o.mode != MODE_CPU || x->o.rate <= x->o.export_rate)
		return q;
	thin = profile__thin(q, (double)x->o.export_rate / x->o.rate,
			     &x->thin_seed);
	profile__free(q);
	return thin;
}

int export__send(struct export *x, struct profile *q, uint64_t since,
		 uint64_t until, const char *trigger)
{
	struct otlp_opts oo = {
		.mode = x->o.mode, .rate_hz = profile__meta(q)->rate_hz,
		.start_ns = since, .end_ns = until, .host = x->o.host,
		.tags = x->o.tags, .ntags = x->o.ntags, .trigger = trigger,
		.process = describe_process, .ctx = x,
	};
	size_t len;
	void *buf;
	int err;

	if (!x->o.spool)
		return 0;
	err = otlp__encode(q, &oo, &buf, &len);
	if (err)
		return err;
	err = spool__push(x->o.spool, buf, len);
	free(buf);
	if (!err || err == -E2BIG)
		x->made++;
	if (err && err != -E2BIG)
		pr_err("failed to queue an export: %s", strerror(-err));
	if (x->o.exporter)
		exporter__kick(x->o.exporter);
	return 0;
}

int export__interval(struct export *x, struct profile *src, uint64_t since,
		     uint64_t until)
{
	struct profile *q = export__period(x, src, since, until);

	if (!q)
		return -ENOMEM;
	x->exports++;
	/* nothing sampled: a request with no profiles says nothing (and a
	 * collector records nothing of it) */
	if (profile__nentries(q))
		export__send(x, q, since, until, NULL);
	profile__free(q);
	forget_idle(x);
	return 0;
}

uint64_t export__made(const struct export *x)
{
	return x ? x->made : 0;
}
