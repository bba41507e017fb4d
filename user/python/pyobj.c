// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Dicts, modules, instance attributes and ints of another process.
 *
 * What every default build from 3.8 to 3.15 shares: a PyObject's type at
 * 8, a PyVarObject's size at 16; a type's tp_name at 24, tp_basicsize at
 * 32, tp_flags at 168 and tp_dictoffset at 288; a dict's ma_used at 16,
 * ma_keys at 32 and ma_values at 40; a module's md_dict at 16; an int's
 * digits at 24, 30 bits each.
 *
 * What changed, per minor (the table below, from each version's headers:
 * Objects/dict-common.h up to 3.10, Include/internal/pycore_dict.h after):
 *   - dict keys: to 3.10, dk_size at 8, dk_nentries at 32, the index at
 *     40 in bytes of 1, 2, 4 or 8 by size, then entries {hash, key,
 *     value}.  From 3.11, as pysight.h's PY_KEYS_* say.
 *   - split tables keep values apart, in ma_values: PyDictValues, whose
 *     array starts at 0, or at 8 from 3.13 (capacity, size, embedded and
 *     valid bytes go first).
 *   - an instance's attributes: to 3.10 a dict at tp_dictoffset.  Types
 *     with Py_TPFLAGS_MANAGED_DICT (3.11+) keep them before the object:
 *     3.11 a dict pointer at -24 and a values pointer at -32; 3.12 one
 *     word at -24, the dict or (bit 0 set) the values pointer minus one;
 *     3.13+ the dict at -24, and with Py_TPFLAGS_INLINE_VALUES the values
 *     inline at tp_basicsize, used while their valid byte is set.  Values
 *     without a dict are keyed by the type's ht_cached_keys.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pyobj.h"
#include "remote.h"

#define OB_TYPE		8
#define OB_SIZE		16
#define TP_NAME		24
#define TP_BASICSIZE	32
#define TP_FLAGS	168
#define TP_BASE		256
#define TP_DICTOFFSET	288
#define TYPE_HEAD	296	/* bytes of a type read at once */
#define DICT_USED	16
#define DICT_VALUES	40
#define MODULE_DICT	16
#define LONG_DIGITS	24

#define F_INLINE_VALUES		(1UL << 2)	/* 3.13+ */
#define F_MANAGED_DICT		(1UL << 4)	/* 3.11+ */
#define F_LONG_SUBCLASS		(1UL << 24)
#define F_DICT_SUBCLASS		(1UL << 29)

#define MAX_ENTRIES	(1u << 16)	/* entries looked through for a global */
#define CHUNK		128		/* entries read at once */
#define MAX_INTERPS	64
#define MAX_BASES	16	/* a type's bases looked through */

enum managed { MANAGED_NONE, MANAGED_311, MANAGED_312, MANAGED_313 };

struct layout {
	int minor;
	bool log2_keys;		/* 3.11+ keys header */
	uint16_t cached_keys;	/* PyHeapTypeObject.ht_cached_keys */
	uint8_t values_array;	/* PyDictValues.values */
	uint8_t managed;	/* enum managed */
};

static const struct layout layouts[] = {
	{ 8, false, 872, 0, MANAGED_NONE },
	{ 9, false, 864, 0, MANAGED_NONE },
	{ 10, false, 872, 0, MANAGED_NONE },
	{ 11, true, 872, 0, MANAGED_311 },
	{ 12, true, 880, 0, MANAGED_312 },
	{ 13, true, 880, 8, MANAGED_313 },
	{ 14, true, 880, 8, MANAGED_313 },
	{ 15, true, 888, 8, MANAGED_313 },
};

