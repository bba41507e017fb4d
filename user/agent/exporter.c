// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One thread, one curl easy handle (so the connection is kept alive
 * between exports), the spool as the only queue.  The thread sleeps on a
 * condition variable: kicked by a new export, or woken by its backoff
 * timer, or by stop.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "exporter.h"
#include "log.h"
#include "otlp.h"
#include "spool.h"
#include "utf8.h"

#define BODY_MAX	4096	/* of an answer, kept for the log */
#define FIRST_BACKOFF	1.0

struct exporter {
	struct exporter_opts o;
	struct spool *spool;
	CURL *curl;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool kicked, stopping;
	double drain_until;		/* monotonic; while stopping */
	double backoff;			/* the next wait after a failure */
	bool said_refused;		/* a permanent error is logged once */
	bool said_partial;		/* and so is a partial success */
	bool failing;			/* an outage is on, and was logged */
	struct exporter_stats st;
};

struct body {
	char buf[BODY_MAX + 1];		/* NUL-terminated, for a text body */
	size_t len;
};

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t len = size * n, room = BODY_MAX - b->len;

	memcpy(b->buf + b->len, data, len < room ? len : room);
	b->len += len < room ? len : room;
	b->buf[b->len] = 0;
	return len;
}

int exporter__check_url(const char *url, char *err, size_t errlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int ret = 0;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) || !*host) {
		snprintf(err, errlen, "invalid OTLP URL '%s': expected "
			 "http://HOST[:PORT] or https://HOST[:PORT]", url);
		ret = -EINVAL;
	} else if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		snprintf(err, errlen, "invalid OTLP URL '%s': the scheme must "
			 "be http or https, not %s", url, scheme);
		ret = -EINVAL;
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ret;
}

int exporter__url_with_path(const char *url, const char *path, char *out,
			    size_t outlen)
{
	CURLU *u = curl_url();
	char *have = NULL, *full = NULL, joined[2048];
	size_t n, pl = strlen(path);
	int ret = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) ||
	    curl_url_get(u, CURLUPART_PATH, &have, 0))
		goto out;
	n = strlen(have);
	while (n && have[n - 1] == '/')
		n--;
	if (n >= pl && !strncmp(have + n - pl, path, pl))
		snprintf(joined, sizeof(joined), "%.*s", (int)n, have);
	else
		snprintf(joined, sizeof(joined), "%.*s%s", (int)n, have, path);
	if (curl_url_set(u, CURLUPART_PATH, joined, 0) ||
	    curl_url_get(u, CURLUPART_URL, &full, 0))
		goto out;
	ret = snprintf(out, outlen, "%s", full) >= (int)outlen ? -ENAMETOOLONG : 0;
out:
	curl_free(have);
	curl_free(full);
	curl_url_cleanup(u);
	return ret;
}

/* The server's words, in one line and escaped as a target's are: the
 * message of a google.rpc.Status (what OTLP servers answer errors with),
 * else the body as text. */
static void server_message(const struct body *b, const char *ctype,
			   char *out, size_t len)
{
	if (ctype && strstr(ctype, "protobuf") &&
	    !otlp__status_message(b->buf, b->len, out, len))
		return;
	if (!utf8__escape(out, len, b->buf)[0])
		snprintf(out, len, "(no message)");
}

/*
 * A 2xx whose body says some profiles were rejected (OTLP's partial
 * success): not to be sent again, so counted, and the server's reason
 * logged once.  A message with nothing rejected is a warning, logged
 * once too.
 */
static void partial_success(struct exporter *e, const struct body *b,
			    const char *ctype)
{
	enum log_level level;
	int64_t rejected;
	char msg[512];

	if (!b->len || !ctype || !strstr(ctype, "protobuf") ||
	    otlp__partial_success(b->buf, b->len, &rejected, msg, sizeof(msg)) ||
	    (rejected <= 0 && !msg[0]))
		return;
	if (rejected > 0) {
		pthread_mutex_lock(&e->lock);
		e->st.profiles_rejected += (uint64_t)rejected;
		pthread_mutex_unlock(&e->lock);
	}
	/* the first says so whatever -v; the rest only at -v */
	level = e->said_partial ? LOG_DEBUG : LOG_WARN;
	if (rejected <= 0)
		log__print(level, "%s took an export with a warning: %s%s",
			   e->o.url, msg, e->said_partial ? "" :
			   " (further warnings and partial rejections are not logged)");
	else
		log__print(level, "%s took an export but rejected %" PRId64
			   " of its profiles: %s%s", e->o.url, rejected,
			   msg[0] ? msg : "(no message)", e->said_partial ? "" :
			   " (further partial rejections are counted, not logged)");
	e->said_partial = true;
}

enum outcome { SENT, RETRY, REFUSED };

