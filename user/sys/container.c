// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Path components are matched one by one, innermost container first:
 *
 *   docker-<id>.scope            Docker, systemd driver
 *   docker/<id>                  Docker, cgroupfs driver
 *   cri-containerd-<id>.scope    containerd (Kubernetes, systemd)
 *   k8s.io/<id>, default/<id>    containerd's own /<namespace>/<id>
 *   crio-<id>.scope, crio-<id>   CRI-O, systemd and cgroupfs
 *   libpod-<id>.scope            Podman, systemd manager
 *   libpod-<id>                  Podman, cgroupfs (/libpod_parent/...)
 *   kubepods/<qos>/pod<uid>/<id> Kubernetes, cgroupfs driver
 *   kubepods-<qos>-pod<uid>.slice  the pod, systemd driver (uid with _)
 *   lxc.payload.<name>           LXC 4 on (Incus: <project>_<name>)
 *   lxc.payload/<name>, lxc/<name>  LXC 3.1-3.2; 3.0 and Proxmox
 *   machine-<name>.scope         systemd-nspawn, the name escaped
 *
 * An id is 64 lowercase hex digits.  libpod-conmon-, crio-conmon- and
 * lxc.monitor. hold the runtime's monitor, not the container.  Other
 * containerd namespaces than CRI's and ctr's are not guessed at: the
 * OpenTelemetry profiler asks containerd's API before it takes
 * /<ns>/<id>, and from the path alone any directory holding a 64-digit
 * one would pass.  A name comes from a path anyone who can make a
 * cgroup writes, and labels and folded lines carry it: 1 to 64 of
 * [A-Za-z0-9._-] (LXC's and machined's names), or no container.
 * Anything else is not a container.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "container.h"

static const struct {
	const char *prefix, *suffix, *runtime;
} scopes[] = {
	{ "docker-", ".scope", "docker" },
	{ "cri-containerd-", ".scope", "containerd" },
	{ "crio-", ".scope", "cri-o" },
	{ "crio-", "", "cri-o" },
	{ "libpod-", ".scope", "podman" },
	{ "libpod-", "", "podman" },
};

/* A bare id's runtime, from the component above it. */
static const struct {
	const char *parent, *runtime;
} parents[] = {
	{ "docker", "docker" },
	{ "k8s.io", "containerd" },	/* CRI's namespace */
	{ "default", "containerd" },	/* ctr's and nerdctl's */
};

static bool is(const char *c, size_t len, const char *word)
{
	return len == strlen(word) && !strncmp(c, word, len);
}

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
		    container__is_id(c + p, CONTAINER_ID_LEN)) {
			*runtime = scopes[i].runtime;
			return c + p;
		}
	}
	return NULL;
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* A container's name from s[0..len), "\xHH" decoded when escaped (as
 * systemd writes a unit's name): into out when it is one. */
