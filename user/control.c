// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "fdio.h"

#define READ_TIMEOUT_MS	500	/* a client without a whole line by then is dropped */
#define REPLY_TIMEOUT_S	5

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
static int bind_0660(int fd, const struct sockaddr_un *a)
{
	mode_t old = umask(0117);
	int ret = bind(fd, (const struct sockaddr *)a, sizeof(*a));

	umask(old);
	return ret;
}

int control__listen(const char *path, char *err, size_t errlen)
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
	if (fd < 0 || bind_0660(fd, &a) || listen(fd, 16)) {
		ret = -errno;
		snprintf(err, errlen, "failed to listen on %s: %s", path,
			 strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
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
		if (*end || pid < 1 || pid > 0x3fffffff)
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

int control__accept(int lfd, struct control_request *req, char *err,
		    size_t errlen)
{
	char line[CONTROL_LINE_MAX + 1];
	long long deadline, left;
	struct pollfd p;
	size_t got = 0;
	ssize_t r;
	int fd, ret;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	p.fd = fd;
	p.events = POLLIN;
	/* one deadline for the whole line: a client dribbling a byte at a
	 * time would otherwise hold the agent's loop, and its sampling */
	deadline = now_ms() + READ_TIMEOUT_MS;
	while (got < CONTROL_LINE_MAX && !memchr(line, '\n', got)) {
		left = deadline - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		r = read(fd, line + got, CONTROL_LINE_MAX - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	line[got] = 0;
	if (!memchr(line, '\n', got)) {
		snprintf(err, errlen, "no request line");
		ret = -EINVAL;
	} else {
		ret = control__parse(line, req, err, errlen);
	}
	if (ret) {
		control__reply(fd, NULL, 0, err);
		close(fd);
		return ret;
	}
	return fd;
}

int control__reply(int fd, const void *data, size_t len, const char *msg)
{
	struct timeval tv = { REPLY_TIMEOUT_S, 0 };
	char head[600];
	int n;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (msg && !data)
		n = snprintf(head, sizeof(head), "error %.500s\n", msg);
	else
		n = snprintf(head, sizeof(head), "ok %zu\n", len);
	return fdio__write(fd, head, (size_t)n) ?: (data ? fdio__write(fd, data, len) : 0);
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
