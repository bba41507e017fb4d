/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Kernel addresses to function names, from /proc/kallsyms. */
#ifndef __PYSIGHT_KSYMS_H
#define __PYSIGHT_KSYMS_H

#include <stdint.h>

struct ksyms;

struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *k);
/* The function containing addr, or NULL. */
const char *ksyms__name(const struct ksyms *k, uint64_t addr);

#endif /* __PYSIGHT_KSYMS_H */
