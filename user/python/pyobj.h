/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython objects of another process, read for what the stack alone does
 * not say: a dict's entries, a module's globals, an instance's attributes
 * and small ints.  Every read is bounded and every object is checked, for
 * the process runs on and may be hostile.
 */
#ifndef __PYSIGHT_PYOBJ_H
#define __PYSIGHT_PYOBJ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysight.h"

/* Does pysight know how this interpreter lays out dicts and instances? */
bool pyobj__supported(const struct py_proc *proc);

/*
 * Calls fn for each entry of the dict at dict, in insertion order, until
 * it returns non-zero or max entries have been seen.  Returns what fn
 * returned last (0 when it never stopped), or -errno: -EFAULT when the
 * dict cannot be read or does not look like one, -ENOTSUP for an
 * interpreter whose layout pysight does not know.
 */
typedef int (*pyobj_item_fn)(uint64_t key, uint64_t value, void *ctx);
int pyobj__dict_items(pid_t pid, const struct py_proc *proc, uint64_t dict,
		      unsigned int max, pyobj_item_fn fn, void *ctx);

/* The attribute name of the object at obj, as its __dict__ (or the inline
 * values that stand for it) holds it: 0, -ENOENT when it has none (or not
 * among the first *left attributes), or -errno as pyobj__dict_items.  The
 * attributes looked through are counted off *left: a caller that reads
 * many objects bounds them all with one budget. */
int pyobj__attr(pid_t pid, const struct py_proc *proc, uint64_t obj,
		const char *name, uint64_t *value, unsigned int *left);

/* The value under the str key of the dict at dict: 0, -ENOENT, or
 * -errno as pyobj__dict_items. */
int pyobj__dict_get(pid_t pid, const struct py_proc *proc, uint64_t dict,
		    const char *key, uint64_t *value);

/* Is the type object at type base, or a subclass of it (through tp_base,
 * at most a few deep)?  1, with type's tp_basicsize, 0, or -EFAULT. */
int pyobj__type_is(pid_t pid, uint64_t type, uint64_t base,
		   uint64_t *basicsize);

/* A global of the module sys.modules[module] of the main interpreter;
 * errors as pyobj__attr. */
int pyobj__module_global(pid_t pid, const struct py_proc *proc,
			 const char *module, const char *name,
			 uint64_t *value);

/* An int (or bool) of up to 64 bits of magnitude: 0, or -EFAULT when it
 * is not one, is larger or cannot be read. */
int pyobj__int(pid_t pid, const struct py_proc *proc, uint64_t obj,
	       uint64_t *mag, bool *neg);

/* The name of the object's type (tp_name): printable ASCII, else false. */
bool pyobj__type_name(pid_t pid, uint64_t obj, char *buf, size_t len);
/* The same, of the type object at type. */
bool pyobj__type_name_of(pid_t pid, uint64_t type, char *buf, size_t len);

#endif /* __PYSIGHT_PYOBJ_H */
