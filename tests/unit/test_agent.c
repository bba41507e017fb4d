// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's parts that need no BPF: the OTLP request read back by
 * protobuf-c (tables, stacks leaf first with the cause, values, attributes,
 * one resource per service), the spool (order, bound, what a restart
 * finds, a directory others can write refused), the history's slices and
 * filters, service names from command lines, control requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control.h"
#include "export.h"
#include "exporter.h"
#include "fdio.h"
#include "history.h"
#include "metrics.h"
#include "otlp.h"
#include "retention.h"
#include "service.h"
#include "spool.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ScopeProfiles;

static char tmpdir[] = "/tmp/pysight-agent-XXXXXX";

/* Two processes of one service (pids 10 and 11), one of another (20). */
static struct profile *two_services(void)
{
	struct profile *p = profile__new(UNIT_NANOSECONDS);
	const struct pthread *a = profile__thread(p, 10, 0, 10, "python3", "MainThread");
	const struct pthread *b = profile__thread(p, 11, 0, 12, "python3", "worker");
	const struct pthread *c = profile__thread(p, 20, 0, 20, "python3", "MainThread");
	const struct pframe *f[4];

	f[0] = profile__frame(p, "<module>", "/srv/app.py", 40, 1, PFRAME_PYTHON);
	f[1] = profile__frame(p, "handle", "/srv/app.py", 22, 20, PFRAME_PYTHON);
	f[2] = profile__frame(p, "do_sys_poll", NULL, 0, 0, PFRAME_KERNEL);
	f[3] = profile__frame(p, "crunch", "/srv/batch.py", 9, 7, PFRAME_PYTHON);
	CHECK(!profile__add(p, profile__stack(p, f, 2), a, NULL, KIND_CPU, 3, 3000), "add");
	CHECK(!profile__add(p, profile__stack(p, f, 3), b, NULL, KIND_IO, 1, 5000), "add");
	CHECK(!profile__add(p, profile__stack(p, (const struct pframe *[]){ f[0], f[3] }, 2),
			    c, NULL, KIND_CPU, 2, 2000), "add");
	return p;
}

static int describe(void *ctx, const struct pthread *t, const struct pcgroup *g,
		    struct otlp_process *out)
{
	(void)ctx;
	(void)g;
	memset(out, 0, sizeof(*out));
	out->service = t->pid < 20 ? "web" : "batch";
	out->exe_name = "python3.11";
	out->runtime_version = "3.11";
	return 0;
}

static const char *attr_str(Request *r, const KeyValue *const *kv, size_t n,
			    const char *key)
{
	size_t i;

	(void)r;
	for (i = 0; i < n; i++)
		if (!strcmp(kv[i]->key, key))
			return kv[i]->value->value_case ==
			       OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE ?
			       kv[i]->value->string_value : "(int)";
	return NULL;
}

/* The function names of a sample's stack, leaf first, joined by ';'. */
static void stack_text(const Dict *d, const Sample *s, char *buf, size_t len)
{
	const Opentelemetry__Proto__Profiles__V1development__Stack *st;
	size_t i, o = 0;

	buf[0] = 0;
	CHECK(s->stack_index > 0 && (size_t)s->stack_index < d->n_stack_table,
	      "stack index %d", s->stack_index);
	if (s->stack_index <= 0 || (size_t)s->stack_index >= d->n_stack_table)
		return;
	st = d->stack_table[s->stack_index];
	for (i = 0; i < st->n_location_indices; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
			d->location_table[st->location_indices[i]];
		const Opentelemetry__Proto__Profiles__V1development__Function *fn =
			d->function_table[l->lines[0]->function_index];

		o += (size_t)snprintf(buf + o, len - o, "%s%s:%lld", i ? ";" : "",
				      d->string_table[fn->name_strindex],
				      (long long)l->lines[0]->line);
	}
}

static int64_t sample_attr_int(const Dict *d, const Sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n_attribute_indices; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *kv =
			d->attribute_table[s->attribute_indices[i]];

		if (!strcmp(d->string_table[kv->key_strindex], key))
			return kv->value->int_value;
	}
	return -1;
}

static const char *sample_attr_str(const Dict *d, const Sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n_attribute_indices; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *kv =
			d->attribute_table[s->attribute_indices[i]];

		if (!strcmp(d->string_table[kv->key_strindex], key))
			return kv->value->string_value;
	}
	return NULL;
}

/* p encoded as OTLP and read back by protobuf-c; NULL (said) when not.
 * *buf: the encoding, for the caller to free with the request. */
static Request *encode_decode(struct profile *p, const struct otlp_opts *o,
			      void **buf)
{
	Request *r = NULL;
	size_t len;

	CHECK(!otlp__encode(p, o, buf, &len), "encode");
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(NULL, len, *buf);
	CHECK(r, "protobuf-c reads it back");
	return r;
}

