// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "fdio.h"

static int addr_of(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	strcpy(a->sun_path, path);
	return 0;
}

/*
 * The socket is made 0660 as bind creates it: a chmod(path) after could
 * follow a link put there meanwhile.  The umask is the process's, so
 * this is called before any thread starts (the agent starts its own
 * after dropping privileges).
 */
static int bind_0660(int fd, const struct sockaddr_un *a, gid_t gid)
{
	mode_t old = umask(0117);
	int ret, oldgid = -1;

	/* the group too, as bind makes it, for the same reason: the file
	 * system gid is the calling thread's, and names the new inode's */
	if (gid != (gid_t)-1) {
		oldgid = setfsgid(gid);
		if ((gid_t)setfsgid((gid_t)-1) != gid) {
			setfsgid((gid_t)oldgid);
			umask(old);
			errno = EPERM;
			return -1;
		}
	}
	ret = bind(fd, (const struct sockaddr *)a, sizeof(*a));
	if (gid != (gid_t)-1) {
		int e = errno;

		setfsgid((gid_t)oldgid);
		errno = e;
	}
	umask(old);
	return ret;
}

int control__listen(const char *path, gid_t gid, char *err, size_t errlen)
{
	struct sockaddr_un a;
	struct stat st;
	int fd, probe, ret;

	if (addr_of(path, &a)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	/* a socket left by an agent that died may go; a live one may not */
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			return -EEXIST;
		}
		/* in a directory others write to, not ours to remove */
		if (st.st_uid != geteuid()) {
			snprintf(err, errlen, "%s is a socket of uid %u, not ours: "
				 "not removed", path, (unsigned int)st.st_uid);
			return -EPERM;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && !connect(probe, (void *)&a, sizeof(a))) {
			close(probe);
			snprintf(err, errlen, "another agent is listening on %s", path);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind_0660(fd, &a, gid) || listen(fd, 16)) {
		ret = -errno;
		if (gid != (gid_t)-1)
			snprintf(err, errlen, "failed to listen on %s in group %u: %s",
				 path, (unsigned int)gid, strerror(-ret));
		else
			snprintf(err, errlen, "failed to listen on %s: %s", path,
				 strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	/* a setgid directory gives its own group, whatever ours */
	if (gid != (gid_t)-1 && (lstat(path, &st) || st.st_gid != gid)) {
		snprintf(err, errlen, "%s was not made in group %u (a setgid "
			 "directory?): not used", path, (unsigned int)gid);
		unlink(path);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* "key=value" into the field it names. */
static int set_field(struct control_request *r, const char *kv, char *err,
		     size_t errlen)
{
	const char *v = strchr(kv, '=');
	char *end;
	long pid;

	if (!v)
		goto bad;
	v++;
#define FIELD(name, dst)						\
	if (!strncmp(kv, name "=", strlen(name) + 1)) {			\
		if (strlen(v) >= sizeof(dst))				\
			goto bad;					\
		strcpy(dst, v);						\
		return 0;						\
	}
	FIELD("cgroup", r->cgroup)
	FIELD("container", r->container)
	FIELD("format", r->format)
	FIELD("trigger", r->reason)
	FIELD("reason", r->reason)
#undef FIELD
	if (!strncmp(kv, "pid=", 4)) {
		pid = strtol(v, &end, 10);
		if (*end || pid < 1 || pid > FUTEX_TID_MASK)
			goto bad;
		r->pid = (pid_t)pid;
		return 0;
	}
bad:
	snprintf(err, errlen, "bad request field '%.40s'", kv);
	return -EINVAL;
}

int control__parse(const char *line, struct control_request *req,
		   char *err, size_t errlen)
{
	char buf[CONTROL_LINE_MAX + 1], *tok, *save;
	int ret;

	memset(req, 0, sizeof(*req));
	snprintf(buf, sizeof(buf), "%s", line);
	tok = strtok_r(buf, " \n", &save);
	if (!tok || (strcmp(tok, "snapshot") && strcmp(tok, "trigger"))) {
		snprintf(err, errlen, "expected 'snapshot' or 'trigger'");
		return -EINVAL;
	}
	req->trigger = !strcmp(tok, "trigger");
	while ((tok = strtok_r(NULL, " \n", &save)))
		if ((ret = set_field(req, tok, err, errlen)))
			return ret;
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * The server never waits on a client.  Each call moves every client on
 * by what its socket allows now: a line read, an answer sent.  A client
 * that dribbles its line or does not read its answer holds a slot until
 * its deadline, never the agent's loop, and so never its sampling.
 */
struct control_client {
	int fd;				/* -1: a free slot */
	long long deadline;		/* ms, CLOCK_MONOTONIC: for the line;
					 * for the answer, from its last progress */
	long long end;			/* for the whole answer */
	size_t got;			/* of line */
	char line[CONTROL_LINE_MAX + 1];
	bool asked;			/* handed out, its answer awaited */
	char *out;			/* the answer: head and data */
	size_t len, sent;
};

struct control_server {
	int lfd;
	int read_ms, reply_ms;
	size_t queued;			/* bytes of answers held */
	int next;			/* where a scan starts, turning */
	struct control_client c[CONTROL_CLIENTS];
};

struct control_server *control__server(int lfd, int read_ms, int reply_ms)
{
	struct control_server *s = calloc(1, sizeof(*s));
	int i;

	if (!s)
		return NULL;
	s->lfd = lfd;
	s->read_ms = read_ms;
	s->reply_ms = reply_ms;
	for (i = 0; i < CONTROL_CLIENTS; i++)
		s->c[i].fd = -1;
	return s;
}

static void drop(struct control_server *s, struct control_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->out)
		s->queued -= c->len;
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void control__server_free(struct control_server *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < CONTROL_CLIENTS; i++)
		drop(s, &s->c[i]);
	free(s);
}

/* Send what the socket takes now: the answer is done or the client gone. */
static void push(struct control_server *s, struct control_client *c)
{
	ssize_t n;

	while (c->sent < c->len) {
		n = send(c->fd, c->out + c->sent, c->len - c->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			break;
		}
		c->sent += (size_t)n;
		/* a reader that keeps taking keeps its slot, up to c->end */
		c->deadline = now_ms() + s->reply_ms;
	}
	drop(s, c);
}

static int queue(struct control_server *s, struct control_client *c,
		 const void *data, size_t len, const char *msg)
{
	char head[600];
	int n;

	/* answers held at once are bounded; one is always let through */
	if (data && s->queued && s->queued + len > CONTROL_QUEUED_MAX) {
		data = NULL;
		msg = "busy: other answers are still being read";
	}
	if (msg && !data)
		n = snprintf(head, sizeof(head), "error %.500s\n", msg);
	else
		n = snprintf(head, sizeof(head), "ok %zu\n", len);
	if (!data)
		len = 0;
	c->out = malloc((size_t)n + len);
	if (!c->out) {
		drop(s, c);
		return -ENOMEM;
	}
	memcpy(c->out, head, (size_t)n);
	if (len)
		memcpy(c->out + n, data, len);
	c->len = (size_t)n + len;
	s->queued += c->len;
	c->sent = 0;
	c->asked = false;
	c->deadline = now_ms() + s->reply_ms;
	c->end = c->deadline + CONTROL_REPLY_TOTAL_MS;
	push(s, c);
	return 0;
}

/* Read what has come; a whole line is parsed, or answered as wrong. */
static bool take(struct control_server *s, struct control_client *c,
		 struct control_request *req)
{
	char err[256];
	ssize_t r;

	while (c->got < CONTROL_LINE_MAX && !memchr(c->line, '\n', c->got)) {
		r = recv(c->fd, c->line + c->got, CONTROL_LINE_MAX - c->got,
			 MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		if (r <= 0)
			break;		/* closed before a whole line */
		c->got += (size_t)r;
	}
	c->line[c->got] = 0;
	if (!memchr(c->line, '\n', c->got)) {
		queue(s, c, NULL, 0, "no request line");
		return false;
	}
	if (control__parse(c->line, req, err, sizeof(err))) {
		queue(s, c, NULL, 0, err);
		return false;
	}
	c->asked = true;
	return true;
}

int control__next(struct control_server *s, struct control_request *req)
{
	struct control_client *c;
	bool more = true;
	long long now;
	int i, k, fd;

	for (i = 0; i < CONTROL_CLIENTS; i++) {
		c = &s->c[i];
		/* handed out and not answered: answered now, not lost */
		if (c->fd >= 0 && c->asked)
			queue(s, c, NULL, 0, "no answer");
		/* new clients while there are free slots; the rest wait in
		 * the listen backlog, where the kernel holds them */
		if (c->fd >= 0 || !more)
			continue;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			more = false;
			continue;
		}
		c->fd = fd;
		c->deadline = now_ms() + s->read_ms;
	}
	now = now_ms();
	/* from a turning start, so that no slot waits behind the others */
	for (k = 0; k < CONTROL_CLIENTS; k++) {
		i = (s->next + k) % CONTROL_CLIENTS;
		c = &s->c[i];
		if (c->fd < 0)
			continue;
		if (c->out) {
			push(s, c);
			if (c->fd >= 0 && (now >= c->deadline || now >= c->end))
				drop(s, c);
			continue;
		}
		if (take(s, c, req)) {
			s->next = (i + 1) % CONTROL_CLIENTS;
			return i;
		}
		/* one deadline for the whole line, however it dribbles */
		if (c->fd >= 0 && !c->out && now >= c->deadline)
			queue(s, c, NULL, 0, "no request line");
		if (c->fd >= 0 && c->out && c->sent < c->len && now >= c->deadline)
			drop(s, c);
	}
	return -EAGAIN;
}

int control__answer(struct control_server *s, int id, const void *data,
		    size_t len, const char *msg)
{
	if (id < 0 || id >= CONTROL_CLIENTS || s->c[id].fd < 0 || !s->c[id].asked)
		return -EINVAL;
	return queue(s, &s->c[id], data, len, msg);
}

static ssize_t read_some(int fd, char *buf, size_t len)
{
	ssize_t r;

	do
		r = read(fd, buf, len);
	while (r < 0 && errno == EINTR);
	return r;
}

int control__parse_reply(char *head, size_t got, size_t *want, size_t *body,
			 char *err, size_t errlen)
{
	char *nl = memchr(head, '\n', got), *end = NULL;

	if (!nl) {
		snprintf(err, errlen, "the agent did not answer");
		return -EPROTO;
	}
	*nl = 0;
	if (!strncmp(head, "error ", 6)) {
		snprintf(err, errlen, "%s", head + 6);
		return -EINVAL;
	}
	*want = strncmp(head, "ok ", 3) ? 0 : strtoull(head + 3, &end, 10);
	*body = (size_t)(nl + 1 - head);
	if (!end || *end || *want > CONTROL_REPLY_MAX || got - *body > *want) {
		snprintf(err, errlen, "the agent's answer makes no sense");
		return -EPROTO;
	}
	return 0;
}

int control__ask(const char *path, const char *line, void **data,
		 size_t *len, char *err, size_t errlen)
{
	size_t got = 0, want = 0, have, body = 0;
	struct sockaddr_un a;
	char head[600], *buf;
	ssize_t r;
	int fd, ret;

	if (addr_of(path, &a))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (void *)&a, sizeof(a)) ||
	    fdio__write(fd, line, strlen(line))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while (got < sizeof(head) - 1 && !memchr(head, '\n', got)) {
		r = read_some(fd, head + got, sizeof(head) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	head[got] = 0;
	ret = control__parse_reply(head, got, &want, &body, err, errlen);
	buf = ret ? NULL : malloc(want + 1);
	if (!ret && !buf) {
		snprintf(err, errlen, "the agent's answer makes no sense");
		ret = -EPROTO;
	}
	if (ret) {
		close(fd);
		return ret;
	}
	have = got - body;
	memcpy(buf, head + body, have);
	while (have < want && (r = read_some(fd, buf + have, want - have)) > 0)
		have += (size_t)r;
	close(fd);
	if (have != want) {
		free(buf);
		snprintf(err, errlen, "the agent's answer was cut short");
		return -EPROTO;
	}
	buf[want] = 0;
	*data = buf;
	*len = want;
	return 0;
}
