// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An interactive flame graph in one SVG file: hover for a frame's weight
 * and share, click to zoom, search by regex, reset.  The data and the
 * script are inline, so the file works offline and fetches nothing.
 *
 * The boxes are the folded lines (flatten.c) merged into a tree by
 * prefix, so a box's share is what a folded file's lines under that path
 * add up to.  Boxes narrower than a pixel of the 1180 drawn are not
 * written: their weight stays in their parent, as flamegraph.pl's
 * --minwidth does.  That bounds the boxes of any level by 1180, and a
 * profile of 100k distinct stacks writes a file of a few hundred KB that
 * a browser draws at once.
 *
 * A differential graph is the same tree drawn with AFTER's widths, each
 * box matched to the box of the same path in BEFORE, and coloured by how
 * its share of the whole changed.
 *
 * Frame names come from the processes profiled, which may be hostile.
 * Everything from a profile reaches the file through xml_text() or
 * js_string(): plain ASCII out, markup and quotes as character escapes,
 * control characters and invalid UTF-8 dropped, so no name can close a
 * string, an element or the script.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "filename.h"
#include "flatten.h"
#include "hashfree.h"
#include "utf8.h"
#include "writer.h"

#define SVG_WIDTH	1200
#define SVG_PAD		10
#define FRAME_HEIGHT	16
#define FRAMES_TOP	76	/* title, subtitle, controls and legend */
#define DRAWN_WIDTH	(SVG_WIDTH - 2 * SVG_PAD)

/* Whose code a box is, which its colour says. */
enum box_kind {
	BOX_OWN = 0,
	BOX_STDLIB,
	BOX_SITE,
	BOX_OFFCPU,
	BOX_KERNEL,
	BOX_NATIVE,
	BOX_PSEUDO,
	BOX__MAX,
};

static const struct {
	const char *name, *fill;
} legend[BOX__MAX] = {
	[BOX_OWN] = { "own code", "#ee8844" },
	[BOX_STDLIB] = { "stdlib", "#e8cc55" },
	[BOX_SITE] = { "site-packages", "#77c466" },
	[BOX_OFFCPU] = { "off-CPU", "#6f9be8" },
	[BOX_KERNEL] = { "kernel", "#44c8c8" },
	[BOX_NATIVE] = { "native", "#b58ce0" },
	[BOX_PSEUDO] = { "other", "#bbbbbb" },
};

/* Children are kept in the order of the sorted lines: by text. */
struct node {
	const char *text;	/* flatten's, or "all" */
	uint64_t w;		/* weight under this path */
	uint64_t bw;		/* the same path's in the baseline */
	unsigned int child, last, next;	/* node indices, 0 for none */
	int depth;		/* 0 for the root */
	int kind;		/* enum box_kind */
};

struct tree {
	struct flatten *fl;
	struct node *nodes;	/* [0] is the root, "all" */
	unsigned int n, cap;
	uint64_t total;
};

/* An index per distinct text, so a name written once serves every box. */
struct text_id {
	const char *text;
	unsigned int id;
	UT_hash_handle hh;
};

struct svg {
	FILE *f;
	struct tree *t, *base;	/* base: NULL unless differential */
	struct text_id *ids;
	unsigned int nids;
	uint64_t min_w;		/* narrower boxes are not written */
	int max_depth;		/* of the boxes written */
	double max_change;	/* of a written box's share, in points */
};

static int box_kind(const struct pframe *f, int role)
{
	int origin;

	if (role == FLAT_CAUSE)
		return BOX_OFFCPU;
	if (role == FLAT_ROOT || !f)
		return BOX_PSEUDO;
	if (f->kind == PFRAME_KERNEL)
		return BOX_KERNEL;
	if (f->kind == PFRAME_NATIVE)
		return BOX_NATIVE;
	if (f->kind == PFRAME_PSEUDO)
		return profile__kind_of_frame(f->name) >= 0 ? BOX_OFFCPU :
							      BOX_PSEUDO;
	origin = f->origin;
	/* a profile read from a file kept only the name it was given */
	if (origin == ORIGIN_UNKNOWN)
		origin = f->file ? filename__origin(f->file) : ORIGIN_OWN;
	return origin == ORIGIN_STDLIB ? BOX_STDLIB :
	       origin == ORIGIN_SITE	? BOX_SITE :
					  BOX_OWN;
}