static void test_otlp(void)
{
	const char *tags[] = { "deployment.environment=prod", "bad" };
	struct otlp_opts o = {
		.mode = MODE_WALL, .rate_hz = 100, .start_ns = 1000, .end_ns = 16000,
		.host = "box", .tags = tags, .ntags = 2, .trigger = "slow request",
		.process = describe,
	};
	struct profile *p = two_services();
	int64_t total = 0;
	size_t i, j;
	void *buf;
	Request *r;
	Dict *d;
	int saw_io = 0;

	r = encode_decode(p, &o, &buf);
	if (!r)
		return;
	d = r->dictionary;
	CHECK(d && d->n_string_table && !strcmp(d->string_table[0], ""), "string 0 is empty");
	CHECK(d->n_function_table > 1 && d->n_location_table > 1 &&
	      d->n_stack_table > 1 && d->n_attribute_table > 1 &&
	      d->n_mapping_table == 1, "tables keep index 0 for the empty element");
	CHECK(r->n_resource_profiles == 2, "one ResourceProfiles per service: %zu",
	      r->n_resource_profiles);
	for (i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Resource__V1__Resource *res = r->resource_profiles[i]->resource;
		const char *svc = attr_str(r, (const KeyValue *const *)res->attributes,
					   res->n_attributes, "service.name");
		const char *pid = attr_str(r, (const KeyValue *const *)res->attributes,
					   res->n_attributes, "process.pid");
		Profile *pr = r->resource_profiles[i]->scope_profiles[0]->profiles[0];

		CHECK(svc && (!strcmp(svc, "web") || !strcmp(svc, "batch")), "service %s", svc);
		/* two processes of "web": the pid is the samples' to say */
		CHECK(!strcmp(svc, "web") ? !pid : pid != NULL, "process.pid of %s", svc);
		CHECK(!strcmp(attr_str(r, (const KeyValue *const *)res->attributes,
				       res->n_attributes, "host.name"), "box"), "host");
		CHECK(!strcmp(attr_str(r, (const KeyValue *const *)res->attributes,
				       res->n_attributes, "deployment.environment"), "prod"), "tag");
		CHECK(!strcmp(attr_str(r, (const KeyValue *const *)res->attributes,
				       res->n_attributes, "process.runtime.name"), "cpython"), "runtime");
		CHECK(pr->time_unix_nano == 1000 && pr->duration_nano == 15000, "time range");
		CHECK(!strcmp(d->string_table[pr->sample_type->type_strindex], "wall") &&
		      !strcmp(d->string_table[pr->sample_type->unit_strindex], "nanoseconds"),
		      "sample type");
		CHECK(pr->period == 10000000, "period %lld", (long long)pr->period);
		CHECK(pr->profile_id.len == 16, "profile id");
		CHECK(pr->n_attribute_indices == 1 &&
		      !strcmp(d->attribute_table[pr->attribute_indices[0]]->value->string_value,
			      "slow request"), "trigger");
		CHECK(pr->n_samples == (!strcmp(svc, "web") ? 2u : 1u), "samples of %s", svc);
		for (j = 0; j < pr->n_samples; j++) {
			const Sample *s = pr->samples[j];
			char text[512];

			total += s->values[0];
			stack_text(d, s, text, sizeof(text));
			CHECK(sample_attr_int(d, s, "process.pid") > 0, "pid attribute");
			CHECK(sample_attr_int(d, s, "thread.id") > 0, "tid attribute");
			CHECK(sample_attr_str(d, s, "thread.name"), "thread name");
			if (s->values[0] == 5000) {
				saw_io = 1;
				CHECK(!strcmp(text, "do_sys_poll:0;[off-cpu: io]:0;handle:22;<module>:40"),
				      "leaf first, the cause under Python: %s", text);
				CHECK(!strcmp(sample_attr_str(d, s, "pysight.off_cpu.cause"), "io"),
				      "cause attribute");
			}
			if (s->values[0] == 2000)
				CHECK(!strcmp(text, "crunch:9;<module>:40"), "%s", text);
		}
	}
	CHECK(saw_io, "the io sample");
	CHECK(total == (int64_t)profile__total(p), "values sum to the total");
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(r, NULL);
	free(buf);
	profile__free(p);
}

/* asyncio tasks' time: a second profile of the resource, task_wall, its
 * samples with the await cause; the threads' profile without them. */