/* An export that will be retried: the first of an outage is said even
 * without -v, for a collector that is down or a certificate that is
 * wrong would otherwise fill the spool in silence; the rest at -v. */
static void outage(struct exporter *e, const char *why)
{
	log__print(e->failing ? LOG_DEBUG : LOG_WARN,
		   "export to %s failed, will retry: %s%s", e->o.url, why,
		   e->failing || log__on(LOG_DEBUG) ? "" :
		   " (exports wait in the spool; further failures are not logged)");
	e->failing = true;
}

/* One POST of one export. */
static enum outcome post(struct exporter *e, const void *data, size_t len,
			 double *retry_after)
{
	struct body b = { .len = 0 };
	char msg[512], what[600], *ctype = NULL;
	curl_off_t ra = -1;
	long status = 0;
	CURLcode rc;

	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, data);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
	e->errbuf[0] = 0;
	rc = curl_easy_perform(e->curl);
	*retry_after = 0;
	if (rc != CURLE_OK) {
		pthread_mutex_lock(&e->lock);
		e->st.connected = false;
		e->st.last_status = 0;
		pthread_mutex_unlock(&e->lock);
		outage(e, e->errbuf[0] ? e->errbuf : curl_easy_strerror(rc));
		return RETRY;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(e->curl, CURLINFO_CONTENT_TYPE, &ctype);
	curl_easy_getinfo(e->curl, CURLINFO_RETRY_AFTER, &ra);
	pthread_mutex_lock(&e->lock);
	e->st.connected = true;
	e->st.last_status = (int)status;
	pthread_mutex_unlock(&e->lock);
	if (status >= 200 && status < 300) {
		if (e->failing)
			pr_info("export to %s works again", e->o.url);
		e->failing = false;
		partial_success(e, &b, ctype);
		return SENT;
	}
	server_message(&b, ctype, msg, sizeof(msg));
	/*
	 * OTLP/HTTP ("Retryable Response Codes"): 429, 502, 503 and 504
	 * are retried; every other 4xx or 5xx MUST NOT be.  So a server
	 * that fails on one export for ever (a 500) drops that one rather
	 * than hold up the queue behind it.
	 */
	if (status == 429 || (status >= 502 && status <= 504)) {
		*retry_after = ra > 0 ? (double)ra : 0;
		snprintf(what, sizeof(what), "HTTP %ld: %s", status, msg);
		outage(e, what);
		return RETRY;
	}
	log__print(e->said_refused ? LOG_DEBUG : LOG_WARN,
		   "%s refused an export (HTTP %ld): %s%s", e->o.url, status, msg,
		   e->said_refused ? "" : " (further refusals are counted, not logged)");
	e->said_refused = true;
	return REFUSED;
}

static bool has_header(const struct exporter_opts *o, const char *name,
		       size_t len)
{
	int i;

	for (i = 0; i < o->nheaders; i++)
		if (!strncasecmp(o->headers[i], name, len) &&
		    o->headers[i][len] == ':')
			return true;
	return false;
}

static char *trim(char *s)
{
	char *end = s + strlen(s);

	while (*s == ' ' || *s == '\t')
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = 0;
	return s;
}

int exporter__env_headers(struct exporter_opts *o, char *err, size_t errlen)
{
	const char *var = "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", *env = getenv(var);
	char *copy, *item, *save = NULL, *eq, *name, *value, *h;
	int n = 0, ret = 0, len;

	if (!env) {
		var = "OTEL_EXPORTER_OTLP_HEADERS";
		env = getenv(var);
	}
	if (!env || !(copy = strdup(env)))
		return 0;
	for (item = strtok_r(copy, ",", &save); item && !ret;
	     item = strtok_r(NULL, ",", &save)) {
		n++;
		eq = strchr(item, '=');
		if (eq)
			*eq = 0;
		name = trim(item);
		value = eq ? curl_easy_unescape(NULL, trim(eq + 1), 0, &len) : NULL;
		if (!eq || !*name || strpbrk(name, ":\r\n") || !value ||
		    (size_t)len != strlen(value) || strpbrk(value, "\r\n")) {
			snprintf(err, errlen, "%s: its header %d is not name=value "
				 "(a percent-encoded value without line breaks)", var, n);
			ret = -EINVAL;
		} else if (!has_header(o, name, strlen(name))) {
			if (o->nheaders == EXPORTER_MAX_HEADERS) {
				snprintf(err, errlen, "%s: more than %d headers in all",
					 var, EXPORTER_MAX_HEADERS);
				ret = -EINVAL;
			} else if (asprintf(&h, "%s: %s", name, value) < 0) {
				ret = -ENOMEM;
				snprintf(err, errlen, "%s: %s", var, strerror(ENOMEM));
			} else {
				o->headers[o->nheaders++] = h;
			}
		}
		curl_free(value);
	}
	free(copy);
	return ret;
}

/* Wait until (monotonic seconds), or a kick when kickable; when
 * stopping, no longer than the drain allows. */