static int tree_add(struct tree *t, unsigned int parent, const char *text,
		    int kind, unsigned int *out)
{
	struct node *nodes, *n;
	unsigned int cap;

	if (t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 1024;
		nodes = reallocarray(t->nodes, cap, sizeof(*nodes));
		if (!nodes)
			return -ENOMEM;
		t->nodes = nodes;
		t->cap = cap;
	}
	n = &t->nodes[t->n];
	memset(n, 0, sizeof(*n));
	n->text = text;
	n->kind = kind;
	if (t->n) {
		n->depth = t->nodes[parent].depth + 1;
		if (t->nodes[parent].last)
			t->nodes[t->nodes[parent].last].next = t->n;
		else
			t->nodes[parent].child = t->n;
		t->nodes[parent].last = t->n;
	}
	*out = t->n++;
	return 0;
}

/*
 * The sorted lines, merged by prefix: each line shares its first
 * flatten__common() frames with the line before it, so only the frames
 * after those are new boxes.
 */
static int tree_build(struct tree *t, struct profile *p,
		      const struct write_opts *o)
{
	const struct pframe *f;
	unsigned int *path = NULL, at;
	int d, depth, common, role, err, max = 1;
	const char *text;
	size_t i, n;
	uint64_t w;

	memset(t, 0, sizeof(*t));
	err = flatten__new(p, o, &t->fl);
	if (err)
		return err;
	n = flatten__nlines(t->fl);
	for (i = 0; i < n; i++)
		if (flatten__depth(t->fl, i) > max)
			max = flatten__depth(t->fl, i);
	path = calloc(max, sizeof(*path));
	if (!path)
		return -ENOMEM;
	err = tree_add(t, 0, "all", BOX_PSEUDO, &at);
	for (i = 0; i < n && !err; i++) {
		depth = flatten__depth(t->fl, i);
		common = i ? flatten__common(t->fl, i - 1, i) : 0;
		w = flatten__entry(t->fl, i)->weight;
		t->nodes[0].w += w;
		for (d = 0, at = 0; d < depth && !err; d++) {
			if (d >= common) {
				text = flatten__text(t->fl, i, d, &f, &role);
				err = tree_add(t, at, text, box_kind(f, role),
					       &path[d]);
				if (err)
					break;
			}
			at = path[d];
			t->nodes[at].w += w;
		}
	}
	free(path);
	if (!err)
		t->total = t->nodes[0].w;
	return err;
}

static void tree_free(struct tree *t)
{
	flatten__free(t->fl);
	free(t->nodes);
}

/* Give each of a's boxes the weight of b's box of the same path: both
 * trees hold their children in strcmp() order, so a merge finds them. */
static void tree_match(struct tree *a, unsigned int ai, const struct tree *b,
		       unsigned int bi)
{
	unsigned int ac = a->nodes[ai].child, bc = b->nodes[bi].child;
	int c;

	a->nodes[ai].bw = b->nodes[bi].w;
	while (ac && bc) {
		c = strcmp(a->nodes[ac].text, b->nodes[bc].text);
		if (!c)
			tree_match(a, ac, b, bc);
		if (c <= 0)
			ac = a->nodes[ac].next;
		if (c >= 0)
			bc = b->nodes[bc].next;
	}
}

/* What neither XML 1.0 nor a reader wants to see: C0 and C1 controls,
 * DEL, and the non-characters U+FFFE and U+FFFF. */
static bool dropped(int cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0xfffe ||
	       cp == 0xffff;
}

/* s as XML character data or attribute value, in ASCII. */
static void xml_text(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	int cp, len;

	for (; *c; c += len) {
		cp = utf8__next(c, &len);
		if (cp < 0 || dropped(cp))
			continue;
		switch (cp) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (cp < 0x80)
				fputc(cp, f);
			else
				fprintf(f, "&#x%x;", cp);
		}
	}
}

/*
 * s as a double-quoted JavaScript string, in ASCII.  Every character
 * that means something to XML or HTML is a \u escape, so the script
 * needs no CDATA trick to be safe: "</script>" and "]]>" cannot appear.
 */
