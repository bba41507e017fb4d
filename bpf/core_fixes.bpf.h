/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel struct drift, in one place, read with CO-RE so one object loads
 * on every kernel pysight supports.
 */
#ifndef __PYSIGHT_CORE_FIXES_BPF_H
#define __PYSIGHT_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * An inode's mtime: struct timespec64 i_mtime before 6.7, __i_mtime from
 * 6.7 ("fs: rename inode i_atime and i_mtime fields"), and the integers
 * i_mtime_sec/i_mtime_nsec from 6.11 ("fs: switch timespec64 fields in
 * inode to discrete integers").
 */
struct inode___pre67 {
	struct timespec64 i_mtime;
} __attribute__((preserve_access_index));

struct inode___pre611 {
	struct timespec64 __i_mtime;
} __attribute__((preserve_access_index));

static __always_inline void inode_mtime(struct inode *inode, __s64 *sec,
					__u32 *nsec)
{
	struct inode___pre611 *mid = (void *)inode;
	struct inode___pre67 *old = (void *)inode;

	if (bpf_core_field_exists(inode->i_mtime_sec)) {
		*sec = BPF_CORE_READ(inode, i_mtime_sec);
		*nsec = BPF_CORE_READ(inode, i_mtime_nsec);
	} else if (bpf_core_field_exists(mid->__i_mtime)) {
		*sec = BPF_CORE_READ(mid, __i_mtime.tv_sec);
		*nsec = BPF_CORE_READ(mid, __i_mtime.tv_nsec);
	} else {
		*sec = BPF_CORE_READ(old, i_mtime.tv_sec);
		*nsec = BPF_CORE_READ(old, i_mtime.tv_nsec);
	}
}

/*
 * The id of a cgroup's ancestor at a level, walking up its parents:
 * cgroup->ancestors[] only exists from 6.1 ("cgroup: Replace
 * cgroup->ancestor_ids[] with ->ancestors[]"), while a cgroup starts
 * with its css, whose parent is its parent's css, in every kernel.
 */
#define CGROUP_MAX_DEPTH	32

static __always_inline __u64 cgroup_ancestor_id(struct cgroup *cg, __u32 level)
{
	__u32 at = BPF_CORE_READ(cg, level), i;

	for (i = 0; i < CGROUP_MAX_DEPTH && at > level && cg; i++, at--)
		cg = (struct cgroup *)BPF_CORE_READ(cg, self.parent);
	return cg && at == level ? BPF_CORE_READ(cg, kn, id) : 0;
}

#endif /* __PYSIGHT_CORE_FIXES_BPF_H */
