// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A frame's local variables, read from another process: each name, and a
 * short repr of simple values, as py-spy's dump --locals shows them.
 * Everything is read with process_vm_readv from a process that runs on,
 * so every object may be half-built, freed or hostile: each read is
 * bounded, and a value that does not check out is shown by its type.
 *
 * The object layouts used here are CPython's stable ABI from 3.8 to 3.15
 * (default builds): a PyObject's type at 8, a PyVarObject's size at 16;
 * a type's tp_name at 24; an int's digits at 24, a float's double and a
 * dict's ma_used at 16.  A tuple's items moved in 3.14 (it caches its
 * hash): py_offsets has where.  An int's size word is
 * ob_size (signed digit count) to 3.11 and lv_tag (digits << 3 | sign)
 * from 3.12; digits hold 30 bits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pylocals.h"
#include "pyobj.h"
#include "remote.h"
#include "symbols.h"

#define OB_SIZE		16
#define FLOAT_VALUE	16
#define DICT_USED	16
#define CO_FAST_LOCAL	0x20	/* co_localspluskinds: a local variable */
#define MAX_NAMES	512	/* locals a code object may declare */

/* An int of up to 64 bits, as text; false when larger or unreadable. */
static bool int_text(pid_t pid, const struct py_proc *proc, uint64_t obj,
		     char *out, size_t len)
{
	uint64_t mag;
	bool neg;

	if (pyobj__int(pid, proc, obj, &mag, &neg))
		return false;
	snprintf(out, len, "%s%" PRIu64, neg ? "-" : "", mag);
	return true;
}

/* A quoted, escaped, shortened text: 'abc...' */
static void quoted(const char *prefix, const uint8_t *s, size_t n, bool utf8,
		   char *out, size_t len)
{
	size_t o = 0, i;

	o += snprintf(out, len, "%s'", prefix);
	for (i = 0; i < n && o + 8 < len; i++) {
		uint8_t c = s[i];

		if (c == '\'' || c == '\\')
			o += snprintf(out + o, len - o, "\\%c", c);
		else if (c >= 0x20 && (c < 0x7f || (utf8 && c >= 0x80)))
			out[o++] = (char)c;
		else
			o += snprintf(out + o, len - o, "\\x%02x", c);
	}
	if (i < n)
		o += snprintf(out + o, len - o, "...");
	snprintf(out + o, len - o, "'");
}

static void value_text(pid_t pid, const struct py_proc *proc, uint64_t obj,
		       char *out, size_t len)
{
	char type[64];
	uint64_t size;
	uint8_t *bytes;
	size_t blen;
	double d;
	char *s;

	if (!pyobj__type_name(pid, obj, type, sizeof(type))) {
		snprintf(out, len, "<unreadable at 0x%" PRIx64 ">", obj);
		return;
	}
	if (!strcmp(type, "NoneType")) {
		snprintf(out, len, "None");
	} else if (!strcmp(type, "bool") && int_text(pid, proc, obj, out, len)) {
		snprintf(out, len, "%s", strcmp(out, "0") ? "True" : "False");
	} else if (!strcmp(type, "int") && int_text(pid, proc, obj, out, len)) {
		/* done */
	} else if (!strcmp(type, "float") &&
		   !remote__read(pid, obj + FLOAT_VALUE, &d, sizeof(d))) {
		snprintf(out, len, "%.17g", d);
	} else if (!strcmp(type, "str") &&
		   (s = symbols__read_str(pid, proc, obj))) {
		quoted("", (uint8_t *)s, strlen(s), true, out, len);
		free(s);
	} else if (!strcmp(type, "bytes") &&
		   !symbols__read_bytes(pid, proc, obj, &bytes, &blen)) {
		quoted("b", bytes, blen, false, out, len);
		free(bytes);
	} else if ((!strcmp(type, "list") || !strcmp(type, "tuple")) &&
		   !remote__read64(pid, obj + OB_SIZE, &size) &&
		   size < (1ULL << 40)) {
		snprintf(out, len, "<%s of %" PRIu64 ">", type, size);
	} else if (!strcmp(type, "dict") &&
		   !remote__read64(pid, obj + DICT_USED, &size) &&
		   size < (1ULL << 40)) {
		snprintf(out, len, "<dict of %" PRIu64 ">", size);
	} else {
		snprintf(out, len, "<%s at 0x%" PRIx64 ">", type, obj);
	}
}

/* Which of the code's names are locals: n of them, flags in is_local. */
static int local_slots(pid_t pid, const struct py_proc *proc, uint64_t code,
		       uint64_t names, bool *is_local, int n)
{
	const struct py_offsets *off = &proc->off;
	uint8_t *kinds;
	size_t klen;
	int32_t nlocals;
	uint64_t k;
	int i;

	if (off->code_nlocals != PY_OFF_NONE) {
		if (remote__read(pid, code + off->code_nlocals, &nlocals,
				 sizeof(nlocals)) || nlocals < 0)
			return -EFAULT;
		for (i = 0; i < n; i++)
			is_local[i] = i < nlocals;
		return 0;
	}
	(void)names;
	if (off->code_localskinds == PY_OFF_NONE ||
	    remote__read64(pid, code + off->code_localskinds, &k) ||
	    symbols__read_bytes(pid, proc, k, &kinds, &klen))
		return -EFAULT;
	for (i = 0; i < n; i++)
		is_local[i] = (size_t)i < klen && (kinds[i] & CO_FAST_LOCAL);
	free(kinds);
	return 0;
}

int pylocals__read(pid_t pid, const struct py_proc *proc, uint64_t frame,
		   uint64_t code, struct pylocal *out, int max)
{
	const struct py_offsets *off = &proc->off;
	bool is_local[MAX_NAMES];
	uint64_t names, n, name, value;
	int i, got = 0;
	char *s;

	if (off->frame_localsplus == PY_OFF_NONE ||
	    off->code_varnames == PY_OFF_NONE || !off->tuple_items ||
	    off->tuple_items == PY_OFF_NONE)
		return -ENOTSUP;
	if (remote__read64(pid, code + off->code_varnames, &names) ||
	    remote__read64(pid, names + OB_SIZE, &n))
		return -EFAULT;
	if (n > MAX_NAMES)
		n = MAX_NAMES;
	if (local_slots(pid, proc, code, names, is_local, (int)n))
		return -EFAULT;
	for (i = 0; i < (int)n && got < max; i++) {
		if (!is_local[i] ||
		    remote__read64(pid, names + off->tuple_items +
				   8 * (uint64_t)i, &name) ||
		    remote__read64(pid, frame + off->frame_localsplus +
				   8 * (uint64_t)i, &value))
			continue;
		value &= off->code_tag_mask;	/* 3.14+: tagged references */
		if (!value)
			continue;		/* not bound yet */
		s = symbols__read_str(pid, proc, name);
		snprintf(out[got].name, sizeof(out[got].name), "%s",
			 s ? s : "?");
		free(s);
		value_text(pid, proc, value, out[got].value,
			   sizeof(out[got].value));
		got++;
	}
	return got;
}