static void js_string(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	int cp, len;

	fputc('"', f);
	for (; *c; c += len) {
		cp = utf8__next(c, &len);
		if (cp < 0 || dropped(cp))
			continue;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			fprintf(f, "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
				0xdc00 + (cp & 0x3ff));
		} else if (cp >= 0x80 || strchr("<>&\"'\\", cp)) {
			fprintf(f, "\\u%04x", cp);
		} else {
			fputc(cp, f);
		}
	}
	fputc('"', f);
}

static int text_id(struct svg *s, const char *text, unsigned int *id)
{
	struct text_id *t;

	HASH_FIND_PTR(s->ids, &text, t);
	if (!t) {
		t = malloc(sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->text = text;
		t->id = s->nids++;
		HASH_ADD_PTR(s->ids, text, t);
	}
	*id = t->id;
	return 0;
}

static void free_ids(struct svg *s)
{
	HASH_FREE_ALL(s->ids);
}

/* How a path's share of the whole changed since the baseline, in points. */
static double share_change(const struct svg *s, const struct node *n)
{
	double after = 100.0 * n->w / s->t->total;
	double before = s->base->total ? 100.0 * n->bw / s->base->total : 0;

	return after - before;
}

static unsigned int rgb(double r, double g, double b)
{
	return (unsigned int)(r + 0.5) << 16 | (unsigned int)(g + 0.5) << 8 |
	       (unsigned int)(b + 0.5);
}

/* 0 to 1 from the function's name, not its line: one function, one hue. */
static double name_hash(const char *text)
{
	const char *stop = strstr(text, " (");
	uint32_t h = 0;

	for (; *text && text != stop; text++)
		h = h * 31 + (unsigned char)*text;
	return h / 4294967296.0;
}

/*
 * flamegraph.pl's scheme: a hue per kind of code, varied by name so that
 * neighbours differ.  In a differential graph, red for a share that grew
 * and blue for one that shrank, the deeper the more points it moved
 * against the largest move drawn.
 */
static unsigned int box_fill(const struct svg *s, const struct node *n)
{
	double v, d, pale;

	if (s->base) {
		d = share_change(s, n);
		pale = 235 - 190 * (s->max_change > 0 ?
				    (d < 0 ? -d : d) / s->max_change : 0);
		return d > 0 ? rgb(255, pale, pale) :
		       d < 0 ? rgb(pale, pale, 255) :
			       rgb(235, 235, 235);
	}
	v = name_hash(n->text);
	switch (n->kind) {
	case BOX_OWN:
		return rgb(225 + 30 * v, 100 + 80 * v, 40 + 30 * v);
	case BOX_STDLIB:
		return rgb(215 + 30 * v, 185 + 35 * v, 60 + 40 * v);
	case BOX_SITE:
		return rgb(90 + 50 * v, 175 + 45 * v, 80 + 40 * v);
	case BOX_OFFCPU:
		return rgb(90 + 30 * v, 140 + 40 * v, 225 + 30 * v);
	case BOX_KERNEL:
		return rgb(40 + 40 * v, 185 + 30 * v, 185 + 30 * v);
	case BOX_NATIVE:
		return rgb(165 + 30 * v, 120 + 40 * v, 215 + 30 * v);
	default:
		return rgb(170 + 30 * v, 170 + 30 * v, 170 + 30 * v);
	}
}

/* Number the texts of the boxes to be written, depth first, as
 * write_box() meets them; find the deepest, and the largest change. */
static int number_texts(struct svg *s, unsigned int i)
{
	const struct node *n = &s->t->nodes[i];
	unsigned int c, id;
	int err;

	if (n->w < s->min_w || !n->w)
		return 0;
	err = text_id(s, n->text, &id);
	if (n->depth > s->max_depth)
		s->max_depth = n->depth;
	if (s->base && share_change(s, n) > s->max_change)
		s->max_change = share_change(s, n);
	if (s->base && -share_change(s, n) > s->max_change)
		s->max_change = -share_change(s, n);
	for (c = n->child; c && !err; c = s->t->nodes[c].next)
		err = number_texts(s, c);
	return err;
}

static int write_texts(struct svg *s)
{
	const char **texts = calloc(s->nids ? s->nids : 1, sizeof(*texts));
	struct text_id *t, *tmp;
	unsigned int i;

	if (!texts)
		return -ENOMEM;
	HASH_ITER(hh, s->ids, t, tmp)
		texts[t->id] = t->text;
	fputs("var S = [", s->f);
	for (i = 0; i < s->nids; i++) {
		fputs(i ? (i % 8 ? "," : ",\n") : "", s->f);
		js_string(s->f, texts[i]);
	}
	fputs("];\n", s->f);
	free(texts);
	return 0;
}

/*
 * Boxes depth first: depth, x, width, kind, text, fill (0xRRGGBB), and in
 * a differential graph the baseline's weight.  x and width are in the profile's unit;
 * a child is placed after its siblings to the left, written or not, so
 * the boxes not written leave a gap in their parent (its self weight).
 */
static void write_box(struct svg *s, unsigned int i, uint64_t x,
		      unsigned int *count)
{
	const struct node *n = &s->t->nodes[i];
	unsigned int c, id = 0;
	struct text_id *t;

	if (n->w < s->min_w || !n->w)
		return;
	HASH_FIND_PTR(s->ids, &n->text, t);
	if (t)
		id = t->id;
	fprintf(s->f, "%s%d,%" PRIu64 ",%" PRIu64 ",%d,%u,%u", *count ?
		(*count % 8 ? "," : ",\n") : "", n->depth, x, n->w, n->kind, id,
		box_fill(s, n));
	if (s->base)
		fprintf(s->f, ",%" PRIu64, n->bw);
	++*count;
	for (c = n->child; c; c = s->t->nodes[c].next) {
		write_box(s, c, x, count);
		x += s->t->nodes[c].w;
	}
}

static const char svg_script[] =
#include "write_svg.js.h"
	;

static const char svg_style[] =
	"text { font-family: monospace; font-size: 12px; fill: #222; }\n"
	"#title { font-size: 16px; font-weight: bold; }\n"
	"#subtitle { fill: #555; }\n"
	".button { cursor: pointer; fill: #1a5fb4; text-decoration: underline; }\n"
	".button.off { fill: #999; cursor: default; text-decoration: none; }\n"
	"#frames g { cursor: pointer; }\n"
	"#frames text { pointer-events: none; }\n"
	"#frames rect { stroke: #fff; stroke-width: 0.5; }\n"
	"#frames g.anc { opacity: 0.55; }\n"
	"#frames g.match rect { fill: #e040e0; }\n"
	"#frames g:hover rect { stroke: #000; stroke-width: 1; }\n"
	"#tip { pointer-events: none; }\n"
	"#tip rect { fill: #ffffe8; stroke: #555; }\n"
	"input { font: 12px monospace; width: 100%; box-sizing: border-box; }\n";

static void write_title(struct svg *s, struct profile *p)
{
	struct profile_meta *m = profile__meta(p);
	char host[256] = "";
	FILE *f = s->f;

	if (gethostname(host, sizeof(host) - 1))
		host[0] = 0;
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">",
		SVG_WIDTH / 2);
	fputs(s->base ? "Differential flame graph: " : "pysight: ", f);
	xml_text(f, m->target[0] ? m->target : "all Python processes");
	if (host[0]) {
		fputs(" on ", f);
		xml_text(f, host);
	}
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"40\" "
		"text-anchor=\"middle\">", SVG_WIDTH / 2);
	if (m->duration_s > 0)
		fprintf(f, "%.1f s, ", m->duration_s);
	xml_text(f, profile__mode_name(m->mode));
	fputs(" mode", f);
	if (m->rate_hz)
		fprintf(f, " at %.4g Hz", m->rate_hz);
	if (profile__unit(p) == UNIT_NANOSECONDS)
		fprintf(f, ", %.3f s of thread time", s->t->total / 1e9);
	else
		fprintf(f, ", %" PRIu64 " samples", s->t->total);
	if (s->base)
		fputs("; width is AFTER, red grew and blue shrank since BEFORE",
		      f);
	fputs("</text>\n", f);
}

