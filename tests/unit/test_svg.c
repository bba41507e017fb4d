// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The SVG flame graph: a document whose data a hostile frame name cannot
 * break out of, boxes that read like the folded lines, narrow boxes left
 * out of big profiles, and the differential graph's colours.  The data
 * the script draws (S, the texts, and N, the boxes) is read back here.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "filename.h"
#include "profile.h"
#include "writer.h"

struct out {
	char *buf;
	size_t len;
};

static struct out render(struct profile *before, struct profile *after,
			 const struct write_opts *o)
{
	struct out r = { NULL, 0 };
	FILE *f = open_memstream(&r.buf, &r.len);
	int err;

	if (!f)
		return r;
	if (before)
		err = svg__write_diff(before, after, o, f);
	else
		err = writer_svg.write(after, o, f);
	fclose(f);
	CHECK(!err, "write: %d", err);
	return r;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

/* A box as the script reads it. */
struct box {
	int depth, kind, text;
	unsigned long long x, w, bw;
	unsigned int fill;
	char label[128];	/* S[text], as written between the quotes */
};

static int read_texts(const char *svg, char (*texts)[128], int max)
{
	const char *p = strstr(svg, "var S = [");
	int n = 0;
	size_t len;

	if (!p)
		return 0;
	for (p += 9; *p == '"' || *p == ',' || *p == '\n'; ) {
		if (*p != '"') {
			p++;
			continue;
		}
		len = strcspn(p + 1, "\"");
		if (n < max)
			snprintf(texts[n], sizeof(texts[n]), "%.*s", (int)len, p + 1);
		n++;
		p += len + 2;
	}
	return n;
}

static int read_boxes(const char *svg, struct box *boxes, int max)
{
	static char texts[4096][128];
	const char *p = strstr(svg, "var N = [");
	bool diff = strstr(svg, "diff: true") != NULL;
	int ntexts = read_texts(svg, texts, 4096), n = 0;
	unsigned long long v[7];
	char *end;
	int i;

	if (!p)
		return -1;
	for (p += 9; *p && *p != ']'; n++) {
		for (i = 0; i < (diff ? 7 : 6); i++) {
			while (*p == ',' || *p == '\n')
				p++;
			v[i] = strtoull(p, &end, 10);
			if (end == p)
				return -1;
			p = end;
		}
		if (n >= max)
			continue;
		boxes[n] = (struct box){ .depth = v[0], .x = v[1], .w = v[2],
					 .kind = v[3], .text = v[4],
					 .fill = v[5], .bw = diff ? v[6] : 0 };
		if ((int)v[4] < ntexts)
			strcpy(boxes[n].label, texts[v[4]]);
	}
	return n;
}

static const struct box *find_box(const struct box *b, int n, const char *label)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(b[i].label, label))
			return &b[i];
	return NULL;
}

static void add(struct profile *p, const struct pframe **f, int n,
		const struct pthread *t, int kind, uint64_t w)
{
	const struct pstack *s = profile__stack(p, f, n);

	if (!s || profile__add(p, s, t, NULL, kind, 1, w))
		CHECK(false, "add");
}