static void test_otlp_tasks(void)
{
	struct otlp_opts o = { .mode = MODE_WALL, .rate_hz = 100, .start_ns = 1,
			       .end_ns = 2, .process = describe };
	struct profile *p = two_services();
	const struct pthread *t = profile__thread(p, 20, 0, 20, "python3",
						  "MainThread");
	const struct pframe *f[2] = {
		profile__frame(p, "[task main]", NULL, 0, 0, PFRAME_PSEUDO),
		profile__frame(p, "serve", "/srv/batch.py", 30, 28, PFRAME_PYTHON),
	};
	const ScopeProfiles *sp = NULL;
	size_t i;
	void *buf;
	Request *r;
	Dict *d;

	CHECK(!profile__add(p, profile__stack(p, f, 2), t, NULL,
			    KIND_AWAIT_SLEEP, 1, 7000), "add");
	r = encode_decode(p, &o, &buf);
	if (!r)
		return;
	d = r->dictionary;
	for (i = 0; i < r->n_resource_profiles; i++)
		if (r->resource_profiles[i]->scope_profiles[0]->n_profiles == 2)
			sp = r->resource_profiles[i]->scope_profiles[0];
	CHECK(sp, "the batch resource has two profiles");
	if (sp) {
		const Profile *th = sp->profiles[0], *tk = sp->profiles[1];
		char text[256];

		CHECK(!strcmp(d->string_table[th->sample_type->type_strindex], "wall") &&
		      th->n_samples == 1 && th->samples[0]->values[0] == 2000,
		      "the threads' profile keeps thread time alone");
		CHECK(!strcmp(d->string_table[tk->sample_type->type_strindex],
			      PROFILE_TASK_TYPE) && tk->n_samples == 1 &&
		      tk->samples[0]->values[0] == 7000, "the tasks' profile");
		if (tk->n_samples == 1) {
			stack_text(d, tk->samples[0], text, sizeof(text));
			CHECK(!strcmp(text, "[await: sleep]:0;serve:30;[task main]:0"),
			      "%s", text);
			CHECK(!strcmp(sample_attr_str(d, tk->samples[0],
						      "pysight.asyncio.await"),
				      "await sleep"), "await attribute");
		}
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(r, NULL);
	free(buf);
	profile__free(p);
}

static void test_status(void)
{
	/* google.rpc.Status{code: 3, message: "bad profile"} */
	static const unsigned char st[] = { 0x08, 0x03, 0x12, 0x0b, 'b', 'a', 'd', ' ',
					    'p', 'r', 'o', 'f', 'i', 'l', 'e' };
	char msg[64];

	CHECK(!otlp__status_message(st, sizeof(st), msg, sizeof(msg)) &&
	      !strcmp(msg, "bad profile"), "status message");
	CHECK(otlp__status_message("\xff\xff\xff", 3, msg, sizeof(msg)), "garbage");
}

static void test_partial_success(void)
{
	/* ExportProfilesServiceResponse{partial_success{rejected_profiles: 2,
	 * error_message: "dup\n"}} */
	static const unsigned char r[] = { 0x0a, 0x08, 0x08, 0x02, 0x12, 0x04, 'd', 'u', 'p', '\n' };
	int64_t rejected = -1;
	char msg[64];

	CHECK(!otlp__partial_success(r, sizeof(r), &rejected, msg, sizeof(msg)) &&
	      rejected == 2 && !strcmp(msg, "dup\\n"), "partial: %lld '%s'", (long long)rejected, msg);
	CHECK(!otlp__partial_success("", 0, &rejected, msg, sizeof(msg)) && rejected == 0 &&
	      !msg[0], "an empty answer takes everything");
	CHECK(otlp__partial_success("\xff\xff\xff", 3, &rejected, msg, sizeof(msg)), "garbage");
}

static int spool_files(const char *dir)
{
	char cmd[256];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

static void test_spool(void)
{
	char dir[128], err[256], junk[160];
	struct spool_stats st;
	struct spool *s = NULL;
	uint64_t seq, first;
	size_t len;
	void *data;
	int fd;

	snprintf(dir, sizeof(dir), "%s/spool", tmpdir);
	CHECK(!spool__open(dir, 100, &s, err, sizeof(err)), "open: %s", err);
	CHECK(spool__peek(s, &data, &len, &seq) == -ENOENT, "empty");
	CHECK(!spool__push(s, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40), "push a");
	CHECK(!spool__push(s, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 40), "push b");
	CHECK(!spool__push(s, "cccccccccccccccccccc", 20), "push c");
	/* 100 bytes hold all three; a fourth drops the oldest */
	CHECK(!spool__push(s, "dddddddddddddddddddd", 20), "push d");
	spool__stats(s, &st);
	CHECK(st.depth == 3 && st.dropped == 1 && st.bytes == 80, "bound: depth %llu dropped %llu bytes %llu",
	      (unsigned long long)st.depth, (unsigned long long)st.dropped,
	      (unsigned long long)st.bytes);
	CHECK(spool__push(s, junk, 101) == -E2BIG, "too big alone");
	CHECK(!spool__peek(s, &data, &len, &first) && len == 40 &&
	      ((char *)data)[0] == 'b', "oldest first");
	free(data);
	spool__pop(s, first);
	spool__free(s);
	/* a restart finds the rest, in order; a temporary file goes */
	snprintf(junk, sizeof(junk), "%s/.tmp-00000000000000000009.otlp", dir);
	fd = open(junk, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0 && write(fd, "half", 4) == 4, "plant a half-written file");
	close(fd);
	CHECK(!spool__open(dir, 100, &s, err, sizeof(err)), "reopen: %s", err);
	CHECK(!spool__peek(s, &data, &len, &seq) && seq > first &&
	      ((char *)data)[0] == 'c', "what a restart finds comes first");
	free(data);
	spool__pop(s, seq);
	CHECK(!spool__peek(s, &data, &len, &seq) && ((char *)data)[0] == 'd', "then the next");
	free(data);
	spool__pop(s, seq);
	CHECK(spool__peek(s, &data, &len, &seq) == -ENOENT, "drained");
	CHECK(!spool__push(s, "eeee", 4), "push after a restart");
	CHECK(!spool__peek(s, &data, &len, &seq) && seq > first + 2, "numbers go on");
	free(data);
	spool__free(s);
	CHECK(spool_files(dir) == 1, "no temporary files left: %d", spool_files(dir));
	chmod(dir, 0777);
	CHECK(spool__open(dir, 100, &s, err, sizeof(err)) == -EPERM &&
	      strstr(err, "writable"), "a directory others may write is refused: %s", err);
}

/* The oldest, dropped for room while the sender had it out, and then
 * taken by the server: it was not lost, so it is not counted. */
static void test_spool_sent_while_dropped(void)
{
	char dir[128], err[256];
	struct spool_stats st;
	struct spool *s = NULL;
	uint64_t seq, next;
	size_t len;
	void *data;

	snprintf(dir, sizeof(dir), "%s/spool-sent", tmpdir);
	CHECK(!spool__open(dir, 100, &s, err, sizeof(err)), "open: %s", err);
	CHECK(!spool__push(s, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 50), "push a");
	CHECK(!spool__push(s, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 50), "push b");
	CHECK(!spool__peek(s, &data, &len, &seq) && ((char *)data)[0] == 'a', "a goes out");
	free(data);
	CHECK(!spool__push(s, "cccccccccccccccccccc", 20), "push c, dropping a");
	spool__stats(s, &st);
	/* not counted while its send may still take it: a health line then
	 * said one more than the agent's last word */
	CHECK(st.dropped == 0 && st.depth == 2, "a out, dropped: %llu",
	      (unsigned long long)st.dropped);
	spool__sent(s, seq);
	spool__stats(s, &st);
	CHECK(st.dropped == 0 && st.depth == 2, "a was sent, not lost: dropped %llu depth %llu",
	      (unsigned long long)st.dropped, (unsigned long long)st.depth);
	CHECK(!spool__peek(s, &data, &len, &next) && ((char *)data)[0] == 'b', "b is next");
	free(data);
	spool__sent(s, next);
	spool__stats(s, &st);
	CHECK(st.dropped == 0 && st.depth == 1, "b sent: depth %llu", (unsigned long long)st.depth);
	/* c goes out, is dropped for room, and its send fails: lost */
	CHECK(!spool__peek(s, &data, &len, &next) && ((char *)data)[0] == 'c', "c is next");
	free(data);
	CHECK(!spool__push(s, "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", 90),
	      "push d, dropping c");
	spool__stats(s, &st);
	CHECK(st.dropped == 0, "c out: dropped %llu", (unsigned long long)st.dropped);
	spool__failed(s, next);
	spool__stats(s, &st);
	CHECK(st.dropped == 1 && st.depth == 1, "c failed: dropped %llu depth %llu",
	      (unsigned long long)st.dropped, (unsigned long long)st.depth);
	spool__free(s);
}

/* A fresh machine has no /var/lib/pysight: the spool makes its parents,
 * 0755 as mkdir -p would, and keeps itself 0700. */
static void test_spool_parents(void)
{
	char dir[128], err[256];
	struct spool *s = NULL;
	struct stat st;

	umask(022);
	snprintf(dir, sizeof(dir), "%s/var/lib/pysight/spool", tmpdir);
	CHECK(!spool__open(dir, 100, &s, err, sizeof(err)), "open with parents missing: %s", err);
	spool__free(s);
	CHECK(!stat(dir, &st) && (st.st_mode & 07777) == 0700, "spool is 0700: %o",
	      st.st_mode & 07777);
	snprintf(dir, sizeof(dir), "%s/var/lib", tmpdir);
	CHECK(!stat(dir, &st) && (st.st_mode & 07777) == 0755, "a parent is 0755: %o",
	      st.st_mode & 07777);
	CHECK(fdio__mkdirs("", 0700) == -ENOENT, "an empty path is no directory");
}

static void plant(const char *dir, const char *name, size_t size, time_t age)
{
	struct timespec ts[2] = { { .tv_sec = time(NULL) - age },
				  { .tv_sec = time(NULL) - age } };
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CHECK(fd >= 0 && !ftruncate(fd, (off_t)size) && !futimens(fd, ts),
	      "plant %s", name);
	close(fd);
}

static bool left(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

/* Names sort by time; a second snapshot in a millisecond is numbered;
 * pruning takes the old and then the oldest past the size, and only
 * regular files named ours. */
static void test_retention(void)
{
	struct retention r = { .prefix = "pysight", .max_age_s = 3600,
			       .max_bytes = 2500, .owner = (uid_t)-1 };
	char dir[128], path[256], link[256];

	snprintf(dir, sizeof(dir), "%s/retention", tmpdir);
	CHECK(!mkdir(dir, 0700), "mkdir");
	r.dir = dir;
	retention__name(&r, 1700000000123456789ULL, "pb.gz", path, sizeof(path));
	CHECK(!strcmp(strrchr(path, '/'), "/pysight-20231114T221320Z.pb.gz"), "%s", path);
	r.prefix = "snapshot";
	retention__unique_name(&r, 1700000000123456789ULL, "svg", path, sizeof(path));
	CHECK(!strcmp(strrchr(path, '/'), "/snapshot-20231114T221320.123Z.svg"), "%s", path);
	plant(dir, strrchr(path, '/') + 1, 0, 0);
	retention__unique_name(&r, 1700000000123456789ULL, "svg", path, sizeof(path));
	CHECK(!strcmp(strrchr(path, '/'), "/snapshot-20231114T221320.123Z-2.svg"), "%s", path);
	r.prefix = "pysight";
	plant(dir, "pysight-1-old", 10, 7200);
	plant(dir, "pysight-2", 1000, 30);
	plant(dir, "pysight-3", 1000, 20);
	plant(dir, "pysight-4", 1000, 10);
	plant(dir, "pysightly", 10, 7200);	/* not PREFIX-... */
	plant(dir, "other-0", 10, 7200);
	snprintf(path, sizeof(path), "%s/pysight-0-dir", dir);
	snprintf(link, sizeof(link), "%s/pysight-0-link", dir);
	CHECK(!mkdir(path, 0700) && !symlink("pysight-1-old", link), "plant");
	snprintf(path, sizeof(path), "%s/pysight-5", dir);
	plant(dir, "pysight-5", 1000, 0);
	retention__prune(&r, path);
	/* 5 (kept) and 4 fit in 2500; 3 and 2 do not; 1 is old */
	CHECK(left(dir, "pysight-5") && left(dir, "pysight-4") && !left(dir, "pysight-3") &&
	      !left(dir, "pysight-2") && !left(dir, "pysight-1-old") && r.pruned == 3,
	      "pruned %llu", (unsigned long long)r.pruned);
	CHECK(left(dir, "pysightly") && left(dir, "other-0") && left(dir, "pysight-0-dir") &&
	      left(dir, "snapshot-20231114T221320.123Z.svg"), "not ours: left");
	CHECK(!lstat(link, &(struct stat){ 0 }), "a link is not ours");
	r.max_bytes = 0;
	retention__prune(&r, NULL);
	CHECK(left(dir, "pysight-5") && left(dir, "pysight-4") && r.pruned == 3,
	      "no bound: the young stay");
}

static void test_history(void)
{
	struct profile *p = two_services(), *q;
	struct history *h = history__new(10);
	struct history_filter f = { .pid = 20 };
	struct history_span sp;
	const uint64_t S = 1000000000ULL;

	CHECK(!history__cut(h, p, 0, 1 * S, 1.0), "cut 1");
	CHECK(profile__total(p) == 0, "the collector's profile is reset");
	CHECK(!profile__add(p, profile__stack(p, NULL, 0),
			    profile__thread(p, 20, 0, 20, NULL, NULL), NULL,
			    KIND_CPU, 1, 7), "add");
	CHECK(!history__cut(h, p, 1 * S, 2 * S, 1.0), "cut 2");
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 2 * S, NULL, q, &sp) &&
	      profile__total(q) == 10007 && sp.first_ns == 0 && sp.last_ns == 2 * S, "both slices");
	profile__free(q);
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 1 * S, 2 * S, NULL, q, &sp) &&
	      profile__total(q) == 7 && sp.first_ns == 1 * S, "the second alone");
	profile__free(q);
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 2 * S, &f, q, &sp) &&
	      profile__total(q) == 2007, "pid 20 only: %llu",
	      (unsigned long long)profile__total(q));
	profile__free(q);
	/* 13 s later the first slices are past the span */
	CHECK(!history__cut(h, p, 14 * S, 15 * S, 1.0), "cut 3");
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 15 * S, NULL, q, &sp) &&
	      profile__total(q) == 0 && sp.first_ns == 14 * S, "old slices expire");
	profile__free(q);
	/* slowed by overload: the span's share of the rate is the slices'
	 * shares weighed by their lengths (1 s at 1, 3 s at 0.2) */
	CHECK(!history__cut(h, p, 15 * S, 18 * S, 0.2), "cut 4");
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 18 * S, NULL, q, &sp) &&
	      fabs(sp.keep - 0.4) < 1e-9, "keep %g over 4 s", sp.keep);
	profile__free(q);
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 15 * S, NULL, q, &sp) && sp.keep == 1.0,
	      "keep %g before it", sp.keep);
	profile__free(q);
	history__free(h);
	profile__free(p);
}

