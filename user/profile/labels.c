// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "labels.h"

static size_t fit(int n, size_t len)
{
	if (n < 0 || !len)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}

size_t labels__frame(const struct pframe *f, char *buf, size_t len)
{
	int n;

	if (f->kind == PFRAME_KERNEL)
		n = snprintf(buf, len, "%s_[k]", f->name);
	else if (!f->file)
		n = snprintf(buf, len, "%s", f->name);
	else if (f->line > 0)
		n = snprintf(buf, len, "%s (%s:%d)", f->name, f->file, f->line);
	else
		n = snprintf(buf, len, "%s (%s)", f->name, f->file);
	return fit(n, len);
}

size_t labels__group(int key, const struct pentry *e, char *buf, size_t len)
{
	const struct pthread *t = e->thread;
	int n = -1;

	switch (key) {
	case GROUP_THREAD:
		if (t && t->tid)
			n = snprintf(buf, len, "thread %d (%s)", t->tid,
				     t->name ? t->name : "?");
		break;
	case GROUP_PROCESS:
		if (t && t->pid && t->ns_pid && t->ns_pid != t->pid)
			n = snprintf(buf, len, "process %s %d (ns %d)",
				     t->process ? t->process : "?", t->pid,
				     t->ns_pid);
		else if (t && t->pid)
			n = snprintf(buf, len, "process %s %d",
				     t->process ? t->process : "?", t->pid);
		break;
	case GROUP_CGROUP:
		if (e->cgroup && e->cgroup->path)
			n = snprintf(buf, len, "cgroup %s", e->cgroup->path);
		break;
	case GROUP_CONTAINER:
		/* by its short id, as docker ps shows it, or its name */
		if (e->cgroup && e->cgroup->container && e->cgroup->pod)
			n = snprintf(buf, len, "container %.*s pod %s",
				     container__shown(e->cgroup->container),
				     e->cgroup->container, e->cgroup->pod);
		else if (e->cgroup && e->cgroup->container)
			n = snprintf(buf, len, "container %.*s",
				     container__shown(e->cgroup->container),
				     e->cgroup->container);
		else if (e->cgroup)
			n = snprintf(buf, len, "host");
		break;
	}
	return fit(n, len);
}

static const char *const group_names[GROUP__MAX] = {
	[GROUP_PROCESS] = "process",
	[GROUP_THREAD] = "thread",
	[GROUP_CGROUP] = "cgroup",
	[GROUP_CONTAINER] = "container",
};

int labels__parse_group(const char *s, int *keys, int *n)
{
	char buf[128], *tok, *save = NULL;
	int k, i;

	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return -EINVAL;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < GROUP__MAX; k++)
			if (!strcmp(tok, group_names[k]))
				break;
		if (k == GROUP__MAX)
			return -EINVAL;
		for (i = 0; i < *n; i++)
			if (keys[i] == k)
				break;
		if (i == *n) {	/* a repeat adds nothing */
			if (*n == GROUP__MAX)
				return -EINVAL;
			keys[(*n)++] = k;
		}
	}
	return *n ? 0 : -EINVAL;
}

/* A decimal pid in [1, 2^30); -1 otherwise.  end: where it stopped. */
static int parse_pid(const char *s, char **end)
{
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, end, 10);
	if (errno || v < 1 || v >= (1L << 30))
		return -1;
	return (int)v;
}

/* "thread TID (NAME)" */
static bool parse_thread(char *s, struct parsed_labels *lab)
{
	size_t len = strlen(s);
	char *end;
	int tid;

	if (strncmp(s, "thread ", 7) || len < 11 || s[len - 1] != ')')
		return false;
	tid = parse_pid(s + 7, &end);
	if (tid < 0 || strncmp(end, " (", 2))
		return false;
	s[len - 1] = 0;
	lab->tid = tid;
	lab->thread = end + 2;
	return true;
}

/* "process NAME PID" or "process NAME PID (ns N)" */
static bool parse_process(char *s, struct parsed_labels *lab)
{
	char *sp, *end, *ns;
	int pid, nspid = 0;

	if (strncmp(s, "process ", 8))
		return false;
	ns = strstr(s, " (ns ");
	if (ns) {
		nspid = parse_pid(ns + 5, &end);
		if (nspid < 0 || strcmp(end, ")"))
			return false;
		*ns = 0;
	}
	sp = strrchr(s + 8, ' ');
	if (!sp)
		return false;
	pid = parse_pid(sp + 1, &end);
	if (pid < 0 || *end)
		return false;
	*sp = 0;
	lab->pid = pid;
	lab->ns_pid = nspid;
	lab->process = s + 8;
	return true;
}

/* "container ID", "container ID pod UID", or "host" */
static bool parse_container(char *s, struct parsed_labels *lab)
{
	char *pod;

	if (!strcmp(s, "host")) {
		lab->container = "";
		return true;
	}
	if (strncmp(s, "container ", 10) || !s[10])
		return false;
	pod = strstr(s + 10, " pod ");
	if (pod) {
		*pod = 0;
		lab->pod = pod + 5;
	}
	lab->container = s + 10;
	return true;
}

