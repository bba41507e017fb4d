/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's sender: a thread that posts the spool's exports, oldest
 * first, to an OTLP/HTTP endpoint with libcurl.  Sampling never waits
 * for it.  Transient failures (no connection, timeouts, 429, 5xx) are
 * retried with exponential backoff, or after the server's Retry-After;
 * a permanent refusal (any other 4xx) is logged once with the server's
 * message and the export dropped.
 */
#ifndef __PYSIGHT_EXPORTER_H
#define __PYSIGHT_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#define EXPORTER_MAX_HEADERS	16

struct spool;

struct exporter_opts {
	const char *url;		/* the endpoint, with its path */
	const char *headers[EXPORTER_MAX_HEADERS];	/* "Name: value" */
	int nheaders;
	const char *ca_file;		/* TLS: trust this CA, or NULL */
	double timeout_s;		/* per request */
	double max_backoff_s;		/* of our own doubling */
	double max_retry_after_s;	/* of a server's Retry-After */
	const char *content_type;
};

struct exporter_stats {
	uint64_t sent;			/* exports the server took */
	uint64_t bytes_sent;
	uint64_t retries;		/* transient failures */
	uint64_t rejected;		/* refused for good */
	uint64_t profiles_rejected;	/* in exports taken: partial success */
	int last_status;		/* HTTP status, 0: no answer */
	bool connected;			/* the last attempt got an answer */
};

struct exporter;

/* The endpoint, checked: an http or https URL with a host.  0, or
 * -EINVAL with why in err. */
int exporter__check_url(const char *url, char *err, size_t errlen);
/* url with path appended to its path (unless it ends so already), its
 * query kept where it was: 0, or -EINVAL / -ENAMETOOLONG. */
int exporter__url_with_path(const char *url, const char *path, char *out,
			    size_t outlen);
/* The headers OpenTelemetry's SDKs take from the environment,
 * OTEL_EXPORTER_OTLP_PROFILES_HEADERS or else OTEL_EXPORTER_OTLP_HEADERS
 * ("k1=v1,k2=v2", values percent-encoded), added to o's (malloc'd, as
 * the caller's own are) unless o names one already: a token need not be
 * on a command line that every user can read.  0, or -EINVAL with why
 * in err (never a value: it may be a secret). */
int exporter__env_headers(struct exporter_opts *o, char *err, size_t errlen);
/* Start the thread sending what s holds; -errno with why in err. */
int exporter__start(const struct exporter_opts *o, struct spool *s,
		    struct exporter **out, char *err, size_t errlen);
/* Something new is queued. */
void exporter__kick(struct exporter *e);
/* Stop: try for up to drain_s seconds more to send what is queued (what
 * is not sent stays in the spool for the next run), then join; last, when
 * not NULL, gets the final counts. */
void exporter__stop(struct exporter *e, double drain_s,
		    struct exporter_stats *last);
void exporter__stats(struct exporter *e, struct exporter_stats *st);

#endif /* __PYSIGHT_EXPORTER_H */
