// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for the text and bytes that a process, a container
 * or the network writes and the agent parses: a /proc/PID/maps line, a
 * /proc/PID/cgroup file and the container id in its path, a process's
 * cmdline, environ and stat, a control socket request and the agent's
 * answer to one, and an OTLP server's answers (a google.rpc.Status, an
 * ExportProfilesServiceResponse).
 *
 * Input layout: byte 0 picks the parser (below), the rest is its input,
 * in a heap block of exactly its size: ASan catches a read one past its
 * end.  The parsers that take a C string get it NUL-terminated.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "container.h"
#include "control.h"
#include "otlp.h"
#include "process.h"
#include "procmaps.h"
#include "service.h"

enum input {
	IN_MAPS,		/* a /proc/PID/maps line */
	IN_CGROUP,		/* /proc/PID/cgroup, then its container */
	IN_CMDLINE,		/* NUL-separated arguments */
	IN_ENVIRON,		/* NUL-separated variables */
	IN_STAT,		/* /proc/PID/stat */
	IN_REQUEST,		/* a control socket request line */
	IN_REPLY,		/* the agent's answer's head */
	IN_STATUS,		/* an OTLP/HTTP error body */
	IN_PARTIAL,		/* an OTLP/HTTP 2xx body */
	IN__MAX,
};

static void parse_cgroup(const char *s, size_t len)
{
	struct container_id id;
	char path[PATH_MAX];
	FILE *f;

	f = fmemopen((void *)s, len ? len : 1, "r");
	if (!f)
		return;
	if (!cgroup__path_in(f, path, sizeof(path)))
		(void)container__parse(path, &id);
	fclose(f);
	(void)container__parse(s, &id);
}

static void parse(enum input in, char *s, size_t len)
{
	char out[SERVICE_NAME_MAX], err[256];
	struct control_request req;
	struct mapping *m;
	size_t want, body;
	int64_t rejected;

	switch (in) {
	case IN_MAPS:
		m = malloc(sizeof(*m));
		if (m)
			(void)procmaps__parse(s, m);
		free(m);
		break;
	case IN_CGROUP:
		parse_cgroup(s, len);
		break;
	case IN_CMDLINE:
		service__from_cmdline(s, len, out, sizeof(out));
		break;
	case IN_ENVIRON:
		(void)service__from_environ(s, len, out, sizeof(out));
		break;
	case IN_STAT:
		(void)service__stat_start_time(s);
		break;
	case IN_REQUEST:
		(void)control__parse(s, &req, err, sizeof(err));
		break;
	case IN_REPLY:
		(void)control__parse_reply(s, len, &want, &body, err, sizeof(err));
		break;
	case IN_STATUS:
		(void)otlp__status_message(s, len, err, sizeof(err));
		break;
	default:
		(void)otlp__partial_success(s, len, &rejected, err, sizeof(err));
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum input in;
	size_t len, n;
	bool counted;
	char *s;

	if (size < 1)
		return 0;
	in = data[0] % IN__MAX;
	len = size - 1;
	/* the byte-counted inputs end where the data does; the strings get
	 * their NUL */
	counted = in == IN_CMDLINE || in == IN_ENVIRON || in == IN_STATUS ||
		  in == IN_PARTIAL;
	n = counted ? len : len + 1;
	s = malloc(n ? n : 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, len);
	if (!counted)
		s[len] = 0;
	parse(in, s, len);
	free(s);
	return 0;
}
