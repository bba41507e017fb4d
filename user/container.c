// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Path components are matched one by one, innermost container first:
 *
 *   docker-<id>.scope            Docker, systemd driver
 *   docker/<id>                  Docker, cgroupfs driver
 *   cri-containerd-<id>.scope    containerd (Kubernetes, systemd)
 *   crio-<id>.scope              CRI-O (systemd)
 *   libpod-<id>.scope            Podman (not libpod-conmon-<id>)
 *   kubepods/<qos>/pod<uid>/<id> Kubernetes, cgroupfs driver
 *   kubepods-<qos>-pod<uid>.slice  the pod, systemd driver (uid with _)
 *
 * An id is 64 lowercase hex digits.  Anything else is not a container.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "container.h"

static bool is_id(const char *s, size_t len)
{
	size_t i;

	if (len != CONTAINER_ID_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static const struct {
	const char *prefix, *suffix, *runtime;
} scopes[] = {
	{ "docker-", ".scope", "docker" },
	{ "cri-containerd-", ".scope", "containerd" },
	{ "crio-", ".scope", "cri-o" },
	{ "libpod-", ".scope", "podman" },
};

/* "<prefix><id><suffix>": the id, or NULL. */
static const char *scope_id(const char *c, size_t len, const char **runtime)
{
	size_t i, p, s;

	for (i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		p = strlen(scopes[i].prefix);
		s = strlen(scopes[i].suffix);
		if (len == p + CONTAINER_ID_LEN + s &&
		    !strncmp(c, scopes[i].prefix, p) &&
		    !strncmp(c + len - s, scopes[i].suffix, s) &&
		    is_id(c + p, CONTAINER_ID_LEN)) {
			*runtime = scopes[i].runtime;
			return c + p;
		}
	}
	return NULL;
}

/* A pod's uid: 8-4-4-4-12 hex, with '-' or (systemd) '_'. */
static bool pod_uid(const char *s, size_t len, char *out)
{
	size_t i;

	if (len != POD_UID_LEN)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? (c != '-' && c != '_') :
			   !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		out[i] = dash ? '-' : c;
	}
	out[len] = 0;
	return true;
}

/* "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid>.slice" (systemd). */
static bool pod_component(const char *c, size_t len, char *out)
{
	const char *p;

	if (len > 3 && !strncmp(c, "pod", 3) && pod_uid(c + 3, len - 3, out))
		return true;
	if (len > 6 && !strncmp(c, "kubepods-", 9) &&
	    !strncmp(c + len - 6, ".slice", 6)) {
		p = strstr(c, "-pod");
		if (p && p < c + len && pod_uid(p + 4, c + len - 6 - (p + 4), out))
			return true;
	}
	return false;
}

bool container__parse(const char *path, struct container_id *out)
{
	const char *comp[64];
	size_t clen[64], n = 0, i;
	const char *s = path, *id = NULL, *runtime = NULL;
	bool kube = false;

	memset(out, 0, sizeof(*out));
	while (*s && n < 64) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		comp[n] = s;
		clen[n] = strcspn(s, "/");
		s += clen[n++];
	}
	for (i = 0; i < n; i++)
		if (!strncmp(comp[i], "kubepods", 8))
			kube = true;
	/* the innermost component that names a container */
	for (i = n; i-- > 0 && !id;) {
		id = scope_id(comp[i], clen[i], &runtime);
		if (!id && is_id(comp[i], clen[i]) && i > 0) {
			if (clen[i - 1] == 6 && !strncmp(comp[i - 1], "docker", 6))
				runtime = "docker";
			else if (kube)
				runtime = "kubernetes";
			else
				continue;
			id = comp[i];
		}
	}
	if (!id)
		return false;
	memcpy(out->id, id, CONTAINER_ID_LEN);
	out->runtime = runtime;
	for (i = 0; kube && i < n; i++)
		if (pod_component(comp[i], clen[i], out->pod))
			break;
	return true;
}

#define FOUND_MAX 256	/* containers remembered; 16 are listed */

struct search {
	const char *prefix;
	size_t len;
	struct cgroup_ref match;	/* the first match's outermost cgroup */
	int matches;			/* distinct container ids matching */
	char seen[FOUND_MAX][CONTAINER_ID_LEN + 1];	/* every container */
	int nseen;
};

/* Depth first: a container's first cgroup is its outermost. */
static int visit(const struct cgroup_ref *cg, void *ctx)
{
	struct search *s = ctx;
	struct container_id c;
	int i;

	if (!container__parse(cg->path, &c))
		return 0;
	for (i = 0; i < s->nseen && strcmp(s->seen[i], c.id); i++)
		;
	if (i < s->nseen)
		return 0;	/* a container met before, deeper down */
	if (s->nseen < FOUND_MAX)
		memcpy(s->seen[s->nseen++], c.id, sizeof(c.id));
	if (strncmp(c.id, s->prefix, s->len))
		return 0;
	if (!s->matches++)
		s->match = *cg;
	return 0;
}

static void list_seen(const struct search *s, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < s->nseen && i < 16 && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%.12s", i ? ", " : "",
			      s->seen[i]);
}

int container__find(const char *prefix, struct cgroup_ref *out, char *err,
		    size_t errlen)
{
	struct search s = { .prefix = prefix, .len = strlen(prefix) };
	char found[16 * 14 + 8];
	size_t i;
	int ret;

	for (i = 0; i < s.len; i++)
		if (!((prefix[i] >= '0' && prefix[i] <= '9') ||
		      (prefix[i] >= 'a' && prefix[i] <= 'f')))
			break;
	if (s.len < 12 || s.len > CONTAINER_ID_LEN || i < s.len) {
		snprintf(err, errlen, "--container %s: expected 12 to 64 "
			 "lowercase hex digits of a container id", prefix);
		return -EINVAL;
	}
	ret = cgroup__walk(visit, &s);
	if (ret == -ENOENT) {
		snprintf(err, errlen, "--container %s: this host has no cgroup "
			 "v2 hierarchy mounted", prefix);
		return ret;
	}
	list_seen(&s, found, sizeof(found));
	if (s.matches != 1) {
		snprintf(err, errlen, "--container %s: %s; containers here: %s",
			 prefix, s.matches ? "more than one container matches" :
					     "no container matches",
			 s.nseen ? found : "none");
		return s.matches ? -EEXIST : -ENOENT;
	}
	*out = s.match;
	return 0;
}
