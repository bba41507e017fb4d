/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Container ids in cgroup paths, as the runtimes write them: Docker,
 * containerd and CRI-O under kubepods (systemd and cgroupfs layouts),
 * Podman; and the names of LXC's and systemd-nspawn's containers.
 */
#ifndef __PYSIGHT_CONTAINER_H
#define __PYSIGHT_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define CONTAINER_ID_LEN	64
#define CONTAINER_SHORT_LEN	12	/* an id as docker ps shows it */
#define CONTAINER_NAME_MAX	64	/* longer names are not kept */
#define POD_UID_LEN		36

struct container_id {
	/* 64 hex digits; or, named, the name LXC or systemd-nspawn gave
	 * it: 1 to 64 of [A-Za-z0-9._-], not "." or ".." */
	char id[CONTAINER_ID_LEN + 1];
	bool named;
	char pod[POD_UID_LEN + 1];	/* the pod's uid, or "" */
	const char *runtime;		/* "docker", "containerd", ... */
};

_Static_assert(CONTAINER_NAME_MAX <= CONTAINER_ID_LEN,
	       "a name is kept where an id is");

#define CONTAINER_HEX		"0123456789abcdef"

/* s[0..len) is a container id: 64 lowercase hex digits. */
static inline bool container__is_id(const char *s, size_t len)
{
	return len == CONTAINER_ID_LEN && strspn(s, CONTAINER_HEX) >= len;
}

/* How much of a container's id or name labels and listings show: an
 * id's first 12 digits, a name whole.  Inline: the profile readers and
 * writers, which label stacks, link without this module. */
static inline int container__shown(const char *id)
{
	size_t len = strlen(id);

	return container__is_id(id, len) ? CONTAINER_SHORT_LEN : (int)len;
}

/* The container a cgroup path (relative to the v2 mount, or whole)
 * belongs to: true when it names one. */
bool container__parse(const char *path, struct container_id *out);

struct cgroup_ref;

/* What --container takes: 12 to 64 lowercase hex digits, or a name. */
bool container__valid_arg(const char *arg);
#define CONTAINER_ARG_WANT "expected 12 to 64 lowercase hex digits of a " \
	"container id, or a container's name"

/* --container PREFIX (12 or more hex digits) or NAME: the cgroup of the
 * one container whose id starts so or whose name it is, its outermost
 * if it has several.
 * -errno with a one-line reason in err, listing what was found when
 * nothing or more than one container matches. */
int container__find(const char *prefix, struct cgroup_ref *out, char *err,
		    size_t errlen);

#endif /* __PYSIGHT_CONTAINER_H */