static const struct layout *layout_of(const struct py_proc *proc)
{
	int minor = (proc->off.version_hex >> 16) & 0xff;
	unsigned int i;

	if ((proc->off.version_hex >> 24) != 3)
		return NULL;
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

bool pyobj__supported(const struct py_proc *proc)
{
	return layout_of(proc) && proc->unicode_type_addr &&
	       proc->off.unicode_ascii_data != PY_OFF_NONE;
}

/* The first TYPE_HEAD bytes of the object's type. */
static int read_type(pid_t pid, uint64_t obj, uint64_t *type, uint8_t *head)
{
	if (remote__read64(pid, obj + OB_TYPE, type))
		return -EFAULT;
	return remote__read(pid, *type, head, TYPE_HEAD) ? -EFAULT : 0;
}

bool pyobj__type_name(pid_t pid, uint64_t obj, char *buf, size_t len)
{
	uint64_t type;

	return !remote__read64(pid, obj + OB_TYPE, &type) &&
	       pyobj__type_name_of(pid, type, buf, len);
}

bool pyobj__type_name_of(pid_t pid, uint64_t type, char *buf, size_t len)
{
	uint64_t name;
	size_t i;

	if (remote__read64(pid, type + TP_NAME, &name))
		return false;
	memset(buf, 0, len);
	/* the name may end near the end of a mapping: shorter reads too */
	while (len > 8 && remote__read(pid, name, buf, len - 1))
		len /= 2;
	buf[len - 1] = 0;
	for (i = 0; buf[i]; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return false;
	return i > 0;
}

/* Is the object at obj a str equal to s? (ASCII s, checked in one read) */
static bool str_is(pid_t pid, const struct py_proc *proc, uint64_t obj,
		   const char *s)
{
	const struct py_offsets *off = &proc->off;
	size_t n = strlen(s), data = off->unicode_ascii_data;
	uint8_t buf[160];
	uint32_t state;

	if (data == PY_OFF_NONE || data + n > sizeof(buf) ||
	    off->unicode_length + 8u > data || off->unicode_state + 4u > data ||
	    remote__read(pid, obj, buf, data + n))
		return false;
	state = remote__u32(buf, sizeof(buf), off->unicode_state);
	/* compact, ASCII, one byte a character */
	return remote__u64(buf, sizeof(buf), OB_TYPE) ==
		       proc->unicode_type_addr &&
	       (state & 0x7c) == 0x64 &&
	       remote__u64(buf, sizeof(buf), off->unicode_length) == n &&
	       !memcmp(buf + data, s, n);
}

int pyobj__int(pid_t pid, const struct py_proc *proc, uint64_t obj,
	       uint64_t *mag, bool *neg)
{
	uint8_t head[TYPE_HEAD];
	uint64_t type, word, m = 0;
	uint32_t digits[3];
	int64_t size;
	int n, i;

	*mag = 0;
	*neg = false;
	if (read_type(pid, obj, &type, head) ||
	    !(remote__u64(head, sizeof(head), TP_FLAGS) & F_LONG_SUBCLASS) ||
	    remote__read64(pid, obj + OB_SIZE, &word))
		return -EFAULT;
	if (proc->off.version_hex >= 0x030c0000) {
		/* lv_tag: digits << 3, then 0 positive, 1 zero, 2 negative */
		n = (word & 3) == 1 ? 0 : (int)(word >> 3 > 3 ? 4 : word >> 3);
		*neg = (word & 3) == 2;
	} else {
		size = (int64_t)word;
		*neg = size < 0;
		/* INT64_MIN, which a target may write, has no negation */
		n = size < -3 || size > 3 ? 4 : (int)(*neg ? -size : size);
	}
	if (n > 3 ||
	    (n && remote__read(pid, obj + LONG_DIGITS, digits, n * 4)))
		return -EFAULT;
	for (i = n - 1; i >= 0; i--) {
		if (digits[i] >> 30 || (i == 2 && digits[i] > 0xf))
			return -EFAULT;
		m = m << 30 | digits[i];
	}
	*mag = m;
	return 0;
}

/* Where a keys object's entries are, and how to read them. */
struct entries {
	uint64_t at;		/* entry 0 */
	uint64_t n;		/* entries used so far (dk_nentries) */
	uint64_t values;	/* split table: values[0], else 0 */
	uint32_t size;		/* bytes an entry */
	uint32_t key, value;	/* their offsets in an entry */
};

static int index_bytes(uint64_t size)
{
	return size <= 0xff ? 1 : size <= 0xffff ? 2 :
	       size <= 0xffffffffULL ? 4 : 8;
}

static int entries_of(pid_t pid, const struct layout *l, uint64_t keys,
		      struct entries *e)
{
	uint8_t h[40];
	uint64_t size;

	memset(e, 0, sizeof(*e));
	if (remote__read(pid, keys, h, sizeof(h)))
		return -EFAULT;
	if (!l->log2_keys) {
		size = remote__u64(h, sizeof(h), 8);
		e->n = remote__u64(h, sizeof(h), 32);
		if (size < 8 || size > (1u << 26) || (size & (size - 1)))
			return -EFAULT;
		e->at = keys + 40 + size * index_bytes(size);
		e->size = 24;
		e->key = 8;
		e->value = 16;
	} else {
		uint8_t log2 = h[PY_KEYS_LOG2_SIZE];
		uint8_t log2_index = h[PY_KEYS_LOG2_INDEX];
		uint8_t kind = h[PY_KEYS_KIND];

		if (!pysight_keys_ok(log2, log2_index, kind))
			return -EFAULT;
		size = 1ULL << log2;
		e->n = remote__u64(h, sizeof(h), PY_KEYS_NENTRIES);
		e->at = keys + PY_KEYS_INDEX + (1ULL << log2_index);
		e->size = pysight_keys_entry(kind);
		e->key = kind ? 0 : 8;
		e->value = kind ? 8 : 16;
	}
	return e->n > size ? -EFAULT : 0;
}

/* fn over the entries: stops at fn's non-zero, or when *left entries
 * have been looked through, each counted off *left */
static int walk(pid_t pid, const struct entries *e, unsigned int *left,
		pyobj_item_fn fn, void *ctx)
{
	uint8_t buf[CHUNK * 24];
	uint64_t vals[CHUNK], i, j;
	int ret;

	for (i = 0; i < e->n && *left; i += CHUNK) {
		uint64_t k = e->n - i < CHUNK ? e->n - i : CHUNK;

		if (k > *left)
			k = *left;
		if (remote__read(pid, e->at + i * e->size, buf, k * e->size) ||
		    (e->values &&
		     remote__read(pid, e->values + i * 8, vals, k * 8)))
			return -EFAULT;
		for (j = 0; j < k; j++) {
			size_t at = j * e->size;
			uint64_t key = remote__u64(buf, sizeof(buf), at + e->key);
			uint64_t value = e->values ? vals[j] :
				remote__u64(buf, sizeof(buf), at + e->value);

			(*left)--;
			/* free slots and deleted entries have no value */
			if (!key || !value)
				continue;
			ret = fn(key, value, ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* The dict at dict, checked to be one: its entries. */
static int dict_entries(pid_t pid, const struct py_proc *proc,
			uint64_t dict, struct entries *e)
{
	const struct layout *l = layout_of(proc);
	uint8_t head[TYPE_HEAD], d[48];
	uint64_t type, values;

	if (!l)
		return -ENOTSUP;
	if (read_type(pid, dict, &type, head) ||
	    !(remote__u64(head, sizeof(head), TP_FLAGS) & F_DICT_SUBCLASS) ||
	    remote__read(pid, dict, d, sizeof(d)) ||
	    entries_of(pid, l, remote__u64(d, sizeof(d), PY_DICT_KEYS), e))
		return -EFAULT;
	values = remote__u64(d, sizeof(d), DICT_VALUES);
	if (values)
		e->values = values + l->values_array;
	return 0;
}

int pyobj__dict_items(pid_t pid, const struct py_proc *proc, uint64_t dict,
		      unsigned int max, pyobj_item_fn fn, void *ctx)
{
	struct entries e;
	int err = dict_entries(pid, proc, dict, &e);

	return err ? err : walk(pid, &e, &max, fn, ctx);
}

struct find {
	pid_t pid;
	const struct py_proc *proc;
	const char *key;
	uint64_t value;
};

static int match(uint64_t key, uint64_t value, void *ctx)
{
	struct find *f = ctx;

	if (!str_is(f->pid, f->proc, key, f->key))
		return 0;
	f->value = value;
	return 1;
}

static int find_in(pid_t pid, const struct py_proc *proc,
		   const struct entries *e, const char *key, uint64_t *value,
		   unsigned int *left)
{
	struct find f = { pid, proc, key, 0 };
	int ret = walk(pid, e, left, match, &f);

	*value = f.value;
	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

/* The value under the str key, looking through at most *left entries:
 * 0, -ENOENT when absent, or -errno. */
static int dict_get(pid_t pid, const struct py_proc *proc, uint64_t dict,
		    const char *key, uint64_t *value, unsigned int *left)
{
	struct entries e;
	int err = dict_entries(pid, proc, dict, &e);

	*value = 0;
	return err ? err : find_in(pid, proc, &e, key, value, left);
}

int pyobj__dict_get(pid_t pid, const struct py_proc *proc, uint64_t dict,
		    const char *key, uint64_t *value)
{
	unsigned int left = MAX_ENTRIES;

	return layout_of(proc) ? dict_get(pid, proc, dict, key, value, &left) :
				 -ENOTSUP;
}

int pyobj__type_is(pid_t pid, uint64_t type, uint64_t base,
		   uint64_t *basicsize)
{
	uint64_t t = type;
	int i;

	for (i = 0; t && i < MAX_BASES; i++) {
		if (t == base)
			return remote__read64(pid, type + TP_BASICSIZE,
					      basicsize) ? -EFAULT : 1;
		if (remote__read64(pid, t + TP_BASE, &t))
			return -EFAULT;
	}
	return 0;
}

/* Values kept without a dict, keyed by the type's shared keys. */
static int values_get(pid_t pid, const struct py_proc *proc,
		      const struct layout *l, uint64_t type, uint64_t values,
		      const char *name, uint64_t *value, unsigned int *left)
{
	struct entries e;
	uint64_t keys;

	if (remote__read64(pid, type + l->cached_keys, &keys) ||
	    entries_of(pid, l, keys, &e))
		return -EFAULT;
	e.values = values + l->values_array;
	return find_in(pid, proc, &e, name, value, left);
}

int pyobj__attr(pid_t pid, const struct py_proc *proc, uint64_t obj,
		const char *name, uint64_t *value, unsigned int *left)
{
	const struct layout *l = layout_of(proc);
	uint8_t head[TYPE_HEAD];
	uint64_t type, flags, dict, word;
	int64_t dictoffset;
	uint8_t valid;

	*value = 0;
	if (!l)
		return -ENOTSUP;
	if (obj < 32 || read_type(pid, obj, &type, head))
		return -EFAULT;
	flags = remote__u64(head, sizeof(head), TP_FLAGS);
	if (l->managed == MANAGED_NONE || !(flags & F_MANAGED_DICT)) {
		dictoffset = (int64_t)remote__u64(head, sizeof(head),
						  TP_DICTOFFSET);
		/* a negative offset counts from a variable-size object's end */
		if (dictoffset <= 0 || dictoffset > (1 << 20) ||
		    remote__read64(pid, obj + dictoffset, &dict) || !dict)
			return -ENOENT;
		return dict_get(pid, proc, dict, name, value, left);
	}
	if (remote__read64(pid, obj - 24, &word))
		return -EFAULT;
	switch (l->managed) {
	case MANAGED_311:
		if (word)
			return dict_get(pid, proc, word, name, value, left);
		if (remote__read64(pid, obj - 32, &word) || !word)
			return -ENOENT;
		return values_get(pid, proc, l, type, word, name, value,
				  left);
	case MANAGED_312:
		if (word & 1)
			return values_get(pid, proc, l, type, word + 1, name,
					  value, left);
		return word ? dict_get(pid, proc, word, name, value, left) :
			      -ENOENT;
	default:
		if (word)
			return dict_get(pid, proc, word, name, value, left);
		if (!(flags & F_INLINE_VALUES))
			return -ENOENT;
		word = obj + remote__u64(head, sizeof(head), TP_BASICSIZE);
		if (remote__read(pid, word + 3, &valid, 1))
			return -EFAULT;
		if (!valid)
			return -ENOENT;
		return values_get(pid, proc, l, type, word, name, value,
				  left);
	}
}

int pyobj__module_global(pid_t pid, const struct py_proc *proc,
			 const char *module, const char *name,
			 uint64_t *value)
{
	const struct py_offsets *off = &proc->off;
	uint64_t interp, next, modules, mod, dict;
	unsigned int left = MAX_ENTRIES;	/* of both dicts */
	char type[16];
	int i, err;

	*value = 0;
	if (!layout_of(proc) || off->interp_modules == PY_OFF_NONE ||
	    !off->interp_modules)
		return -ENOTSUP;
	/* interpreters are pushed on the list: the main one is the last */
	if (remote__read64(pid, proc->runtime_addr +
			   off->runtime_interpreters_head, &interp) || !interp)
		return -EFAULT;
	for (i = 0; i < MAX_INTERPS; i++) {
		if (remote__read64(pid, interp + off->interp_next, &next))
			return -EFAULT;
		if (!next)
			break;
		interp = next;
	}
	if (remote__read64(pid, interp + off->interp_modules, &modules) ||
	    !modules)
		return -ENOENT;
	err = dict_get(pid, proc, modules, module, &mod, &left);
	if (err)
		return err;
	if (!pyobj__type_name(pid, mod, type, sizeof(type)) ||
	    strcmp(type, "module") ||
	    remote__read64(pid, mod + MODULE_DICT, &dict))
		return -EFAULT;
	return dict_get(pid, proc, dict, name, value, &left);
}
