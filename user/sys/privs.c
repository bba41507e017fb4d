// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/capability.h>

#include "log.h"
#include "privs.h"

static int check_privileges(void)
{
	cap_flag_value_t bpf = CAP_CLEAR, perfmon = CAP_CLEAR, admin = CAP_CLEAR;
	cap_t caps;

	if (geteuid() == 0)
		return 0;
	caps = cap_get_proc();
	if (caps) {
		cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &admin);
		cap_get_flag(caps, CAP_BPF, CAP_EFFECTIVE, &bpf);
		cap_get_flag(caps, CAP_PERFMON, CAP_EFFECTIVE, &perfmon);
		cap_free(caps);
	}
	if (admin == CAP_SET || (bpf == CAP_SET && perfmon == CAP_SET))
		return 0;
	/* say which of the two this process lacks, not only what is needed */
	pr_err("needs root, or CAP_BPF and CAP_PERFMON: "
			"this process lacks %s (CAP_SYS_PTRACE is needed too "
			"to read other users' processes)",
	       bpf == CAP_SET ? "CAP_PERFMON" :
	       perfmon == CAP_SET ? "CAP_BPF" : "both");
	return -EPERM;
}

static int check_btf(void)
{
	const char *path = getenv("PYSIGHT_KERNEL_BTF");

	if (!path)
		path = "/sys/kernel/btf/vmlinux";
	if (!access(path, R_OK))
		return 0;
	pr_err("this kernel has no BTF (%s is missing): "
			"a kernel built with CONFIG_DEBUG_INFO_BTF=y is needed",
	       path);
	return -ENOENT;
}

int privs__check(void)
{
	return check_privileges() ?: check_btf();
}

/*
 * What a recording still needs after setup, and why:
 *   BPF, PERFMON      the task iterator at the end of a wall recording, and
 *                     uprobes on interpreters that start later;
 *   SYS_ADMIN         the kernel wants it for those uprobes, and to read
 *                     /proc/PID/map_files (with CHECKPOINT_RESTORE);
 *   SYS_PTRACE        process_vm_readv and /proc/PID/{root,exe,maps} of
 *                     other users' processes;
 *   DAC_READ_SEARCH, DAC_OVERRIDE
 *                     interpreter files and cgroups of any owner, and
 *                     outputs where the user points;
 *   CHOWN, FOWNER     outputs handed to sudo's user;
 *   KILL              passing a stop signal to a command that changed user.
 */
static const cap_value_t kept[] = {
	CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE,
	CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE, CAP_CHOWN,
	CAP_FOWNER, CAP_KILL,
};

static bool is_kept(const cap_value_t *keep, size_t nkeep, cap_value_t c)
{
	size_t i;

	for (i = 0; i < nkeep; i++)
		if (keep[i] == c)
			return true;
	return false;
}

static int drop_all_but(const cap_value_t *keep, size_t nkeep)
{
	cap_value_t c, last = CAP_LAST_CAP;
	cap_t caps = cap_get_proc();
	int err = 0;

	if (!caps)
		return -errno;
	if (cap_clear_flag(caps, CAP_INHERITABLE))
		err = -errno;
	for (c = 0; c <= last && !err; c++) {
		if (is_kept(keep, nkeep, c))
			continue;
		if (cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_CLEAR) ||
		    cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_CLEAR))
			err = -errno;
		/* the bounding set needs CAP_SETPCAP, still held here */
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) > 0 &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EPERM)
			err = -errno;
	}
	if (!err && cap_set_proc(caps))
		err = -errno;
	cap_free(caps);
	if (!err && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
	return err;
}

/*
 * What dump keeps, in two steps.  While it finds the Pythons (their maps,
 * executables and interpreter files, which may belong to anyone):
 *   SYS_PTRACE        as above;
 *   DAC_READ_SEARCH   an interpreter file root cannot read by its mode;
 *   CHECKPOINT_RESTORE
 *                     /proc/PID/map_files, for an interpreter deleted or
 *                     replaced since it started (not SYS_ADMIN, which
 *                     also does);
 *   BPF               before Linux 6.5 ("bpf: move unprivileged checks
 *                     into map_create() and bpf_prog_load()"), with
 *                     unprivileged BPF off, every bpf() command wants
 *                     it: map updates and the task iterator too.
 * Then, to read their stacks and objects, the most hostile bytes it
 * decodes: SYS_PTRACE and BPF only.  No uprobe is needed for one look.
 */
static const cap_value_t find_kept[] = {
	CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE, CAP_BPF,
};
static const cap_value_t read_kept[] = { CAP_SYS_PTRACE, CAP_BPF };

#define KEEP(a) a, sizeof(a) / sizeof(a[0])

int privs__drop(enum privs_keep keep)
{
	switch (keep) {
	case PRIVS_FIND:
		return drop_all_but(KEEP(find_kept));
	case PRIVS_READ:
		return drop_all_but(KEEP(read_kept));
	default:
		return drop_all_but(KEEP(kept));
	}
}
