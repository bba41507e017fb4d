/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Container ids in cgroup paths, as the runtimes write them: Docker,
 * containerd and CRI-O under kubepods (systemd and cgroupfs layouts),
 * Podman.
 */
#ifndef __PYSIGHT_CONTAINER_H
#define __PYSIGHT_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

#define CONTAINER_ID_LEN	64
#define POD_UID_LEN		36

struct container_id {
	char id[CONTAINER_ID_LEN + 1];	/* 64 hex digits, or "" */
	char pod[POD_UID_LEN + 1];	/* the pod's uid, or "" */
	const char *runtime;		/* "docker", "containerd", ... */
};

/* The container a cgroup path (relative to the v2 mount, or whole)
 * belongs to: true when it names one. */
bool container__parse(const char *path, struct container_id *out);

struct cgroup_ref;

/* --container PREFIX (12 or more hex digits): the cgroup of the one
 * container whose id starts so, its outermost if it has several.
 * -errno with a one-line reason in err, listing what was found when
 * nothing or more than one container matches. */
int container__find(const char *prefix, struct cgroup_ref *out, char *err,
		    size_t errlen);

#endif /* __PYSIGHT_CONTAINER_H */
