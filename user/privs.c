// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/capability.h>

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
	fprintf(stderr, "pysight: needs root, or CAP_BPF and CAP_PERFMON "
			"(and CAP_SYS_PTRACE to read other users' processes)\n");
	return -EPERM;
}

static int check_btf(void)
{
	const char *path = getenv("PYSIGHT_KERNEL_BTF");

	if (!path)
		path = "/sys/kernel/btf/vmlinux";
	if (!access(path, R_OK))
		return 0;
	fprintf(stderr, "pysight: this kernel has no BTF (%s is missing): "
			"a kernel built with CONFIG_DEBUG_INFO_BTF=y is needed\n",
		path);
	return -ENOENT;
}

int privs__check(void)
{
	return check_privileges() ?: check_btf();
}
