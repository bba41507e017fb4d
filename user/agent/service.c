// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "service.h"
#include "utf8.h"

#define ENV_MAX		(256u << 10)	/* of an environment we read */
#define CMDLINE_MAX	4096
#define ENV_KEY		"OTEL_SERVICE_NAME="

/* Up to len bytes of /proc/PID/what; the count, or -errno. */
static ssize_t read_proc(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	return fdio__read_path(path, buf, len);
}

/* A name as the process gave it, bounded, valid UTF-8, without control
 * characters: "my service é" stays as it is, a stray byte becomes '?'. */
static void clean(const char *s, size_t n, char *out, size_t outlen)
{
	n = strnlen(s, n);
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = 0;
	utf8__fix(out, true);
}

static const char *base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Is the argument of n bytes (it may run to the end of the command line,
 * with no NUL) exactly word? */
static bool is(const char *arg, size_t n, const char *word)
{
	return n == strlen(word) && !memcmp(arg, word, n);
}

/* The interpreter's options that take the next argument. */
static bool takes_arg(const char *opt, size_t n)
{
	return is(opt, n, "-W") || is(opt, n, "-X") || is(opt, n, "-Q");
}

/*
 * Every argument is bounded by len, never by its NUL: /proc cuts a long
 * command line at CMDLINE_MAX, and a process may rewrite its own, so the
 * last one may have none (a script name read past the buffer, seen by
 * fuzz_inputs).
 */
void service__from_cmdline(const char *args, size_t len, char *out,
			   size_t outlen)
{
	const char *p = args, *end = args + len, *arg, *slash;
	size_t n;
	bool first = true;

	out[0] = 0;
	while (p < end) {
		arg = p;
		n = strnlen(p, (size_t)(end - p));
		p += n + 1;
		if (first) {		/* the interpreter */
			first = false;
			continue;
		}
		if (is(arg, n, "-m") && p < end) {
			clean(p, strnlen(p, (size_t)(end - p)), out, outlen);
			return;
		}
		if (n > 2 && !memcmp(arg, "-m", 2)) {
			clean(arg + 2, n - 2, out, outlen);
			return;
		}
		if (is(arg, n, "-c") || is(arg, n, "-"))
			return;		/* no name of its own */
		if (arg[0] == '-') {
			if (takes_arg(arg, n) && p < end)
				p += strnlen(p, (size_t)(end - p)) + 1;
			continue;
		}
		/* a script: its file name without the directory and ".py" */
		slash = memrchr(arg, '/', n);
		if (slash) {
			n -= (size_t)(slash + 1 - arg);
			arg = slash + 1;
		}
		if (n > 3 && !memcmp(arg + n - 3, ".py", 3))
			n -= 3;
		clean(arg, n, out, outlen);
		return;
	}
}

bool service__from_environ(const char *env, size_t len, char *out,
			   size_t outlen)
{
	const char *p, *end = env + len;
	size_t klen = strlen(ENV_KEY), n;

	for (p = env; p < end; p += n + 1) {
		n = strnlen(p, (size_t)(end - p));
		if (n > klen && !strncmp(p, ENV_KEY, klen)) {
			clean(p + klen, n - klen, out, outlen);
			return out[0] != 0;
		}
	}
	return false;
}

/* OTEL_SERVICE_NAME from the environment the process started with. */
static bool from_env(pid_t pid, char *out, size_t outlen)
{
	char *buf = malloc(ENV_MAX);
	ssize_t len = buf ? read_proc(pid, "environ", buf, ENV_MAX) : -ENOMEM;
	bool found = len > 0 && service__from_environ(buf, (size_t)len, out, outlen);

	free(buf);
	return found;
}

unsigned long long service__stat_start_time(const char *stat)
{
	const char *p;
	int field;

	/* after the comm, which may hold anything but ends at the last ')' */
	p = strrchr(stat, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

unsigned long long service__start_time(pid_t pid)
{
	char buf[1024];
	ssize_t n = read_proc(pid, "stat", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	return service__stat_start_time(buf);
}

int service__of(pid_t pid, const char *container, struct service_info *out)
{
	char args[CMDLINE_MAX], path[64];
	ssize_t n, len;

	memset(out, 0, sizeof(*out));
	out->start_time = service__start_time(pid);
	if (!out->start_time)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, out->exe_path, sizeof(out->exe_path) - 1);
	out->exe_path[n > 0 ? n : 0] = 0;
	if (n > 10 && !strcmp(out->exe_path + n - 10, " (deleted)"))
		out->exe_path[n - 10] = 0;
	clean(base(out->exe_path), strlen(base(out->exe_path)), out->exe_name,
	      sizeof(out->exe_name));
	if (from_env(pid, out->service, sizeof(out->service)))
		return 0;
	if (container && *container) {
		clean(container, strlen(container), out->service,
		      sizeof(out->service));
		return 0;
	}
	len = read_proc(pid, "cmdline", args, sizeof(args));
	if (len > 0)
		service__from_cmdline(args, (size_t)len, out->service,
				      sizeof(out->service));
	if (!out->service[0])
		snprintf(out->service, sizeof(out->service), "%s",
			 out->exe_name[0] ? out->exe_name : "python");
	return 0;
}