static void test_document(void)
{
	static const char evil[] =
		"evil</script><script>alert(1)</script>]]><x a=\"1\" b='2'>&amp;"
		"\x01\x1b[31m\xff\xc0\x80 caf\xc3\xa9 \xf0\x9f\x94\xa5";
	struct profile *p = profile__new(UNIT_SAMPLES);
	const struct pframe *f[2];
	struct out r;
	size_t i;
	bool ascii = true;

	snprintf(profile__meta(p)->target, sizeof(profile__meta(p)->target),
		 "python3 x.py </text><script>alert(2)</script>");
	f[0] = profile__frame(p, "main", "app.py", 1, 1, PFRAME_PYTHON);
	f[1] = profile__frame(p, evil, "<b>.py", 2, 1, PFRAME_PYTHON);
	add(p, f, 2, NULL, KIND_CPU, 7);
	r = render(NULL, p, NULL);
	CHECK(r.buf && !strncmp(r.buf, "<?xml ", 6), "starts with <?xml");
	CHECK(r.len > 7 && !strcmp(r.buf + r.len - 7, "</svg>\n"),
	      "ends with </svg>");
	CHECK(count(r.buf, "<svg") == 1 && count(r.buf, "</svg>") == 1, "one svg");
	CHECK(count(r.buf, "<script") == 1 && count(r.buf, "</script>") == 1,
	      "one script element: the frame's did not get out");
	CHECK(count(r.buf, "]]>") == 1, "the CDATA section ends once");
	CHECK(!strstr(r.buf, "alert(1)</") && !strstr(r.buf, "<x a"),
	      "no markup of the frame's");
	CHECK(strstr(r.buf, "evil\\u003c/script\\u003e\\u003cscript\\u003e"
			    "alert(1)\\u003c/script\\u003e]]\\u003e\\u003cx a="
			    "\\u00221\\u0022 b=\\u00272\\u0027\\u003e\\u0026amp:"
			    "\\u005cx01\\u005cx1b[31m\\u005cxff\\u005cxc0\\u005cx80"
			    " caf\\u00e9 \\ud83d\\udd25 (\\u003cb\\u003e.py:2)"),
	      "escaped in the script; controls and bad UTF-8 shown as \\xNN, "
	      "as a terminal is shown them; ';' as the folded file spells it");
	CHECK(strstr(r.buf, "python3 x.py &lt;/text&gt;&lt;script&gt;alert(2)"
			    "&lt;/script&gt; on "),
	      "the title is escaped");
	for (i = 0; i < r.len; i++)
		if ((unsigned char)r.buf[i] >= 0x80 ||
		    ((unsigned char)r.buf[i] < 0x20 && r.buf[i] != '\t' &&
		     r.buf[i] != '\n'))
			ascii = false;
	CHECK(ascii, "plain ASCII, no control characters");
	CHECK(strstr(r.buf, "samples") && strstr(r.buf, "7 samples"), "title total");
	free(r.buf);
	profile__free(p);
}

/*
 * The boxes are the folded lines: --group-by roots, Python frames, the
 * off-CPU cause, then the kernel frames; weights add up along the path.
 */
static void test_frames_as_folded(void)
{
	struct write_opts o = { .groups = { GROUP_THREAD }, .ngroups = 1 };
	struct profile *p = profile__new(UNIT_NANOSECONDS);
	const struct pthread *t = profile__thread(p, 10, 0, 11, "python3", "w");
	const struct pframe *f[3];
	struct box b[64];
	const struct box *x;
	struct out r;
	int n;

	f[0] = profile__frame(p, "main", "app.py", 1, 1, PFRAME_PYTHON);
	f[1] = profile__frame(p, "nap", "/usr/lib/python3.11/time2.py", 2, 1,
			      PFRAME_PYTHON);
	f[2] = profile__frame(p, "do_nanosleep", NULL, 0, 0, PFRAME_KERNEL);
	add(p, f, 3, t, KIND_SLEEP, 3000000);
	f[1] = profile__frame(p, "get", "/v/lib/python3.11/site-packages/rq/a.py",
			      5, 1, PFRAME_PYTHON);
	add(p, f, 2, t, KIND_CPU, 1000000);
	r = render(NULL, p, &o);
	n = read_boxes(r.buf, b, 64);
	CHECK(n == 7, "boxes: %d", n);
	CHECK(n > 0 && !strcmp(b[0].label, "all") && b[0].w == 4000000 &&
	      b[0].depth == 0, "the root");
	x = find_box(b, n, "thread 11 (w)");
	CHECK(x && x->depth == 1 && x->w == 4000000, "the group-by root first");
	x = find_box(b, n, "main (app.py:1)");
	CHECK(x && x->depth == 2 && x->w == 4000000 && x->kind == 0, "main");
	x = find_box(b, n, "nap (time2.py:2)");
	CHECK(!x, "the file as written, not shortened here");
	x = find_box(b, n, "nap (/usr/lib/python3.11/time2.py:2)");
	CHECK(x && x->depth == 3 && x->w == 3000000 && x->kind == 1,
	      "stdlib frame");
	x = find_box(b, n, "[off-cpu: sleep]");
	CHECK(x && x->depth == 4 && x->w == 3000000 && x->kind == 3,
	      "the cause below the kernel frames");
	x = find_box(b, n, "do_nanosleep_[k]");
	CHECK(x && x->depth == 5 && x->kind == 4, "kernel frame last");
	x = find_box(b, n, "get (/v/lib/python3.11/site-packages/rq/a.py:5)");
	CHECK(x && x->depth == 3 && x->w == 1000000 && x->kind == 2 &&
	      x->x == 0, "site-packages frame, left of nap (sorted)");
	CHECK(strstr(r.buf, "unit: \"ns\"") && strstr(r.buf, "0.004 s of thread time"),
	      "time, not samples");
	free(r.buf);
	profile__free(p);
}

