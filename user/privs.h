/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every command that loads BPF needs of the system, checked first. */
#ifndef __PYSIGHT_PRIVS_H
#define __PYSIGHT_PRIVS_H

/* Root or the capabilities, and kernel BTF: 0, or -errno after saying
 * which is missing in one line on stderr. */
int privs__check(void);

/*
 * Once BPF is loaded and attached and any command is started: keep only
 * the capabilities a recording still uses, drop the rest from the
 * effective, permitted, inheritable and bounding sets, and set
 * no_new_privs.  0, or -errno (nothing is dropped then).
 */
int privs__drop(void);

#endif /* __PYSIGHT_PRIVS_H */