static void version_of(void *ctx, pid_t pid, char *out, size_t len)
{
	(void)pid;
	++*(int *)ctx;
	snprintf(out, len, "3.12.1");
}

/* One cpu second of pid 4194000 (no such process: its samples name it),
 * cut into h as the agent's loop would, at half the rate. */
static void sample_second(struct profile *p, struct history *h, uint64_t s)
{
	const struct pthread *t = profile__thread(p, 4194000, 0, 4194000, "python3", "MainThread");
	const struct pframe *f = profile__frame(p, "hot", "/srv/app.py", 3, 1, PFRAME_PYTHON);

	CHECK(!profile__add(p, profile__stack(p, &f, 1), t, NULL, KIND_CPU, 10000, 10000) &&
	      !history__cut(h, p, s * 1000000000ULL, (s + 1) * 1000000000ULL, 0.5), "add");
}

/* The export path: a window at the rate as sampled, a period thinned to
 * -r, an export into the spool with the resource, a process described
 * once and forgotten once idle, all freed by export__free. */
static void test_export(void)
{
	const uint64_t S = 1000000000ULL;
	struct profile *p = profile__new(UNIT_SAMPLES), *q;
	struct history *h = history__new(60);
	struct spool *sp = NULL;
	struct export *x;
	char dir[128], err[256];
	int calls = 0, i;
	uint64_t seq;
	size_t len;
	void *buf;
	Request *r;

	snprintf(dir, sizeof(dir), "%s/export-spool", tmpdir);
	CHECK(!spool__open(dir, 1 << 20, &sp, err, sizeof(err)), "open: %s", err);
	x = export__new(&(struct export_opts){ .mode = MODE_CPU, .rate = 500,
		.export_rate = 50, .host = "box", .history = h, .spool = sp,
		.runtime_version = version_of, .ctx = &calls });
	profile__meta(p)->rate_hz = 500;
	sample_second(p, h, 0);
	q = export__window(x, p, 0, S, NULL);
	CHECK(q && profile__total(q) == 10000 && profile__meta(q)->rate_hz == 250 &&
	      profile__meta(q)->duration_s == 1, "window: the rate as sampled");
	profile__free(q);
	q = export__period(x, p, 0, S);
	CHECK(q && profile__total(q) > 500 && profile__total(q) < 1500 &&
	      profile__meta(q)->rate_hz == 25, "period: thinned to -r: %llu",
	      q ? (unsigned long long)profile__total(q) : 0);
	profile__free(q);
	CHECK(!export__interval(x, p, 0, S) && export__made(x) == 1, "exported");
	CHECK(!spool__peek(sp, &buf, &len, &seq), "queued");
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(NULL, len, buf);
	CHECK(r && r->n_resource_profiles == 1 &&
	      !strcmp(attr_str(r, (const KeyValue *const *)r->resource_profiles[0]->resource->attributes,
			       r->resource_profiles[0]->resource->n_attributes,
			       "process.runtime.version"), "3.12.1"), "the runtime's version");
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(r, NULL);
	free(buf);
	sample_second(p, h, 1);
	CHECK(!export__interval(x, p, S, 2 * S) && calls == 1, "described once: %d", calls);
	for (i = 2; i < 8; i++)
		CHECK(!export__interval(x, p, i * S, (i + 1) * S), "nothing sampled");
	CHECK(export__made(x) == 2, "an empty period is no export: %llu",
	      (unsigned long long)export__made(x));
	sample_second(p, h, 8);
	CHECK(!export__interval(x, p, 8 * S, 9 * S) && calls == 2,
	      "idle for 4 exports: forgotten, described again: %d", calls);
	export__free(x);
	/* without a spool, nothing goes out */
	x = export__new(&(struct export_opts){ .mode = MODE_CPU, .history = h });
	q = export__window(x, p, 0, 9 * S, NULL);
	CHECK(q && !export__send(x, q, 0, 9 * S, "signal") && export__made(x) == 0, "no spool");
	profile__free(q);
	export__free(x);
	spool__free(sp);
	history__free(h);
	profile__free(p);
}