/*
 * 100k distinct stacks: 100 modules of 1,000 handlers each, and one hot
 * path.  Each handler is 1/200,000 of the whole, far under a pixel, so
 * none is written; each module, at 1/200, is.
 */
static void test_narrow_boxes(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	const struct pframe *f[3];
	char name[32];
	struct box *b = calloc(200000, sizeof(*b));
	struct out r;
	int i, n, deep = 0;

	f[0] = profile__frame(p, "main", "app.py", 1, 1, PFRAME_PYTHON);
	for (i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "module_%d", i / 1000);
		f[1] = profile__frame(p, name, "app.py", 2, 1, PFRAME_PYTHON);
		snprintf(name, sizeof(name), "handler_%d", i);
		f[2] = profile__frame(p, name, "app.py", 3, 1, PFRAME_PYTHON);
		add(p, f, 3, NULL, KIND_CPU, 1);
	}
	f[1] = profile__frame(p, "hot", "app.py", 4, 1, PFRAME_PYTHON);
	add(p, f, 2, NULL, KIND_CPU, 100000);
	CHECK(profile__nstacks(p) == 100001, "stacks");
	r = render(NULL, p, NULL);
	CHECK(r.len < 64 * 1024, "%zu bytes for 100k stacks", r.len);
	n = read_boxes(r.buf, b, 200000);
	for (i = 0; i < n; i++)
		deep += b[i].depth > 2;
	CHECK(n == 103 && !deep, "%d boxes, %d handlers", n, deep);
	CHECK(!strstr(r.buf, "handler_"), "no text of a box not written");
	CHECK(find_box(b, n, "module_99 (app.py:2)") &&
	      find_box(b, n, "module_99 (app.py:2)")->w == 1000, "modules stay");
	CHECK(find_box(b, n, "main (app.py:1)") &&
	      find_box(b, n, "main (app.py:1)")->w == 200000,
	      "their weight stays in the parent");
	free(r.buf);
	free(b);
	profile__free(p);
}

