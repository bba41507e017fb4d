/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Which processes are Python and wanted: discovery, -p targets, cgroups. */
#ifndef __PYSIGHT_DISCOVERY_BPF_H
#define __PYSIGHT_DISCOVERY_BPF_H

/*
 * The two states a process entry starts in, as read-only globals: on the
 * stack (144 bytes each) they would sit in pysight_on_cpu's frame, under
 * walk_frame's, and the verifier adds a bpf_loop callback's stack to its
 * caller's (6.18 kernels refuse more than 512 bytes together).
 */
const struct py_proc proc_pending = { .state = PY_PROC_PENDING };
const struct py_proc proc_ignored = { .state = PY_PROC_IGNORED };

static __always_inline int exe_key(struct task_struct *task,
				   struct py_binary_key *key)
{
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);

	struct inode *inode;

	if (!exe)
		return -1;
	inode = BPF_CORE_READ(exe, f_inode);
	key->ino = BPF_CORE_READ(inode, i_ino);
	key->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key->size = BPF_CORE_READ(inode, i_size);
	inode_mtime(inode, &key->mtime_sec, &key->mtime_nsec);
	return 0;
}

/*
 * A process of an executable already inspected needs no question to user
 * space: its facts come from the binary map, or it is known not to be
 * Python.  flags: BPF_NOEXIST when a sample races other CPUs to it,
 * BPF_ANY at exec (a new image).
 */
static __always_inline bool configure_from_binary(struct task_struct *task,
						  __u32 tgid, __u64 flags)
{
	struct py_binary_key key = {};
	struct py_proc *known, *old;

	if (exe_key(task, &key))
		return false;
	known = bpf_map_lookup_elem(&binaries, &key);
	if (known) {
		/* under BPF_NOEXIST another CPU may have got there first */
		if (!bpf_map_update_elem(&procs, &tgid, known, flags))
			emit_adopted(tgid, known);
		count(CNT_BINARY_HIT);
		return true;
	}
	if (bpf_map_lookup_elem(&not_python, &key)) {
		/* a Python process (a fork, say) exec'ing a known other
		 * program: user space forgets what it holds for the pid,
		 * no event coming at its exit */
		old = bpf_map_lookup_elem(&procs, &tgid);
		if (old && old->state != PY_PROC_IGNORED)
			emit_adopted(tgid, &proc_ignored);
		bpf_map_update_elem(&procs, &tgid, &proc_ignored, flags);
		return true;
	}
	return false;
}

/* Configure a process BPF has not seen: from the binary map when its
 * interpreter is known, else ask user space once. */
static __always_inline struct py_proc *discover(struct task_struct *task,
						__u32 tgid, __u32 tid)
{
	/* past its exit tracepoint a task still runs (and is sampled) while
	 * it tears down: an entry made now would outlive it */
	if (BPF_CORE_READ(task, flags) & PF_EXITING)
		return NULL;
	if (configure_from_binary(task, tgid, BPF_NOEXIST))
		return bpf_map_lookup_elem(&procs, &tgid);
	if (bpf_map_update_elem(&procs, &tgid, &proc_pending, BPF_NOEXIST))
		return NULL;	/* someone else got there first */
	count(CNT_NEW_PID);
	emit_proc_event(EV_NEW_PID, tgid, tid);
	return NULL;
}

/*
 * Is task in one of the --cgroup trees?  Its ancestor at the filter's
 * level must be the filter's cgroup.  For current the helper reads it;
 * another task's (the iterator's) is read with CO-RE.
 */
static __always_inline bool in_cgroups(struct task_struct *task, bool current)
{
	struct cgroup *cg = NULL;
	struct cgroup_filter *f;
	__u32 i, level = 0;
	__u64 id;

	if (!ncgroups)
		return true;
	if (!current) {
		cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
		level = BPF_CORE_READ(cg, level);
	}
	for (i = 0; i < PYSIGHT_MAX_CGROUPS && i < ncgroups; i++) {
		f = bpf_map_lookup_elem(&cgroup_filter, &i);
		if (!f)
			return false;
		if (current) {
			id = bpf_get_current_ancestor_cgroup_id(f->level);
		} else {
			if (f->level > level)
				continue;
			id = cgroup_ancestor_id(cg, f->level);
		}
		if (id == f->id)
			return true;
	}
	return false;
}

static __always_inline bool wanted(__u32 tgid)
{
	if (!tgid || tgid == self_pid)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&targets, &tgid))
		return false;
	return true;
}

/* The process of a task, when it is a Python process we sample, or (with
 * pending) one user space is still looking at. */
static __always_inline struct py_proc *python_of(struct task_struct *task,
						 __u32 *tgid, bool current,
						 bool pending)
{
	struct py_proc *proc;

	*tgid = BPF_CORE_READ(task, tgid);
	if (!wanted(*tgid) || !in_cgroups(task, current))
		return NULL;
	proc = bpf_map_lookup_elem(&procs, tgid);
	if (!proc)
		return NULL;
	if (proc->state == PY_PROC_PYTHON ||
	    (pending && proc->state == PY_PROC_PENDING))
		return proc;
	return NULL;
}

#endif /* __PYSIGHT_DISCOVERY_BPF_H */