/* The exposition: each value under its name, and every count at its
 * largest still fits the room metrics__update gives it. */
static void test_metrics_text(void)
{
	struct metrics_values v = { .samples = 12, .ringbuf_lost = 3,
				    .python_processes = 2, .cpu_s = 1.5,
				    .window_entries = 40 };
	char text[METRICS_TEXT_MAX];
	int n;

	v.spool.depth = 7;
	v.ex.profiles_rejected = 1;
	n = metrics__format(&v, text, sizeof(text));
	CHECK(n > 0 && strstr(text, "# TYPE pysight_samples_total counter\n"
				   "pysight_samples_total 12\n") &&
	      strstr(text, "\npysight_ringbuf_lost_total 3\n") &&
	      strstr(text, "\npysight_python_processes 2\n") &&
	      strstr(text, "\npysight_queue_depth 7\n") &&
	      strstr(text, "\npysight_profiles_rejected_total 1\n") &&
	      strstr(text, "\npysight_window_entries 40\n") &&
	      strstr(text, "\npysight_cpu_seconds_total 1.500\n"), "%s", text);
	memset(&v, 0xff, sizeof(v));
	v.cpu_s = 1e12;		/* 30,000 years of a core */
	n = metrics__format(&v, text, sizeof(text));
	CHECK(n > 0 && n < METRICS_TEXT_MAX, "the largest: %d bytes", n);
}

