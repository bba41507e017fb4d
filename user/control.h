/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's control socket (/run/pysight.sock, root's, mode 0660):
 * `pysight snapshot` and applications ask it for the flight recorder's
 * window.  One request line per connection, at most CONTROL_LINE_MAX:
 *   snapshot [pid=N] [cgroup=PATH] [container=ID] [format=F] [trigger=WHY]
 * answered "ok LEN\n" and LEN bytes of the profile, or "error WHY\n".
 *   trigger [pid=N] [reason=WHY]
 * (an application's "this was slow"): the agent keeps and exports the
 * window itself and answers "ok PATH\n".
 */
#ifndef __PYSIGHT_CONTROL_H
#define __PYSIGHT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CONTROL_DEFAULT_PATH	"/run/pysight.sock"
#define CONTROL_LINE_MAX	1024
#define CONTROL_REPLY_MAX	(512u << 20)

struct control_request {
	bool trigger;			/* else snapshot */
	pid_t pid;
	char cgroup[256];
	char container[80];
	char format[32];
	char reason[128];
};

/* Listen on path: -errno with why in err (another agent listening is
 * -EADDRINUSE). */
int control__listen(const char *path, char *err, size_t errlen);
/* A waiting client's request, read within a short timeout: its fd (the
 * caller answers and closes), -EAGAIN when none waits, -errno. */
int control__accept(int lfd, struct control_request *req, char *err,
		    size_t errlen);
int control__parse(const char *line, struct control_request *req,
		   char *err, size_t errlen);
/* Answer: data (len bytes) after "ok LEN", or "error msg". */
int control__reply(int fd, const void *data, size_t len, const char *msg);

/* The client: send the request line, read the answer into *data
 * (malloc'd) or the agent's error into err.  -ECONNREFUSED/-ENOENT
 * when no agent listens. */
int control__ask(const char *path, const char *line, void **data,
		 size_t *len, char *err, size_t errlen);
/* The answer's head: got bytes read into head, NUL-terminated.  0 with
 * the profile's length in *want, its first bytes from head + *body on;
 * the agent's error (-EINVAL) or -EPROTO, with why in err. */
int control__parse_reply(char *head, size_t got, size_t *want, size_t *body,
			 char *err, size_t errlen);

#endif /* __PYSIGHT_CONTROL_H */