static void wait_until(struct exporter *e, double until, bool kickable)
{
	struct timespec ts;
	double end;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		end = e->stopping ? fmin(until, e->drain_until) : until;
		if ((kickable && e->kicked) ||
		    (e->stopping && kickable) || clock__now_s() >= end)
			break;
		ts.tv_sec = (time_t)end;
		ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	}
	if (kickable)
		e->kicked = false;
	pthread_mutex_unlock(&e->lock);
}

static bool should_stop(struct exporter *e)
{
	bool stop;

	pthread_mutex_lock(&e->lock);
	stop = e->stopping && clock__now_s() >= e->drain_until;
	pthread_mutex_unlock(&e->lock);
	return stop;
}

static void *run(void *arg)
{
	struct exporter *e = arg;
	double retry_after, wait;
	enum outcome out;
	uint64_t seq;
	size_t len;
	void *data;

	while (!should_stop(e)) {
		if (spool__peek(e->spool, &data, &len, &seq)) {
			bool stopping;

			pthread_mutex_lock(&e->lock);
			stopping = e->stopping;
			pthread_mutex_unlock(&e->lock);
			if (stopping)
				break;		/* all sent */
			wait_until(e, clock__now_s() + 3600, true);
			continue;
		}
		out = post(e, data, len, &retry_after);
		free(data);
		pthread_mutex_lock(&e->lock);
		if (out == SENT) {
			e->st.sent++;
			e->st.bytes_sent += len;
		} else if (out == REFUSED) {
			e->st.rejected++;
		} else {
			e->st.retries++;
		}
		pthread_mutex_unlock(&e->lock);
		if (out != RETRY) {
			if (out == SENT)
				spool__sent(e->spool, seq);
			else
				spool__pop(e->spool, seq);
			e->backoff = FIRST_BACKOFF;
			continue;
		}
		spool__failed(e->spool, seq);
		/* the server knows best how long it needs, within reason */
		wait = retry_after > 0 ? fmin(retry_after, e->o.max_retry_after_s)
				       : e->backoff;
		e->backoff = fmin(e->backoff * 2, e->o.max_backoff_s);
		/* a kick does not cut a backoff short: only time, or stop */
		wait_until(e, clock__now_s() + wait, false);
	}
	return NULL;
}

static int setup_curl(struct exporter *e, char *err, size_t errlen)
{
	char ct[128];
	int i;

	e->curl = curl_easy_init();
	if (!e->curl) {
		snprintf(err, errlen, "failed to start libcurl");
		return -ENOMEM;
	}
	snprintf(ct, sizeof(ct), "Content-Type: %s", e->o.content_type);
	e->headers = curl_slist_append(NULL, ct);
	for (i = 0; e->headers && i < e->o.nheaders; i++)
		e->headers = curl_slist_append(e->headers, e->o.headers[i]);
	if (!e->headers) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	curl_easy_setopt(e->curl, CURLOPT_URL, e->o.url);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(e->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, e->errbuf);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS,
			 (long)(e->o.timeout_s * 1000));
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(fmin(e->o.timeout_s, 5) * 1000));
	/* never follow a redirect: a profile goes where it was told */
	curl_easy_setopt(e->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (e->o.ca_file)
		curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->o.ca_file);
	return 0;
}

int exporter__start(const struct exporter_opts *o, struct spool *s,
		    struct exporter **out, char *err, size_t errlen)
{
	struct exporter *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	int ret;

	if (!e)
		return -ENOMEM;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		free(e);
		snprintf(err, errlen, "failed to start libcurl");
		return -ENOMEM;
	}
	e->o = *o;
	e->spool = s;
	e->backoff = FIRST_BACKOFF;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = setup_curl(e, err, errlen);
	if (!ret) {
		ret = -pthread_create(&e->thread, NULL, run, e);
		if (ret)
			snprintf(err, errlen, "failed to start the sender: %s",
				 strerror(-ret));
	}
	if (ret) {
		curl_slist_free_all(e->headers);
		curl_easy_cleanup(e->curl);
		curl_global_cleanup();
		free(e);
		return ret;
	}
	*out = e;
	return 0;
}

void exporter__kick(struct exporter *e)
{
	pthread_mutex_lock(&e->lock);
	e->kicked = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void exporter__stop(struct exporter *e, double drain_s,
		   struct exporter_stats *last)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	e->drain_until = clock__now_s() + drain_s;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->thread, NULL);
	if (last)
		*last = e->st;
	curl_slist_free_all(e->headers);
	curl_easy_cleanup(e->curl);
	curl_global_cleanup();
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	free(e);
}

void exporter__stats(struct exporter *e, struct exporter_stats *st)
{
	pthread_mutex_lock(&e->lock);
	*st = e->st;
	pthread_mutex_unlock(&e->lock);
}
