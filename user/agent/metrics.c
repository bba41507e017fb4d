// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"

/* How long a scrape waits for the agent's loop, which looks every 50 ms
 * (POLL_MS) unless it is writing a file: past it, the last text. */
#define WAIT_S		1

struct metrics {
	struct MHD_Daemon *d;
	int fd;				/* listening; MHD's once started */
	pthread_mutex_t lock;
	pthread_cond_t fresh;
	char *text;
	unsigned long gen;		/* texts set */
	bool wanted, stopping;
};

/*
 * Making the text costs little, but each second it cost ~0.35% of a core
 * (BENCHMARKS), most of the agent's 0.5% budget, for scrapes that come
 * every 15 s or never: it is made on demand.  Called locked.
 */
static void wait_fresh(struct metrics *m)
{
	unsigned long gen = m->gen;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += WAIT_S;
	m->wanted = true;
	while (m->gen == gen && !m->stopping &&
	       pthread_cond_timedwait(&m->fresh, &m->lock, &ts) != ETIMEDOUT)
		;
}

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
	if (found)
		wait_fresh(m);
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

static int listen_on(const struct sockaddr_in *sa)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* what MHD would have set: a restart finds the port in TIME_WAIT */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(fd, 16)) {
		one = errno;
		close(fd);
		return -one;
	}
	return fd;
}

int metrics__open(const char *addr, struct metrics **out, char *err,
		  size_t errlen)
{
	pthread_condattr_t ca;
	struct sockaddr_in sa;
	struct metrics *m;
	int fd;

	if (parse_addr(addr, &sa)) {
		snprintf(err, errlen, "invalid --metrics-addr '%s': expected "
			 "IPV4:PORT, such as 127.0.0.1:9465", addr);
		return -EINVAL;
	}
	fd = listen_on(&sa);
	if (fd < 0) {
		snprintf(err, errlen, "failed to serve metrics on %s: %s", addr,
			 strerror(-fd));
		return fd;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		return -ENOMEM;
	}
	m->fd = fd;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->fresh, &ca);
	pthread_condattr_destroy(&ca);
	*out = m;
	return 0;
}

int metrics__start(struct metrics *m, char *err, size_t errlen)
{
	/* MHD owns the socket from here, failed or not (it closes it) */
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
				0, NULL, NULL, answer, m,
				MHD_OPTION_LISTEN_SOCKET, m->fd,
				MHD_OPTION_CONNECTION_LIMIT, 16u,
				MHD_OPTION_CONNECTION_TIMEOUT, 5u,
				MHD_OPTION_END);
	m->fd = -1;
	if (!m->d) {
		snprintf(err, errlen, "failed to serve metrics: %s",
			 strerror(errno ? errno : ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

bool metrics__wanted(struct metrics *m)
{
	bool wanted;

	pthread_mutex_lock(&m->lock);
	wanted = m->wanted;
	pthread_mutex_unlock(&m->lock);
	return wanted;
}

int metrics__format(const struct metrics_values *v, char *buf, size_t len)
{
	return snprintf(buf, len,
		"# TYPE pysight_samples_total counter\npysight_samples_total %" PRIu64 "\n"
		"# TYPE pysight_sample_errors_total counter\npysight_sample_errors_total %" PRIu64 "\n"
		"# TYPE pysight_ringbuf_lost_total counter\npysight_ringbuf_lost_total %" PRIu64 "\n"
		"# TYPE pysight_python_processes gauge\npysight_python_processes %u\n"
		"# TYPE pysight_exports_sent_total counter\npysight_exports_sent_total %" PRIu64 "\n"
		"# TYPE pysight_export_bytes_total counter\npysight_export_bytes_total %" PRIu64 "\n"
		"# TYPE pysight_export_retries_total counter\npysight_export_retries_total %" PRIu64 "\n"
		"# TYPE pysight_exports_refused_total counter\npysight_exports_refused_total %" PRIu64 "\n"
		"# TYPE pysight_profiles_rejected_total counter\npysight_profiles_rejected_total %" PRIu64 "\n"
		"# TYPE pysight_queue_depth gauge\npysight_queue_depth %" PRIu64 "\n"
		"# TYPE pysight_queue_bytes gauge\npysight_queue_bytes %" PRIu64 "\n"
		"# TYPE pysight_queue_dropped_total counter\npysight_queue_dropped_total %" PRIu64 "\n"
		"# TYPE pysight_snapshots_total counter\npysight_snapshots_total %" PRIu64 "\n"
		"# TYPE pysight_window_entries gauge\npysight_window_entries %zu\n"
		"# TYPE pysight_cpu_seconds_total counter\npysight_cpu_seconds_total %.3f\n"
		"# TYPE pysight_resident_bytes gauge\npysight_resident_bytes %" PRIu64 "\n"
		"# TYPE pysight_interned_objects gauge\npysight_interned_objects %u\n",
		v->samples, v->sample_errors, v->ringbuf_lost,
		v->python_processes, v->ex.sent, v->ex.bytes_sent,
		v->ex.retries, v->ex.rejected, v->ex.profiles_rejected,
		v->spool.depth, v->spool.bytes, v->spool.dropped, v->snapshots,
		v->window_entries, v->cpu_s, v->resident_bytes, v->interned);
}

/* The text served from now on; a waiting scrape gets it. */
static void set_text(struct metrics *m, const char *text)
{
	char *t = strdup(text);

	if (!t)
		return;
	pthread_mutex_lock(&m->lock);
	free(m->text);
	m->text = t;
	m->gen++;
	m->wanted = false;
	pthread_cond_broadcast(&m->fresh);
	pthread_mutex_unlock(&m->lock);
}

void metrics__update(struct metrics *m, const struct metrics_values *v)
{
	char text[METRICS_TEXT_MAX];

	metrics__format(v, text, sizeof(text));
	set_text(m, text);
}

void metrics__stop(struct metrics *m)
{
	if (!m)
		return;
	/* a scrape waiting for the loop, which is over, has the last text */
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->fresh);
	pthread_mutex_unlock(&m->lock);
	if (m->d)
		MHD_stop_daemon(m->d);
	if (m->fd >= 0)
		close(m->fd);
	pthread_cond_destroy(&m->fresh);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}
