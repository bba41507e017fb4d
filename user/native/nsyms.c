// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>

#include "arena.h"
#include "elffile.h"
#include "nsyms.h"
#include "utf8.h"

/* a name longer than this is cut: a template's can run to kilobytes */
#define NAME_MAX_LEN	512
/* functions kept per binary, the bytes of their names, and the bytes of
 * mangled names given to the demangler: a hostile table of 4 Mi symbols
 * sharing one 4 KiB name would otherwise cost 2 GiB and minutes */
#define NSYMS_MAX	(4u << 20)
#define NAMES_MAX	(128u << 20)
#define DEMANGLE_BUDGET	(64u << 20)
/* a mangled name longer than this is shown mangled */
#define DEMANGLE_MAX	4096

struct nsym {
	uint64_t start, end;
	const char *name;
};

struct nsyms {
	struct nsym *v;
	size_t n, cap;
	struct arena names;
	size_t name_bytes, demangled_bytes;
};

/* C++ (_Z) and Rust (_R, and the legacy _ZN...17h<hash>E) names read as
 * their source spells them, without parameter lists or Rust's hash: a
 * flame graph's frame is a function, and these are what users grep. */
static char *demangled(const char *name)
{
	/* a hostile binary's name: the demangler recurses on it, and
	 * nothing a compiler writes for a function is this long */
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') ||
	    strnlen(name, DEMANGLE_MAX + 1) > DEMANGLE_MAX)
		return NULL;
	return cplus_demangle(name, DMGL_AUTO | DMGL_ANSI);
}

static int add(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct nsyms *s = ctx;
	char buf[NAME_MAX_LEN], *dm, *copy, *at;
	size_t len;

	if (value + size < value)
		return 0;
	if (s->n == NSYMS_MAX || s->name_bytes > NAMES_MAX)
		return 1;	/* a hostile table: the first ones stand */
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct nsym *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	dm = NULL;
	if (s->demangled_bytes < DEMANGLE_BUDGET) {
		s->demangled_bytes += strnlen(name, DEMANGLE_MAX + 1);
		dm = demangled(name);
	}
	utf8__escape(buf, sizeof(buf), dm ? dm : name);
	free(dm);
	/* a versioned name (clock_nanosleep@@GLIBC_2.17, in a .symtab)
	 * reads as the function the source calls */
	at = buf[0] != '@' ? strchr(buf, '@') : NULL;
	if (at)
		*at = 0;
	len = strlen(buf) + 1;
	copy = arena__alloc(&s->names, len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	s->name_bytes += len;
	s->v[s->n++] = (struct nsym){ value, value + size, copy };
	return 0;
}

static size_t underscores(const char *s)
{
	return strspn(s, "_");
}

/*
 * By start; at one start the longer first (an alias of a part comes
 * after the whole), then the name a user calls it by: libc's read() is
 * also __read and __libc_read, so fewer leading underscores, then the
 * shorter, then by bytes, so the file's order never decides.
 */
static int cmp(const void *a, const void *b)
{
	const struct nsym *x = a, *y = b;
	size_t ux, uy, lx, ly;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	ux = underscores(x->name);
	uy = underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

int nsyms__load(struct elf_file *ef, struct nsyms **out)
{
	struct nsyms *s = calloc(1, sizeof(*s));
	size_t i, n = 0;
	int err;

	if (!s)
		return -ENOMEM;
	err = elffile__each_function(ef, add, s);
	if (err > 0)
		err = 0;	/* stopped at NSYMS_MAX */
	if (err) {
		nsyms__free(s);
		return err;
	}
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp);
	for (i = 0; i < s->n; i++)	/* one name per start */
		if (!n || s->v[n - 1].start != s->v[i].start)
			s->v[n++] = s->v[i];
	s->n = n;
	*out = s;
	return 0;
}

const char *nsyms__name(const struct nsyms *s, uint64_t vaddr,
			uint64_t *start)
{
	size_t lo = 0, hi, i, look;

	if (!s || !s->n || vaddr < s->v[0].start)
		return NULL;
	hi = s->n;
	while (hi - lo > 1) {	/* v[lo].start <= vaddr < v[hi].start */
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].start <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	/* a nested one (a cold part inside its caller's range) is nearest;
	 * else an enclosing one a few entries back */
	for (i = lo, look = 0; look < 8; look++, i--) {
		if (vaddr < s->v[i].end) {
			if (start)
				*start = s->v[i].start;
			return s->v[i].name;
		}
		if (!i)
			break;
	}
	return NULL;
}

int nsyms__find(const struct nsyms *s, const char *name, uint64_t *start,
		uint64_t *end)
{
	size_t i;

	for (i = 0; s && i < s->n; i++) {
		if (!strcmp(s->v[i].name, name)) {
			*start = s->v[i].start;
			*end = s->v[i].end;
			return 0;
		}
	}
	return -ENOENT;
}

size_t nsyms__count(const struct nsyms *s)
{
	return s ? s->n : 0;
}

size_t nsyms__bytes(const struct nsyms *s)
{
	return s ? s->n * sizeof(*s->v) + s->name_bytes : 0;
}

void nsyms__free(struct nsyms *s)
{
	if (!s)
		return;
	free(s->v);
	arena__free(&s->names);
	free(s);
}
