/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How frames and labels read as text: "name (file:line)", "thread TID
 * (NAME)", "process NAME PID (ns N)".  Every writer spells them through
 * here, and the folded reader parses them back through here.
 */
#ifndef __PYSIGHT_LABELS_H
#define __PYSIGHT_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include "profile.h"

/* The root frames --group-by adds, in the order given. */
enum group_key {
	GROUP_PROCESS = 0,
	GROUP_THREAD,
	GROUP_CGROUP,
	GROUP_CONTAINER,
	GROUP__MAX,
};

#define LABEL_MAX 1024	/* longest label written; longer ones are cut */

/* "name (file:line)", "name (file)" or "name"; a kernel frame "name_[k]"
 * (FlameGraph's mark).  Returns the length, cut to fit len. */
size_t labels__frame(const struct pframe *f, char *buf, size_t len);

/* The root frame of one --group-by key for this entry, or 0 when the
 * entry lacks the field (the caller writes no frame then). */
size_t labels__group(int key, const struct pentry *e, char *buf, size_t len);

/* Parse --group-by's value: "process,thread"; -EINVAL. */
int labels__parse_group(const char *s, int *keys, int *n);

/*
 * Read one frame's text back.  Root labels fill the thread or cgroup of
 * *lab and return LABEL_ROOT; the off-CPU pseudo-frames set *kind and
 * return LABEL_KIND; anything else fills name, file, line and kind and
 * returns LABEL_FRAME.  s is modified.
 */
struct parsed_frame {
	const char *name, *file;
	int line, kind;		/* enum pframe_kind */
};

struct parsed_labels {
	pid_t pid, ns_pid, tid;
	const char *process, *thread, *cgroup;
	const char *container, *pod;	/* "host": container "" */
};

enum { LABEL_FRAME = 0, LABEL_ROOT, LABEL_KIND };

int labels__parse(char *s, bool at_root, struct parsed_frame *f,
		  struct parsed_labels *lab, int *kind);

/* A thread's title, as speedscope lists profiles: "python3 812 / worker
 * 815", with " [container ID]" or " [cgroup PATH]" when known; "all
 * threads" when the entry has no thread. */
size_t labels__thread_title(const struct pthread *t, const struct pcgroup *c,
			    char *buf, size_t len);
/* Read a title back into lab (s is modified); false when it is not one. */
bool labels__parse_title(char *s, struct parsed_labels *lab);

#endif /* __PYSIGHT_LABELS_H */