static bool take_name(const char *s, size_t len, bool escaped, char *out)
{
	char name[CONTAINER_NAME_MAX + 1];
	size_t i, n = 0;
	char c;

	for (i = 0; i < len; i++, n++) {
		c = s[i];
		if (escaped && c == '\\') {
			if (len - i < 4 || s[i + 1] != 'x' || hex(s[i + 2]) < 0 ||
			    hex(s[i + 3]) < 0)
				return false;
			c = (char)(hex(s[i + 2]) << 4 | hex(s[i + 3]));
			i += 3;
		}
		if (n == CONTAINER_NAME_MAX || !name_char(c))
			return false;
		name[n] = c;
	}
	name[n] = 0;
	if (!n || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	memcpy(out, name, n + 1);
	return true;
}

/* LXC's and systemd-nspawn's containers, by the name in component c
 * (up is the one above it): the runtime, or NULL. */
static const char *named(const char *c, size_t len, const char *up,
			 size_t uplen, char *out)
{
	if (len > 12 && !strncmp(c, "lxc.payload.", 12))
		return take_name(c + 12, len - 12, false, out) ? "lxc" : NULL;
	if (is(up, uplen, "lxc.payload") || is(up, uplen, "lxc"))
		return take_name(c, len, false, out) ? "lxc" : NULL;
	/* machined's scope is libvirt's VMs' too, "qemu-<n>-<name>" */
	if (len > 14 && !strncmp(c, "machine-", 8) &&
	    !strncmp(c + len - 6, ".scope", 6) &&
	    strncmp(c + 8, "qemu\\x2d", 8) &&
	    take_name(c + 8, len - 14, true, out))
		return "systemd-nspawn";
	return NULL;
}

/* Component i names a container: its runtime, its id or name in out. */
static const char *component(const char *const *comp, const size_t *clen,
			     size_t i, bool kube, struct container_id *out)
{
	const char *up = i ? comp[i - 1] : "", *id, *runtime = NULL;
	size_t uplen = i ? clen[i - 1] : 0, j;

	id = scope_id(comp[i], clen[i], &runtime);
	if (!id && i && container__is_id(comp[i], clen[i])) {
		for (j = 0; j < sizeof(parents) / sizeof(parents[0]); j++)
			if (is(up, uplen, parents[j].parent))
				runtime = parents[j].runtime;
		if (!runtime && kube)
			runtime = "kubernetes";
		id = runtime ? comp[i] : NULL;
	}
	if (id) {
		memcpy(out->id, id, CONTAINER_ID_LEN);
		return runtime;
	}
	runtime = named(comp[i], clen[i], up, uplen, out->id);
	out->named = runtime != NULL;
	return runtime;
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
	const char *comp[64], *runtime = NULL;
	size_t clen[64], n = 0, i;
	const char *s = path;
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
	for (i = n; i-- > 0 && !runtime;)
		runtime = component(comp, clen, i, kube, out);
	if (!runtime)
		return false;
	out->runtime = runtime;
	for (i = 0; kube && i < n; i++)
		if (pod_component(comp[i], clen[i], out->pod))
			break;
	return true;
}

#define FOUND_MAX 256	/* containers remembered; 16 are listed */

struct search {
	const char *want;
	size_t len;
	bool id;			/* want is 12 or more hex digits */
	struct cgroup_ref match;	/* the first match's outermost cgroup */
	int matches;			/* distinct containers matching */
	char seen[FOUND_MAX][CONTAINER_ID_LEN + 1];	/* every container */
	int nseen;
};

/* An id by its first digits, a name whole. */
static bool wanted(const struct search *s, const struct container_id *c)
{
	if (c->named)
		return !strcmp(c->id, s->want);
	return s->id && !strncmp(c->id, s->want, s->len);
}

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
	if (!wanted(s, &c))
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
		o += snprintf(buf + o, len - o, "%s%.*s", i ? ", " : "",
			      container__shown(s->seen[i]), s->seen[i]);
}

static bool is_id_prefix(const char *s, size_t len)
{
	return strspn(s, CONTAINER_HEX) == len && len >= CONTAINER_SHORT_LEN &&
	       len <= CONTAINER_ID_LEN;
}

bool container__valid_arg(const char *arg)
{
	char name[CONTAINER_NAME_MAX + 1];
	size_t len = strlen(arg);

	return is_id_prefix(arg, len) || take_name(arg, len, false, name);
}

int container__find(const char *prefix, struct cgroup_ref *out, char *err,
		    size_t errlen)
{
	struct search s = { .want = prefix, .len = strlen(prefix) };
	char found[16 * (CONTAINER_ID_LEN + 2) + 8], name[CONTAINER_NAME_MAX + 1];
	const char *none;
	bool hex;
	int ret;

	hex = strspn(prefix, CONTAINER_HEX) == s.len;
	s.id = is_id_prefix(prefix, s.len);
	if (!s.id && !take_name(prefix, s.len, false, name)) {
		snprintf(err, errlen, "--container %s: " CONTAINER_ARG_WANT,
			 prefix);
		return -EINVAL;
	}
	ret = cgroup__walk(visit, &s);
	if (ret == -ENOENT) {
		snprintf(err, errlen, "--container %s: this host has no cgroup "
			 "v2 hierarchy mounted", prefix);
		return ret;
	}
	list_seen(&s, found, sizeof(found));
	/* 8 digits of an id are taken for a name: say what an id takes */
	none = s.id || !hex ? "no container matches" :
	       "no container matches (an id takes 12 or more of its digits)";
	if (s.matches != 1) {
		snprintf(err, errlen, "--container %s: %s; containers here: %s",
			 prefix, s.matches ? "more than one container matches" :
					     none,
			 s.nseen ? found : "none");
		return s.matches ? -EEXIST : -ENOENT;
	}
	*out = s.match;
	return 0;
}
