/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A profile as an OTLP ExportProfilesServiceRequest (profiles
 * v1development, encoded by protobuf-c from opentelemetry-proto's own
 * descriptors).  The signal is still "development": everything that
 * knows its messages is in otlp.c, so a newer version replaces one file.
 */
#ifndef __PYSIGHT_OTLP_H
#define __PYSIGHT_OTLP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "profile.h"

/* What the agent knows of a process: its resource.  Strings may be NULL. */
struct otlp_process {
	const char *service;		/* service.name */
	const char *exe_name, *exe_path;
	const char *runtime_version;	/* "3.11.7" */
	const char *container;		/* container.id */
	const char *pod;		/* k8s.pod.uid */
};

/* Fill out for pid (the strings live until the encode returns): 0, or
 * -ENOENT when nothing is known (the thread's own names are used). */
typedef int (*otlp_process_fn)(void *ctx, const struct pthread *t,
			       const struct pcgroup *g,
			       struct otlp_process *out);

struct otlp_opts {
	int mode;			/* enum profile_mode */
	double rate_hz;			/* as sampled: the period is 1 / it */
	uint64_t start_ns, end_ns;	/* the time the profile covers */
	const char *host;		/* host.name */
	const char *const *tags;	/* "key=value": resource attributes */
	int ntags;
	const char *trigger;		/* a profile attribute, or NULL */
	otlp_process_fn process;
	void *ctx;
};

/* The request's bytes in *buf (malloc'd); 0 or -ENOMEM.  One
 * ResourceProfiles per service (and resource). */
int otlp__encode(struct profile *p, const struct otlp_opts *o, void **buf,
		 size_t *len);
/* The content type those bytes are sent with. */
#define OTLP_CONTENT_TYPE	"application/x-protobuf"
/* Where an OTLP/HTTP profiles endpoint takes them, under its base URL. */
#define OTLP_PROFILES_PATH	"/v1development/profiles"

/* The message of a google.rpc.Status (what an OTLP/HTTP server answers
 * an error with), escaped for a log line (utf8__escape): 0, or -EINVAL
 * when buf is not one. */
int otlp__status_message(const void *buf, size_t len, char *out,
			 size_t outlen);

/* What a 2xx answer (an ExportProfilesServiceResponse) says was not
 * taken: *rejected profiles, 0 when all were, and the server's message
 * escaped as above, "" when none; 0, or -EINVAL when buf is not such an
 * answer. */
int otlp__partial_success(const void *buf, size_t len, int64_t *rejected,
			  char *msg, size_t msglen);

#endif /* __PYSIGHT_OTLP_H */
