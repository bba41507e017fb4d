// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms.h"

struct ksym {
	uint64_t addr;
	char *name;
};

struct ksyms {
	struct ksym *syms;
	size_t n, cap;
};

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add(struct ksyms *k, uint64_t addr, const char *name)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 65536;
		struct ksym *s = realloc(k->syms, cap * sizeof(*s));

		if (!s)
			return -1;
		k->syms = s;
		k->cap = cap;
	}
	k->syms[k->n].addr = addr;
	k->syms[k->n].name = strdup(name);
	return k->syms[k->n++].name ? 0 : -1;
}

struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	char line[512], name[256], type;
	unsigned long long addr;
	FILE *f;

	if (!k)
		return NULL;
	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f) {
		free(k);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 ||
		    !addr || (type != 't' && type != 'T'))
			continue;
		if (add(k, addr, name)) {
			fclose(f);
			ksyms__free(k);
			return NULL;
		}
	}
	fclose(f);
	qsort(k->syms, k->n, sizeof(*k->syms), by_addr);
	return k;
}

void ksyms__free(struct ksyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->n; i++)
		free(k->syms[i].name);
	free(k->syms);
	free(k);
}

const char *ksyms__name(const struct ksyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	/* the last symbol at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? k->syms[lo - 1].name : NULL;
}