/* A profile retired after a rebase lives while a slice points into it:
 * the window still reads it whole, and it goes with its last slice. */
static void test_history_retire(void)
{
	struct profile *p = two_services(), *p2 = profile__new(UNIT_NANOSECONDS), *q;
	struct history *h = history__new(10);
	struct history_span sp;
	const uint64_t S = 1000000000ULL;
	int i;

	CHECK(!history__cut(h, p, 0, 1 * S, 1.0), "cut into p");
	CHECK(history__retire(h, p), "retire p");
	CHECK(history__nretired(h) == 1, "p is kept: a slice points into it");
	CHECK(!profile__add(p2, profile__stack(p2, NULL, 0), NULL, NULL, KIND_CPU, 1, 5),
	      "add to p2");
	CHECK(!history__cut(h, p2, 1 * S, 2 * S, 1.0), "cut into p2");
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 2 * S, NULL, q, &sp) &&
	      profile__total(q) == 10005,
	      "the window across the rebase: %llu", (unsigned long long)profile__total(q));
	profile__free(q);
	CHECK(!history__cut(h, p2, 11 * S, 12 * S, 1.0) && history__nretired(h) == 0,
	      "p goes with its last slice: %d retired", history__nretired(h));
	for (i = 0; i < HISTORY_MAX_RETIRED; i++)
		CHECK(history__retire(h, profile__new(UNIT_NANOSECONDS)), "retire %d", i);
	CHECK(history__nretired(h) == 0, "profiles no slice came from go at once");
	/* the wall clock steps back after a rebase: the slice cut before it
	 * ends later than those cut after, and its profile must stay */
	p = two_services();
	CHECK(!history__cut(h, p, 20 * S, 21 * S, 1.0) && history__retire(h, p), "cut, retire");
	CHECK(!history__cut(h, p2, 5 * S, 6 * S, 1.0) && history__nretired(h) == 1,
	      "a step back frees nothing a slice points into");
	q = profile__new(UNIT_NANOSECONDS);
	CHECK(!history__collect(h, 0, 21 * S, NULL, q, &sp) &&
	      profile__total(q) == 10000, "still read whole: %llu",
	      (unsigned long long)profile__total(q));
	profile__free(q);
	history__free(h);	/* frees the retired */
	profile__free(p2);
}

/* --window-rate thinned back to -r: binomial counts, within four standard
 * deviations; the rate scaled; a profile of time is not thinned. */
/* Periods in whole nanoseconds: 1e9 / rate cut, as before the rate
 * was a double, and whole again when only a double's rounding was off. */
static void test_period(void)
{
	CHECK(profile__period_ns(97) == 10309278, "97 Hz: %lld",
	      (long long)profile__period_ns(97));
	CHECK(profile__period_ns(19) == 52631578, "19 Hz");
	CHECK(profile__period_ns(100 * (151.0 / 151)) == 10000000 &&
	      profile__period_ns(100.00000000000001) == 10000000, "100 Hz, scaled by 1");
	/* a period read back from a file: 1e9 / 111111111 is 9.000000009 */
	CHECK(profile__period_ns(1e9 / 111111111) == 111111111, "read back: %lld",
	      (long long)profile__period_ns(1e9 / 111111111));
	CHECK(profile__period_ns(1e9) == 1 && profile__period_ns(1) == 1000000000,
	      "the ends of what a file may say");
}

static void test_thin(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES), *q, *w = two_services();
	const struct pthread *t = profile__thread(p, 10, 0, 10, "python3", "MainThread");
	const struct pframe *f = profile__frame(p, "hot", "/srv/app.py", 3, 1, PFRAME_PYTHON);
	const struct pframe *g = profile__frame(p, "cold", "/srv/app.py", 9, 8, PFRAME_PYTHON);
	uint64_t seed = 42, hot = 0, cold = 0;
	const struct pentry **arr;
	size_t n, i;

	profile__meta(p)->rate_hz = 500;
	CHECK(!profile__add(p, profile__stack(p, &f, 1), t, NULL, KIND_CPU, 10000, 10000) &&
	      !profile__add(p, profile__stack(p, &g, 1), t, NULL, KIND_CPU, 1000, 1000), "add");
	q = profile__thin(p, 0.1, &seed);
	CHECK(q && profile__meta(q)->rate_hz == 50, "rate scaled: %g",
	      q ? profile__meta(q)->rate_hz : 0);
	if (q && !profile__entries(q, &arr, &n)) {
		for (i = 0; i < n; i++) {
			CHECK(arr[i]->count == arr[i]->weight, "a sample weighs one");
			if (!strcmp(arr[i]->stack->frames[0]->name, "hot"))
				hot = arr[i]->count;
			else
				cold = arr[i]->count;
		}
		free(arr);
	}
	/* sd: sqrt(10000 * 0.1 * 0.9) = 30, sqrt(1000 * 0.1 * 0.9) = 9.5 */
	CHECK(hot >= 880 && hot <= 1120 && cold >= 62 && cold <= 138,
	      "thinned to 10%%: hot %llu, cold %llu", (unsigned long long)hot,
	      (unsigned long long)cold);
	profile__free(q);
	CHECK(!profile__thin(w, 0.1, &seed), "time is not thinned");
	profile__free(w);
	profile__free(p);
}

