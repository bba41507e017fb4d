/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A native binary's function names by address, for --native frames:
 * from .symtab, else .dynsym; C++ and Rust names demangled (libiberty),
 * and every name escaped (utf8__escape), since the binary is the
 * target's and may say anything.
 */
#ifndef __PYSIGHT_NSYMS_H
#define __PYSIGHT_NSYMS_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct nsyms;

/* ef's functions: 0, -ENOENT when it has no symbol table (they can come
 * from a debug file instead), -ENOMEM. */
int nsyms__load(struct elf_file *ef, struct nsyms **out);

/* The function whose [value, value + size) holds vaddr (the binary's own
 * address), its start in *start; NULL when none does. */
const char *nsyms__name(const struct nsyms *s, uint64_t vaddr,
			uint64_t *start);

/* The function of that name (as escaped and demangled): its [start,
 * end) in *start and *end, 0; -ENOENT when there is none. */
int nsyms__find(const struct nsyms *s, const char *name, uint64_t *start,
		uint64_t *end);

/* How many functions, and the bytes they take. */
size_t nsyms__count(const struct nsyms *s);
size_t nsyms__bytes(const struct nsyms *s);

void nsyms__free(struct nsyms *s);

#endif /* __PYSIGHT_NSYMS_H */
