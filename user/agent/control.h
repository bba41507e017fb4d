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

/* Listen on path, a socket of group gid ((gid_t)-1: ours) and mode
 * 0660: -errno with why in err (another agent listening is
 * -EADDRINUSE). */
int control__listen(const char *path, gid_t gid, char *err, size_t errlen);
/*
 * The agent's side.  It never waits on a client: a client has read_ms
 * for its line, then reply_ms between the bytes of its answer it takes
 * (CONTROL_REPLY_TOTAL_MS in all), in a slot of its own; the agent's
 * loop moves them all on.  Answers held at once are bounded.
 */
#define CONTROL_CLIENTS		16
#define CONTROL_READ_MS		500
#define CONTROL_REPLY_MS	5000
#define CONTROL_REPLY_TOTAL_MS	60000
#define CONTROL_QUEUED_MAX	(128u << 20)
struct control_server;

/* Serves the listening socket lfd (non-blocking; the caller closes it). */
struct control_server *control__server(int lfd, int read_ms, int reply_ms);
void control__server_free(struct control_server *s);
/* Accepts, reads and sends what can go now, without waiting.  A client
 * whose request is whole: its id, with the request in *req, to be
 * answered by control__answer before the next call (else it is told
 * "no answer"); -EAGAIN when none.  Slots are scanned from a turning
 * start, so a caller taking a few requests a call starves none. */
int control__next(struct control_server *s, struct control_request *req);
/* Answer client id: data (len bytes, copied) after "ok LEN", or
 * "error msg" when data is NULL.  It is sent by this and later calls
 * of control__next. */
int control__answer(struct control_server *s, int id, const void *data,
		    size_t len, const char *msg);
int control__parse(const char *line, struct control_request *req,
		   char *err, size_t errlen);

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