static void test_service_names(void)
{
	static const struct { const char *args; size_t len; const char *want; } cases[] = {
		{ "python3\0-m\0gunicorn\0app:wsgi", 29, "gunicorn" },
		{ "python3\0-mhttp.server\0", 22, "http.server" },
		{ "/usr/bin/python3.11\0-u\0/srv/app/serve.py\0--port\0" "80", 50, "serve" },
		{ "python3\0-X\0dev\0-W\0ignore\0tool.py", 32, "tool" },
		{ "python3\0-c\0print(1)", 19, "" },
		{ "python3", 7, "" },
		{ "python3\0my app\x01.py", 18, "my app?" },
		{ "python3\0na\xc3\xafve.py", 17, "na\xc3\xafve" },
		{ "python3\0-m\0bad\xff\xc3", 16, "bad??" },
		{ "python3\0-", 9, "" },
		{ "python3\0-mjson", 14, "json" },
		{ "python3\0/srv/app/serve.py", 25, "serve" },
	};
	char out[SERVICE_NAME_MAX], *args;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* exactly len bytes, as /proc gives them: a command line cut
		 * at CMDLINE_MAX, or rewritten, has no NUL at its end */
		args = malloc(cases[i].len);
		if (!args)
			continue;
		memcpy(args, cases[i].args, cases[i].len);
		service__from_cmdline(args, cases[i].len, out, sizeof(out));
		free(args);
		CHECK(!strcmp(out, cases[i].want), "case %zu: '%s', want '%s'", i, out,
		      cases[i].want);
	}
}