/* "name (file:line)", "name (file)", "name_[k]" or just "name" */
static void parse_frame(char *s, struct parsed_frame *f)
{
	size_t len = strlen(s);
	char *open, *colon, *end;
	long line;

	f->name = s;
	f->file = NULL;
	f->line = 0;
	f->kind = PFRAME_OTHER;
	if (s[0] == '[' && s[len - 1] == ']') {
		f->kind = PFRAME_PSEUDO;
		return;
	}
	if (len > 4 && !strcmp(s + len - 4, "_[k]")) {
		s[len - 4] = 0;
		f->kind = PFRAME_KERNEL;
		return;
	}
	if (profile__native_name(s)) {
		f->kind = PFRAME_NATIVE;
		return;
	}
	if (len < 4 || s[len - 1] != ')')
		return;
	open = strstr(s, " (");
	if (!open || open == s)
		return;
	/* the last " (" whose group runs to the end: names may hold parens */
	while (strstr(open + 2, " ("))
		open = strstr(open + 2, " (");
	s[len - 1] = 0;
	*open = 0;
	f->file = open + 2;
	f->kind = PFRAME_PYTHON;
	colon = strrchr(f->file, ':');
	if (colon && colon[1] >= '0' && colon[1] <= '9') {
		errno = 0;
		line = strtol(colon + 1, &end, 10);
		if (!errno && !*end && line > 0 && line < (1L << 30)) {
			*colon = 0;
			f->line = (int)line;
		}
	}
}

int labels__parse(char *s, bool at_root, struct parsed_frame *f,
		  struct parsed_labels *lab, int *kind)
{
	int k;

	if (at_root) {
		/* implied by the task's cause frame, which ends the line */
		if (!strcmp(s, PROFILE_TASKS_ROOT))
			return LABEL_ROOT;
		if (!lab->tid && parse_thread(s, lab))
			return LABEL_ROOT;
		if (!lab->pid && parse_process(s, lab))
			return LABEL_ROOT;
		if (!lab->cgroup && !strncmp(s, "cgroup ", 7)) {
			lab->cgroup = s + 7;
			return LABEL_ROOT;
		}
		if (!lab->container && parse_container(s, lab))
			return LABEL_ROOT;
	}
	k = profile__kind_of_frame(s);
	if (k > 0) {
		*kind = k;
		return LABEL_KIND;
	}
	parse_frame(s, f);
	return LABEL_FRAME;
}

size_t labels__thread_title(const struct pthread *t, const struct pcgroup *c,
			    char *buf, size_t len)
{
	int n, m = 0;

	if (t && (t->pid || t->tid))
		n = snprintf(buf, len, "%s %d / %s %d",
			     t->process ? t->process : "?", t->pid,
			     t->name ? t->name : "?", t->tid);
	else
		n = snprintf(buf, len, "all threads");
	if (n < 0 || (size_t)n >= len)
		return fit(n, len);
	if (c && c->container)
		m = snprintf(buf + n, len - n, " [container %s]", c->container);
	else if (c && c->path)
		m = snprintf(buf + n, len - n, " [cgroup %s]", c->path);
	return fit(n + (m > 0 ? m : 0), len);
}

/* " [container ID]" or " [cgroup PATH]" at the end of s, cut off. */
static void parse_title_cgroup(char *s, struct parsed_labels *lab)
{
	size_t len = strlen(s);
	char *open;

	if (!len || s[len - 1] != ']')
		return;
	open = strstr(s, " [container ");
	if (open && !strchr(open + 12, ' ')) {
		s[len - 1] = 0;
		lab->container = open + 12;
		*open = 0;
		return;
	}
	open = strstr(s, " [cgroup ");
	if (open) {
		s[len - 1] = 0;
		lab->cgroup = open + 9;
		*open = 0;
	}
}

/* "NAME ID" with a decimal id after the last space: the id, and the name
 * cut off; -1 when s is not like that. */
static int name_and_id(char *s, const char **name)
{
	char *sp = strrchr(s, ' '), *end;
	int id;

	if (!sp)
		return -1;
	id = parse_pid(sp + 1, &end);
	if (id < 0 || *end)
		return -1;
	*sp = 0;
	*name = s;
	return id;
}

bool labels__parse_title(char *s, struct parsed_labels *lab)
{
	char *sep;

	memset(lab, 0, sizeof(*lab));
	/* a profile of asyncio tasks (write_speedscope): the thread's */
	if (!strncmp(s, PROFILE_TASKS_ROOT " ", strlen(PROFILE_TASKS_ROOT) + 1))
		memmove(s, s + strlen(PROFILE_TASKS_ROOT) + 1,
			strlen(s) - strlen(PROFILE_TASKS_ROOT));
	parse_title_cgroup(s, lab);
	/* names may hold " / " too: the split is where both halves end in ids */
	for (sep = strstr(s, " / "); sep; sep = strstr(sep + 1, " / ")) {
		char *right = sep + 3, *sp1 = strrchr(right, ' '), *sp0;

		*sep = 0;
		sp0 = strrchr(s, ' ');
		if (sp0 && sp1 && sp1[1] >= '0' && sp1[1] <= '9' &&
		    sp0[1] >= '0' && sp0[1] <= '9') {
			lab->pid = name_and_id(s, &lab->process);
			lab->tid = name_and_id(right, &lab->thread);
			if (lab->pid > 0 && lab->tid > 0)
				return true;
		}
		*sep = ' ';
	}
	memset(lab, 0, sizeof(*lab));
	return false;
}