static void write_controls(struct svg *s)
{
	int i, x = 120;
	FILE *f = s->f;

	fputs("<text id=\"reset\" class=\"button off\" x=\"10\" y=\"62\">"
	      "Reset zoom</text>\n", f);
	for (i = 0; i < BOX__MAX && !s->base; i++) {
		fprintf(f, "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"12\" "
			"fill=\"%s\"/><text x=\"%d\" y=\"62\">%s</text>\n", x,
			legend[i].fill, x + 16, legend[i].name);
		/* 7.2 px a character of 12 px monospace, and a gap */
		x += 16 + (int)strlen(legend[i].name) * 8 + 18;
	}
	if (s->base)
		fprintf(f, "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"12\" "
			"fill=\"#ff5050\"/><text x=\"%d\" y=\"62\">grew</text>"
			"<rect x=\"%d\" y=\"52\" width=\"12\" height=\"12\" "
			"fill=\"#5070ff\"/><text x=\"%d\" y=\"62\">shrank</text>\n",
			x, x + 16, x + 80, x + 96);
	fprintf(f, "<foreignObject x=\"%d\" y=\"48\" width=\"200\" height=\"22\">"
		"<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"q\" "
		"type=\"text\" placeholder=\"regex\" spellcheck=\"false\"/>"
		"</foreignObject>\n"
		"<text id=\"search\" class=\"button\" x=\"%d\" y=\"62\">Search</text>\n"
		"<text id=\"clear\" class=\"button off\" x=\"%d\" y=\"62\">Clear</text>\n",
		SVG_WIDTH - 330, SVG_WIDTH - 122, SVG_WIDTH - 56);
}