static void test_control(void)
{
	struct control_request r;
	char err[128], longv[2000];

	CHECK(!control__parse("snapshot pid=42 format=folded container=abcd\n", &r, err,
			      sizeof(err)) && !r.trigger && r.pid == 42 &&
	      !strcmp(r.format, "folded") && !strcmp(r.container, "abcd"), "snapshot");
	CHECK(!control__parse("trigger pid=7 reason=p99\n", &r, err, sizeof(err)) &&
	      r.trigger && r.pid == 7 && !strcmp(r.reason, "p99"), "trigger");
	CHECK(control__parse("rm -rf /\n", &r, err, sizeof(err)), "unknown verb");
	CHECK(control__parse("snapshot pid=-1\n", &r, err, sizeof(err)), "bad pid");
	CHECK(control__parse("snapshot colour=red\n", &r, err, sizeof(err)), "unknown field");
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = 0;
	memcpy(longv, "snapshot cgroup=", 16);
	CHECK(control__parse(longv, &r, err, sizeof(err)), "overlong value");
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (void *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void set_timeout(int fd, int seconds)
{
	struct timeval tv = { seconds, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * The server never waits on a client: clients that say nothing fill
 * every slot, one more waits in the backlog, and a good client's 4 MiB
 * answer, far more than a socket holds, goes out in pieces between calls
 * that each return at once.  The silent ones are told "no request line".
 */
static void test_control_server(void)
{
	enum { BIG = 4 << 20 };
	int lfd, id = -1, good, silent[CONTROL_CLIENTS + 1], i, n, nsilent;
	long long t0, slowest = 0, t;
	struct control_server *s;
	struct control_request r;
	char path[128], err[256], head[64], *big, *got;
	size_t have = 0, hl = 0;
	ssize_t k;

	snprintf(path, sizeof(path), "%s/ctl.sock", tmpdir);
	lfd = control__listen(path, (gid_t)-1, err, sizeof(err));
	CHECK(lfd >= 0, "%s", err);
	s = lfd >= 0 ? control__server(lfd, CONTROL_READ_MS, CONTROL_REPLY_MS) : NULL;
	big = malloc(BIG);
	got = malloc(BIG);
	if (!s || !big || !got)
		goto out;
	for (i = 0; i < BIG; i++)
		big[i] = (char)(i * 7 + 3);
	/* every slot taken, then two more wait in the backlog (a connect
	 * past the backlog would wait, and this test with it) */
	for (i = 0; i < CONTROL_CLIENTS; i++)
		silent[i] = connect_to(path);
	CHECK(control__next(s, &r) == -EAGAIN, "nothing asked yet");
	silent[CONTROL_CLIENTS] = connect_to(path);
	good = connect_to(path);
	CHECK(good >= 0 && write(good, "snapshot format=folded\n", 23) == 23, "good client");
	/* until the good one is asked: the silent ones' slots free at 500 ms */
	t0 = ms_now();
	while (id < 0 && ms_now() - t0 < 3000) {
		t = ms_now();
		id = control__next(s, &r);
		slowest = ms_now() - t > slowest ? ms_now() - t : slowest;
		if (id < 0)
			usleep(5000);
	}
	CHECK(id >= 0 && !strcmp(r.format, "folded"), "the good request, %d", id);
	CHECK(!control__answer(s, id, big, BIG, NULL), "answered");
	CHECK(control__answer(s, id, big, 1, NULL) == -EINVAL, "answered twice");
	memset(big, 0, 16);		/* copied: the caller's buffer is its own */
	for (i = 0; i < 3; i++)
		big[i] = (char)(i * 7 + 3);
	fcntl(good, F_SETFL, O_NONBLOCK);
	t0 = ms_now();
	while (have < BIG && ms_now() - t0 < 4000) {
		t = ms_now();
		control__next(s, &r);
		slowest = ms_now() - t > slowest ? ms_now() - t : slowest;
		if (hl < sizeof(head) - 1 && !memchr(head, '\n', hl)) {
			k = read(good, head + hl, 1);
			hl += k > 0 ? (size_t)k : 0;
			continue;
		}
		k = read(good, got + have, 65536);	/* a slow reader */
		have += k > 0 ? (size_t)k : 0;
		usleep(1000);
	}
	head[hl] = 0;
	CHECK(!strcmp(head, "ok 4194304\n"), "head '%s'", head);
	CHECK(have == BIG && !memcmp(got + 16, big + 16, BIG - 16) &&
	      got[3] == (char)24 && got[15] == (char)108, "the answer, %zu bytes", have);
	/* a wait on a client would be its 500 ms, or 5 s */
	CHECK(slowest < 400, "a call waited %lld ms", slowest);
	/* the silent clients were each told, and let go */
	for (i = 0; i < 150; i++) {
		control__next(s, &r);
		usleep(10000);
	}
	for (i = nsilent = 0; i < CONTROL_CLIENTS + 1; i++) {
		set_timeout(silent[i], 2);
		n = (int)read(silent[i], head, sizeof(head) - 1);
		head[n > 0 ? n : 0] = 0;
		nsilent += !strcmp(head, "error no request line\n");
		close(silent[i]);
	}
	CHECK(nsilent == CONTROL_CLIENTS + 1, "%d of %d silent clients told", nsilent,
	      CONTROL_CLIENTS + 1);
	close(good);
out:
	control__server_free(s);
	if (lfd >= 0)
		close(lfd);
	free(big);
	free(got);
}

/* Until fd is closed by the other end, or 2 s: the bytes it sent. */
static size_t drain(int fd, char *buf, size_t len)
{
	size_t have = 0;
	ssize_t k;

	set_timeout(fd, 2);
	while (have < len && (k = read(fd, buf + have, len - have)) > 0)
		have += (size_t)k;
	return have;
}

/*
 * The deadlines, short here: a client that closes its side before a
 * whole line is answered at once; one handed out and not answered is
 * told so; one that stops reading its answer is dropped, the rest of it
 * not sent.
 */
static void test_control_deadlines(void)
{
	enum { BIG = 8 << 20 };
	int lfd, half, unanswered, stalled, id, i;
	struct control_server *s;
	struct control_request r;
	char path[128], err[256], buf[256], *big = NULL;
	size_t n;

	snprintf(path, sizeof(path), "%s/ctl2.sock", tmpdir);
	lfd = control__listen(path, (gid_t)-1, err, sizeof(err));
	s = lfd >= 0 ? control__server(lfd, 200, 300) : NULL;
	big = malloc(BIG);
	CHECK(s && big, "%s", err);
	if (!s || !big)
		goto out;
	memset(big, 'x', BIG);
	half = connect_to(path);
	CHECK(write(half, "snap", 4) == 4 && !shutdown(half, SHUT_WR), "half closed");
	unanswered = connect_to(path);
	CHECK(write(unanswered, "snapshot\n", 9) == 9, "unanswered");
	stalled = connect_to(path);
	CHECK(write(stalled, "snapshot\n", 9) == 9, "stalled");
	for (i = 0; i < 20; i++) {
		while ((id = control__next(s, &r)) >= 0)
			if (id == 2)	/* stalled: its slot is the third */
				control__answer(s, id, big, BIG, NULL);
		usleep(10000);	/* 200 ms, not past the read deadline */
	}
	n = drain(half, buf, sizeof(buf) - 1);
	buf[n] = 0;
	CHECK(!strcmp(buf, "error no request line\n"), "half closed: '%s'", buf);
	n = drain(unanswered, buf, sizeof(buf) - 1);
	buf[n] = 0;
	CHECK(!strcmp(buf, "error no answer\n"), "unanswered: '%s'", buf);
	/* the stalled reader: 300 ms without taking a byte, then dropped */
	for (i = 0; i < 50; i++) {
		control__next(s, &r);
		usleep(10000);
	}
	n = drain(stalled, big, BIG);
	CHECK(n > 0 && n < BIG && !memcmp(big, "ok 8388608\n", 11),
	      "stalled: %zu of %d bytes", n, BIG);
	close(half);
	close(unanswered);
	close(stalled);
out:
	control__server_free(s);
	if (lfd >= 0)
		close(lfd);
	free(big);
}

static void test_urls(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "http://127.0.0.1:4318", "http://127.0.0.1:4318/v1development/profiles" },
		{ "http://h:4318/", "http://h:4318/v1development/profiles" },
		{ "https://gw/otlp/", "https://gw/otlp/v1development/profiles" },
		{ "https://h:1/x?y=1", "https://h:1/x/v1development/profiles?y=1" },
		{ "http://h/v1development/profiles", "http://h/v1development/profiles" },
	};
	char out[256], err[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(!exporter__url_with_path(cases[i].in, OTLP_PROFILES_PATH, out, sizeof(out)) &&
		      !strcmp(out, cases[i].want), "%s -> %s", cases[i].in, out);
	CHECK(exporter__check_url("ftp://h", err, sizeof(err)) && strstr(err, "ftp"), "%s", err);
	CHECK(exporter__check_url("not a url", err, sizeof(err)), "not a url");
	CHECK(!exporter__check_url("https://[::1]:4318", err, sizeof(err)), "%s", err);
}

int main(void)
{
	char cmd[128];

	if (!mkdtemp(tmpdir))
		return 1;
	test_otlp();
	test_otlp_tasks();
	test_status();
	test_partial_success();
	test_spool();
	test_spool_sent_while_dropped();
	test_spool_parents();
	test_retention();
	test_export();
	test_metrics_text();
	test_history();
	test_history_retire();
	test_period();
	test_thin();
	test_service_names();
	test_control();
	test_control_server();
	test_control_deadlines();
	test_urls();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return check_summary();
}
