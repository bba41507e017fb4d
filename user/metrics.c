// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <stdbool.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

struct metrics {
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	char *text;
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	bool found = !strcmp(url, "/metrics");
	char *body;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO;
	pthread_mutex_lock(&m->lock);
	body = strdup(found ? (m->text ? m->text : "") : "not found: try /metrics\n");
	pthread_mutex_unlock(&m->lock);
	if (!body)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(body), body,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
				"text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, found ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, r);
	MHD_destroy_response(r);
	return ret;
}

static int parse_addr(const char *addr, struct sockaddr_in *sa)
{
	char host[64], *colon, *end;
	long port;

	if (snprintf(host, sizeof(host), "%s", addr) >= (int)sizeof(host))
		return -EINVAL;
	colon = strrchr(host, ':');
	if (!colon)
		return -EINVAL;
	*colon = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 1 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, *host ? host : "127.0.0.1", &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

int metrics__start(const char *addr, struct metrics **out, char *err,
		   size_t errlen)
{
	struct sockaddr_in sa;
	struct metrics *m;

	if (parse_addr(addr, &sa)) {
		snprintf(err, errlen, "invalid --metrics-addr '%s': expected "
			 "IPV4:PORT, such as 127.0.0.1:9465", addr);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
				ntohs(sa.sin_port), NULL, NULL, answer, m,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				MHD_OPTION_CONNECTION_LIMIT, 16u,
				MHD_OPTION_CONNECTION_TIMEOUT, 5u,
				MHD_OPTION_END);
	if (!m->d) {
		snprintf(err, errlen, "failed to serve metrics on %s: %s", addr,
			 strerror(errno ? errno : EADDRINUSE));
		pthread_mutex_destroy(&m->lock);
		free(m);
		return -EADDRINUSE;
	}
	*out = m;
	return 0;
}

void metrics__set(struct metrics *m, const char *text)
{
	char *t = strdup(text);

	if (!t)
		return;
	pthread_mutex_lock(&m->lock);
	free(m->text);
	m->text = t;
	pthread_mutex_unlock(&m->lock);
}

void metrics__stop(struct metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}