/* Share of a: 50% -> 80%, red; b: 50% -> 20%, blue and as deep; c new. */
static void test_diff(void)
{
	struct profile *before = profile__new(UNIT_SAMPLES);
	struct profile *after = profile__new(UNIT_NANOSECONDS);
	const struct pframe *f[2];
	const struct box *a, *b, *c, *m;
	struct box boxes[16];
	struct out r;
	int n;

	f[0] = profile__frame(before, "main", "app.py", 1, 1, PFRAME_PYTHON);
	f[1] = profile__frame(before, "a", "app.py", 2, 1, PFRAME_PYTHON);
	add(before, f, 2, NULL, KIND_CPU, 50);
	f[1] = profile__frame(before, "b", "app.py", 3, 1, PFRAME_PYTHON);
	add(before, f, 2, NULL, KIND_CPU, 50);
	f[1] = profile__frame(before, "gone", "app.py", 9, 1, PFRAME_PYTHON);
	add(before, f, 2, NULL, KIND_CPU, 100);

	f[0] = profile__frame(after, "main", "app.py", 1, 1, PFRAME_PYTHON);
	f[1] = profile__frame(after, "a", "app.py", 2, 1, PFRAME_PYTHON);
	add(after, f, 2, NULL, KIND_CPU, 700);
	f[1] = profile__frame(after, "b", "app.py", 3, 1, PFRAME_PYTHON);
	add(after, f, 2, NULL, KIND_CPU, 100);
	f[1] = profile__frame(after, "c", "app.py", 4, 1, PFRAME_PYTHON);
	add(after, f, 2, NULL, KIND_CPU, 200);

	r = render(before, after, NULL);
	CHECK(strstr(r.buf, "diff: true") && strstr(r.buf, "btotal: 200"),
	      "a differential graph");
	n = read_boxes(r.buf, boxes, 16);
	a = find_box(boxes, n, "a (app.py:2)");
	b = find_box(boxes, n, "b (app.py:3)");
	c = find_box(boxes, n, "c (app.py:4)");
	m = find_box(boxes, n, "main (app.py:1)");
	CHECK(n == 5 && !find_box(boxes, n, "gone (app.py:9)"),
	      "AFTER's boxes only: %d", n);
	CHECK(a && a->w == 700 && a->bw == 50, "a: 25%% -> 70%%");
	CHECK(b && b->w == 100 && b->bw == 50, "b: 25%% -> 10%%");
	CHECK(c && c->w == 200 && c->bw == 0, "c: new, 20%%");
	CHECK(m && m->w == 1000 && m->bw == 200, "main: 100%% both");
	/* a moved 45 points, the most: full red; b 15 points, a third blue */
	CHECK(a && a->fill == 0xff2d2d, "a is deep red: %06x", a ? a->fill : 0);
	CHECK(b && (b->fill & 0xff) == 0xff && (b->fill >> 16) == 0xac &&
	      ((b->fill >> 8) & 0xff) == 0xac, "b is pale blue: %06x",
	      b ? b->fill : 0);
	CHECK(c && (c->fill >> 16) == 0xff && (c->fill & 0xff) < 0xff,
	      "c is red: %06x", c ? c->fill : 0);
	CHECK(m && m->fill == 0xebebeb, "main unchanged: grey %06x",
	      m ? m->fill : 0);
	free(r.buf);
	profile__free(before);
	profile__free(after);
}

static void test_empty(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	struct out r = render(NULL, p, NULL);

	CHECK(r.buf && strstr(r.buf, "No samples") && strstr(r.buf, "var N = [];"),
	      "an empty profile draws nothing");
	free(r.buf);
	profile__free(p);
}

/* A short file name keeps whose code it is through its frame's origin. */
static void test_origin(void)
{
	struct profile *p = profile__new(UNIT_SAMPLES);
	const struct pframe *f[2];
	struct box b[8];
	struct out r;
	int n;

	CHECK(filename__origin("/usr/lib/python3.11/json/decoder.py") ==
	      ORIGIN_STDLIB, "stdlib");
	CHECK(filename__origin("<frozen importlib._bootstrap>") == ORIGIN_STDLIB,
	      "frozen");
	CHECK(filename__origin("/usr/lib/python3/dist-packages/requests/api.py") ==
	      ORIGIN_SITE, "dist-packages");
	CHECK(filename__origin("/app/venv/lib/python3.12/site-packages/flask/app.py") ==
	      ORIGIN_SITE, "site-packages");
	CHECK(filename__origin("/home/me/python3.11-notes/x.py") == ORIGIN_OWN,
	      "own");
	f[0] = profile__frame(p, "main", "app.py", 1, 1, PFRAME_PYTHON);
	f[1] = profile__frame(p, "get", "requests/api.py", 5, 1, PFRAME_PYTHON);
	profile__frame_origin(p, f[1], ORIGIN_SITE);
	profile__frame_origin(p, f[1], ORIGIN_OWN);
	CHECK(f[1]->origin == ORIGIN_SITE, "the first word stays");
	add(p, f, 2, NULL, KIND_CPU, 1);
	r = render(NULL, p, NULL);
	n = read_boxes(r.buf, b, 8);
	CHECK(n == 3 && b[2].kind == 2 && b[1].kind == 0,
	      "coloured as site-packages, though the name is short");
	free(r.buf);
	profile__free(p);
}

static void test_lookup(void)
{
	CHECK(writer__find("svg") == &writer_svg, "-f svg");
	CHECK(writer__for_path("out/x.svg") == &writer_svg, "-o x.svg");
}

int main(void)
{
	test_document();
	test_frames_as_folded();
	test_narrow_boxes();
	test_diff();
	test_empty();
	test_origin();
	test_lookup();
	return check_summary();
}