static int write_svg_doc(struct svg *s, struct profile *p)
{
	int height = FRAMES_TOP + (s->max_depth + 1) * FRAME_HEIGHT + 28;
	unsigned int count = 0;
	FILE *f = s->f;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>\n%s</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
		SVG_WIDTH, height, SVG_WIDTH, height, svg_style);
	write_title(s, p);
	write_controls(s);
	fprintf(f, "<g id=\"frames\"></g>\n"
		"<text id=\"details\" x=\"10\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n"
		"<g id=\"tip\" visibility=\"hidden\"><rect rx=\"3\"/><text/></g>\n",
		height - 10, SVG_WIDTH - 10, height - 10);
	if (!s->t->total)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
			"No samples</text>\n", SVG_WIDTH / 2, FRAMES_TOP + 12);
	/* The script in CDATA for its own operators; the data cannot end
	 * the section (js_string). */
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n"
		"var D = {width: %d, pad: %d, top: %d, frame: %d, maxdepth: %d, "
		"unit: \"%s\", total: %" PRIu64 ", diff: %s, btotal: %" PRIu64 "};\n",
		SVG_WIDTH, SVG_PAD, FRAMES_TOP, FRAME_HEIGHT, s->max_depth,
		profile__unit(p) == UNIT_NANOSECONDS ? "ns" : "samples",
		s->t->total, s->base ? "true" : "false",
		s->base ? s->base->total : 0);
	if (write_texts(s))
		return -ENOMEM;
	fputs("var N = [", f);
	if (s->t->total)
		write_box(s, 0, 0, &count);
	fprintf(f, "];\n%s]]></script>\n</svg>\n", svg_script);
	return ferror(f) ? -EIO : 0;
}

/* One renderer for both graphs: base is the differential's BEFORE. */
static int svg_render(struct profile *p, struct profile *base,
		      const struct write_opts *o, FILE *f)
{
	struct tree t, bt;
	struct svg s = { .f = f, .t = &t };
	int err;

	err = tree_build(&t, p, o);
	if (!err && base) {
		err = tree_build(&bt, base, o);
		if (!err)
			tree_match(&t, 0, &bt, 0);
		s.base = &bt;
	}
	/* a box under one pixel: w / total < 1 / DRAWN_WIDTH */
	s.min_w = (t.total + DRAWN_WIDTH - 1) / DRAWN_WIDTH;
	if (!err && t.total)
		err = number_texts(&s, 0);
	if (!err)
		err = write_svg_doc(&s, p);
	free_ids(&s);
	if (base)
		tree_free(&bt);
	tree_free(&t);
	return err;
}

int svg__write_diff(struct profile *before, struct profile *after,
		    const struct write_opts *o, FILE *f)
{
	return svg_render(after, before, o, f);
}

static int write_svg(struct profile *p, const struct write_opts *o, FILE *f)
{
	return svg_render(p, NULL, o, f);
}

const struct writer writer_svg = {
	.name = "svg",
	.exts = { "svg" },
	.write = write_svg,
};
