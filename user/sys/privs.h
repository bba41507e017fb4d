/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every command that loads BPF needs of the system, checked first. */
#ifndef __PYSIGHT_PRIVS_H
#define __PYSIGHT_PRIVS_H

/* Root or the capabilities, and kernel BTF: 0, or -errno after saying
 * which is missing in one line on stderr. */
int privs__check(void);

enum privs_keep {
	PRIVS_RECORD,	/* what a recording (record, top, agent) still uses */
	PRIVS_FIND,	/* dump, finding Pythons: their maps and files */
	PRIVS_READ,	/* dump, reading their memory: nothing else */
};

/*
 * Once BPF is loaded and attached and any command is started: keep only
 * the capabilities keep says (privs.c says why each), drop the rest from
 * the effective, permitted and inheritable sets and, the first time, the
 * bounding set (that needs CAP_SETPCAP, dropped with it), and set
 * no_new_privs.  The calling thread's only: a thread started before
 * keeps what it had.  0, or -errno (nothing is dropped then).
 */
int privs__drop(enum privs_keep keep);

#endif /* __PYSIGHT_PRIVS_H */
