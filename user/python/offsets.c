// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Per-version CPython facts.  3.8-3.12 come from the generated table; 3.13+
 * from the _Py_DebugOffsets the interpreter carries at the start of
 * _PyRuntime, read with the layout the generator recorded for each minor.
 * Those bytes come from a file we do not control, so every value is
 * bounds-checked before it reaches the BPF side.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "errmsg.h"
#include "offsets.h"
#include "remote.h"

#define DEBUG_COOKIE		"xdebugpy"
#define DEBUG_COOKIE_LEN	8
#define DEBUG_FIRST_MINOR	13	/* _Py_DebugOffsets appeared in 3.13 */
#define DEBUG_HEADER_LEN	24	/* cookie, version, free_threaded */

/* Plausible struct sizes; far wider than any release, tight enough for junk. */
#define BIG_STRUCT_MAX	(16u << 20)	/* runtime, interpreter state */
#define TSTATE_MAX	65536u
#define FRAME_MAX	1024u
#define CODE_MAX	4096u
#define SMALL_OBJ_MAX	256u		/* bytes and str objects */

/* PyObject is { ob_refcnt, ob_type } in every release build of 3.13+
 * (free-threaded builds are refused above); _Py_DebugOffsets does not
 * carry it, the generated header facts check it. */
#define PYOBJECT_TYPE	8

static unsigned int field_end(__u16 off, unsigned int width)
{
	return off == PY_OFF_NONE ? 0 : off + width;
}

/* The facts computed from the others, whatever their source. */
static void derive(struct py_offsets *o)
{
	unsigned int n = field_end(o->frame_previous, 8);

	if (field_end(o->frame_code, 8) > n)
		n = field_end(o->frame_code, 8);
	if (field_end(o->frame_instr, 8) > n)
		n = field_end(o->frame_instr, 8);
	if (field_end(o->frame_owner, 1) > n)
		n = field_end(o->frame_owner, 1);
	o->frame_read_len = n < PYSIGHT_FRAME_WINDOW ? n : PYSIGHT_FRAME_WINDOW;
	/* 3.11's _PyInterpreterFrame ends "bool is_entry; char owner;":
	 * the one release whose eval loop marks its first frame so */
	o->frame_is_entry = PY_OFF_NONE;
	if (((o->version_hex >> 16) & 0xff) == 11 &&
	    o->frame_owner != PY_OFF_NONE && o->frame_owner > 0)
		o->frame_is_entry = o->frame_owner - 1;
}

int offsets__from_table(int major, int minor, struct py_offsets *out)
{
	unsigned int i;

	if (major != 3)
		return -ENOENT;
	for (i = 0; i < offsets_table_len; i++) {
		if (((offsets_table[i].version_hex >> 16) & 0xff) ==
		    (unsigned int)minor) {
			*out = offsets_table[i];
			derive(out);
			return 0;
		}
	}
	return -ENOENT;
}

/* The values read out of _Py_DebugOffsets, one per layout position. */
struct debug_vals {
	__u64 runtime_size, runtime_interpreters_head;
	__u64 interp_size, interp_next, interp_threads_head;
	__u64 tstate_size, tstate_prev, tstate_next, tstate_thread_id;
	__u64 tstate_native_thread_id, tstate_current_frame;
	__u64 tstate_datastack_chunk;
	__u64 frame_size, frame_previous, frame_executable;
	__u64 frame_instr_ptr, frame_owner;
	__u64 code_size, code_filename, code_name, code_qualname;
	__u64 code_linetable, code_firstlineno, code_adaptive;
	__u64 code_localsplusnames, code_localspluskinds, frame_localsplus;
	__u64 tuple_items;
	__u64 bytes_size, bytes_ob_size, bytes_ob_sval;
	__u64 unicode_size, unicode_state, unicode_length;
	__u64 unicode_ascii_size, unicode_compact_size;
	__u64 interp_ceval_gil, interp_gil_state;
	__u64 interp_gil_locked, interp_gil_holder;
	__u64 gil_size;
	__u64 interp_modules;
	/* 3.14+: what reading a coroutine needs (0 in older layouts) */
	__u64 gen_size, gen_iframe, gen_frame_state, frame_stackpointer;
	__u64 set_size, set_used, set_table, set_mask;
};

/* A first-failure reason, so the caller can print one line. */
struct verdict {
	char why[128];
	bool bad;
};

static void fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->bad)
		return;
	v->bad = true;
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
}

static const struct offsets_debug_layout *find_layout(int minor, bool *guess)
{
	const struct offsets_debug_layout *newest = NULL;
	unsigned int i;

	for (i = 0; i < offsets_debug_layouts_len; i++) {
		const struct offsets_debug_layout *l;

		l = &offsets_debug_layouts[i];
		if (l->minor == minor) {
			*guess = false;
			return l;
		}
		if (!newest || l->minor > newest->minor)
			newest = l;
	}
	/* A newer release: try the newest layout we know, on probation. */
	if (newest && minor > newest->minor) {
		*guess = true;
		return newest;
	}
	return NULL;
}

static void read_vals(const unsigned char *p, size_t len,
		      const struct offsets_debug_layout *l,
		      struct debug_vals *d)
{
	memset(d, 0, sizeof(*d));
#define RD(f) (d->f = remote__u64(p, len, l->f))
	RD(runtime_size);
	RD(runtime_interpreters_head);
	RD(interp_size);
	RD(interp_next);
	RD(interp_threads_head);
	RD(tstate_size);
	RD(tstate_prev);
	RD(tstate_next);
	RD(tstate_thread_id);
	RD(tstate_native_thread_id);
	RD(tstate_current_frame);
	RD(tstate_datastack_chunk);
	RD(frame_size);
	RD(frame_previous);
	RD(frame_executable);
	RD(frame_instr_ptr);
	RD(frame_owner);
	RD(code_size);
	RD(code_filename);
	RD(code_name);
	RD(code_qualname);
	RD(code_linetable);
	RD(code_firstlineno);
	RD(code_adaptive);
	RD(code_localsplusnames);
	RD(code_localspluskinds);
	RD(frame_localsplus);
	RD(bytes_size);
	RD(bytes_ob_size);
	RD(bytes_ob_sval);
	RD(unicode_size);
	RD(unicode_state);
	RD(unicode_length);
	RD(unicode_ascii_size);
	RD(interp_ceval_gil);
	RD(interp_gil_state);
	RD(interp_gil_locked);
	RD(interp_gil_holder);
	RD(interp_modules);
	if (l->gen_size) {
		RD(gen_size);
		RD(gen_iframe);
		RD(gen_frame_state);
		RD(frame_stackpointer);
		RD(set_size);
		RD(set_used);
		RD(set_table);
		RD(set_mask);
	}
#undef RD
	d->gil_size = l->gil_size;
	/* Older layouts lack it: the items follow the PyVarObject, whose
	 * ob_size a bytes object's shows */
	if (l->tuple_items)
		d->tuple_items = remote__u64(p, len, l->tuple_items);
	else
		d->tuple_items = d->bytes_ob_size + 8;
	/* Older layouts lack it; a compact str adds utf8_length and utf8. */
	if (l->unicode_compact_size)
		d->unicode_compact_size =
			remote__u64(p, len, l->unicode_compact_size);
	else
		d->unicode_compact_size = d->unicode_ascii_size + 16;
}

static void check_size(struct verdict *v, const char *name, __u64 size,
		       __u64 min, __u64 max)
{
	/* Every struct here holds pointers, so its size is 8-aligned. */
	if (size < min || size > max || size % 8)
		fail(v, "sizeof(%s) = %llu", name, (unsigned long long)size);
}

/*
 * A field of `width` bytes at `off` must lie inside its struct, be
 * naturally aligned, and fit the __u16 py_offsets stores (0xffff is taken).
 */
static void check_field(struct verdict *v, const char *name, __u64 off,
			unsigned int width, __u64 size)
{
	if (off >= PY_OFF_NONE || off + width > size || off % width)
		fail(v, "%s offset %llu (struct size %llu)", name,
		     (unsigned long long)off, (unsigned long long)size);
}

struct span {
	__u64 off;
	unsigned int width;
};

/* Distinct fields of one struct must not overlap. */
static void check_disjoint(struct verdict *v, const char *name,
			   const struct span *s, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (s[i].off < s[j].off + s[j].width &&
			    s[j].off < s[i].off + s[i].width)
				fail(v, "%s fields overlap at %llu", name,
				     (unsigned long long)s[i].off);
}

/* The GIL: a pointer in the interpreter, a state whose lock and holder
 * lie inside it.  (Its own copy in each interpreter, 3.12+.) */
static void check_gil(struct verdict *v, const struct debug_vals *d)
{
	__u64 start = d->interp_gil_state, end = start + d->gil_size;

	check_field(v, "ceval.gil", d->interp_ceval_gil, 8, d->interp_size);
	if (d->gil_size < 16 || d->gil_size > 1024 ||
	    start + d->gil_size > d->interp_size)
		fail(v, "GIL state %llu + %llu", (unsigned long long)start,
		     (unsigned long long)d->gil_size);
	if (d->interp_gil_locked < start || d->interp_gil_locked + 4 > end ||
	    d->interp_gil_holder < start || d->interp_gil_holder + 8 > end ||
	    d->interp_gil_locked % 4 || d->interp_gil_holder % 8)
		fail(v, "GIL locked %llu / holder %llu outside its state",
		     (unsigned long long)d->interp_gil_locked,
		     (unsigned long long)d->interp_gil_holder);
}

static void check_threads(struct verdict *v, const struct debug_vals *d)
{
	const struct span ts[] = {
		{ d->tstate_prev, 8 }, { d->tstate_next, 8 },
		{ d->tstate_thread_id, 8 },
		{ d->tstate_native_thread_id, 8 },
		{ d->tstate_current_frame, 8 },
		{ d->tstate_datastack_chunk, 8 },
	};

	check_size(v, "_PyRuntimeState", d->runtime_size, 64, BIG_STRUCT_MAX);
	check_field(v, "interpreters.head", d->runtime_interpreters_head, 8,
		    d->runtime_size);
	check_size(v, "PyInterpreterState", d->interp_size, 64,
		   BIG_STRUCT_MAX);
	check_field(v, "interp next", d->interp_next, 8, d->interp_size);
	check_field(v, "threads.head", d->interp_threads_head, 8,
		    d->interp_size);
	check_field(v, "imports.modules", d->interp_modules, 8,
		    d->interp_size);
	if (d->interp_next == d->interp_threads_head)
		fail(v, "interp next == threads.head");
	check_size(v, "PyThreadState", d->tstate_size, 64, TSTATE_MAX);
	check_field(v, "tstate prev", d->tstate_prev, 8, d->tstate_size);
	check_field(v, "tstate next", d->tstate_next, 8, d->tstate_size);
	check_field(v, "thread_id", d->tstate_thread_id, 8, d->tstate_size);
	check_field(v, "native_thread_id", d->tstate_native_thread_id, 8,
		    d->tstate_size);
	check_field(v, "current_frame", d->tstate_current_frame, 8,
		    d->tstate_size);
	check_field(v, "datastack_chunk", d->tstate_datastack_chunk, 8,
		    d->tstate_size);
	check_disjoint(v, "PyThreadState", ts, sizeof(ts) / sizeof(ts[0]));
	check_gil(v, d);
}

static void check_frames(struct verdict *v, const struct debug_vals *d)
{
	const struct span fr[] = {
		{ d->frame_previous, 8 }, { d->frame_executable, 8 },
		{ d->frame_instr_ptr, 8 }, { d->frame_owner, 1 },
		{ d->frame_localsplus, 8 },
	};
	const struct span co[] = {
		{ d->code_filename, 8 }, { d->code_name, 8 },
		{ d->code_qualname, 8 }, { d->code_linetable, 8 },
		{ d->code_firstlineno, 4 }, { d->code_adaptive, 2 },
		{ d->code_localsplusnames, 8 }, { d->code_localspluskinds, 8 },
	};

	check_size(v, "_PyInterpreterFrame", d->frame_size, 48, FRAME_MAX);
	check_field(v, "previous", d->frame_previous, 8, d->frame_size);
	check_field(v, "f_executable", d->frame_executable, 8, d->frame_size);
	check_field(v, "instr_ptr", d->frame_instr_ptr, 8, d->frame_size);
	check_field(v, "owner", d->frame_owner, 1, d->frame_size);
	/* the locals are the variable-length tail */
	check_field(v, "localsplus", d->frame_localsplus, 8, d->frame_size);
	if (d->frame_localsplus < d->frame_owner)
		fail(v, "localsplus %llu is not the tail",
		     (unsigned long long)d->frame_localsplus);
	check_disjoint(v, "_PyInterpreterFrame", fr,
		       sizeof(fr) / sizeof(fr[0]));

	check_size(v, "PyCodeObject", d->code_size, 64, CODE_MAX);
	check_field(v, "co_filename", d->code_filename, 8, d->code_size);
	check_field(v, "co_name", d->code_name, 8, d->code_size);
	check_field(v, "co_qualname", d->code_qualname, 8, d->code_size);
	check_field(v, "co_linetable", d->code_linetable, 8, d->code_size);
	check_field(v, "co_firstlineno", d->code_firstlineno, 4, d->code_size);
	check_field(v, "co_localsplusnames", d->code_localsplusnames, 8,
		    d->code_size);
	check_field(v, "co_localspluskinds", d->code_localspluskinds, 8,
		    d->code_size);
	/* The bytecode array is the variable-length tail. */
	check_field(v, "co_code_adaptive", d->code_adaptive, 2, d->code_size);
	if (d->code_adaptive < d->code_linetable)
		fail(v, "co_code_adaptive %llu is not the tail",
		     (unsigned long long)d->code_adaptive);
	check_disjoint(v, "PyCodeObject", co, sizeof(co) / sizeof(co[0]));
}

static void check_strings(struct verdict *v, const struct debug_vals *d)
{
	__u64 ascii = d->unicode_ascii_size;
	__u64 compact = d->unicode_compact_size;

	check_size(v, "PyBytesObject", d->bytes_size, 33, SMALL_OBJ_MAX);
	check_field(v, "bytes ob_size", d->bytes_ob_size, 8, d->bytes_size);
	check_field(v, "ob_sval", d->bytes_ob_sval, 1, d->bytes_size);
	if (d->bytes_ob_sval <= d->bytes_ob_size)
		fail(v, "ob_sval %llu before ob_size",
		     (unsigned long long)d->bytes_ob_sval);

	check_size(v, "PyUnicodeObject", d->unicode_size, 32, SMALL_OBJ_MAX);
	/* A compact ASCII string's data follows a PyASCIIObject: 40 or 48. */
	if (ascii < 32 || ascii > 64 || ascii % 8 || ascii > d->unicode_size)
		fail(v, "sizeof(PyASCIIObject) = %llu",
		     (unsigned long long)ascii);
	if (compact <= ascii || compact > ascii + 32 || compact % 8 ||
	    compact > d->unicode_size)
		fail(v, "sizeof(PyCompactUnicodeObject) = %llu",
		     (unsigned long long)compact);
	check_field(v, "str length", d->unicode_length, 8, ascii);
	check_field(v, "str state", d->unicode_state, 4, ascii);
	/* The hash we derive sits between length and state; insist on it. */
	if (d->unicode_state != d->unicode_length + 16)
		fail(v, "str length %llu / state %llu leave no room for hash",
		     (unsigned long long)d->unicode_length,
		     (unsigned long long)d->unicode_state);
}

static void fill(struct py_offsets *o, __u64 version,
		 const struct offsets_debug_layout *l,
		 const struct debug_vals *d)
{
	memset(o, 0, sizeof(*o));
	o->version_hex = (__u32)version;
	o->match = PY_MATCH_NATIVE_TID;
	o->frame_model = PY_FRAMES_DIRECT;
	o->instr_kind = PY_INSTR_POINTER;
	o->owner_cstack = l->owner_shim;
	o->code_tag_mask = l->code_tag_mask;
	o->runtime_interpreters_head = d->runtime_interpreters_head;
	o->interp_next = d->interp_next;
	o->interp_threads_head = d->interp_threads_head;
	o->tstate_prev = d->tstate_prev;
	o->tstate_next = d->tstate_next;
	o->tstate_thread_id = d->tstate_thread_id;
	o->tstate_native_thread_id = d->tstate_native_thread_id;
	o->tstate_frame = d->tstate_current_frame;
	o->tstate_datastack_chunk = d->tstate_datastack_chunk;
	o->cframe_current_frame = PY_OFF_NONE;
	o->frame_previous = d->frame_previous;
	o->frame_code = d->frame_executable;
	o->frame_instr = d->frame_instr_ptr;
	o->frame_owner = d->frame_owner;
	o->code_filename = d->code_filename;
	o->code_name = d->code_name;
	o->code_qualname = d->code_qualname;
	o->code_firstlineno = d->code_firstlineno;
	o->code_linetable = d->code_linetable;
	o->code_code_adaptive = d->code_adaptive;
	o->object_type = PYOBJECT_TYPE;
	o->unicode_length = d->unicode_length;
	o->unicode_hash = d->unicode_length + 8;
	o->unicode_state = d->unicode_state;
	o->unicode_ascii_data = d->unicode_ascii_size;
	o->unicode_compact_data = d->unicode_compact_size;
	o->runtime_gil = PY_OFF_NONE;
	o->interp_gil_ptr = d->interp_ceval_gil;
	o->interp_modules = d->interp_modules;
	o->gil_size = d->gil_size;
	o->gil_locked = d->interp_gil_locked - d->interp_gil_state;
	o->gil_last_holder = d->interp_gil_holder - d->interp_gil_state;
	o->bytes_size = d->bytes_ob_size;
	o->bytes_data = d->bytes_ob_sval;
	o->frame_localsplus = d->frame_localsplus;
	o->code_varnames = d->code_localsplusnames;
	o->code_nlocals = PY_OFF_NONE;
	o->code_localskinds = d->code_localspluskinds;
	o->tuple_items = d->tuple_items;
}

/* Cookie, version and build flavour: the part every layout shares. */
static int check_header(const unsigned char *p, size_t len, int minor,
			__u64 *version, char *err, size_t errlen)
{
	__u64 ft;

	if (minor < DEBUG_FIRST_MINOR) {
		errmsg__set(err, errlen, "Python 3.%d has no _Py_DebugOffsets",
			    minor);
		return -EINVAL;
	}
	if (!p || len < DEBUG_HEADER_LEN) {
		errmsg__set(err, errlen,
			    "Python 3.%d: _PyRuntime truncated (%zu bytes)",
			    minor, p ? len : 0);
		return -EINVAL;
	}
	if (memcmp(p, DEBUG_COOKIE, DEBUG_COOKIE_LEN)) {
		errmsg__set(err, errlen,
			    "Python 3.%d: _PyRuntime lacks the \"%s\" cookie",
			    minor, DEBUG_COOKIE);
		return -EINVAL;
	}
	*version = remote__u64(p, len, 8);
	if (*version >> 32 || (*version >> 24) != 3 ||
	    ((*version >> 16) & 0xff) != (__u64)minor) {
		errmsg__set(err, errlen,
			    "Python 3.%d: _Py_DebugOffsets says version 0x%llx, not 3.%d",
			    minor, (unsigned long long)*version, minor);
		return -EINVAL;
	}
	ft = remote__u64(p, len, 16);
	if (ft == 1) {
		errmsg__set(err, errlen,
			    "Python 3.%d: free-threaded build, not supported",
			    minor);
		return -EPROTONOSUPPORT;
	}
	if (ft) {
		errmsg__set(err, errlen,
			    "Python 3.%d: _Py_DebugOffsets free_threaded is %llu",
			    minor, (unsigned long long)ft);
		return -EINVAL;
	}
	return 0;
}

/* What a thread's stack and its names need, checked. */
static void check_runtime(struct verdict *v, const struct debug_vals *d)
{
	check_threads(v, d);
	check_frames(v, d);
	check_strings(v, d);
}

/* A coroutine's generator object, its embedded frame and an awaiters
 * set, checked as check_frames checks a thread's frames. */
static void check_gens(struct verdict *v, const struct debug_vals *d)
{
	check_size(v, "PyGenObject", d->gen_size, 48, CODE_MAX);
	check_size(v, "_PyInterpreterFrame", d->frame_size, 48, FRAME_MAX);
	/* the frame is embedded whole, at the end */
	check_field(v, "gi_iframe", d->gen_iframe, 8, d->gen_size);
	if (d->gen_iframe + d->frame_size > d->gen_size)
		fail(v, "gi_iframe %llu + frame %llu past the object",
		     (unsigned long long)d->gen_iframe,
		     (unsigned long long)d->frame_size);
	check_field(v, "gi_frame_state", d->gen_frame_state, 1, d->gen_iframe);
	check_field(v, "stackpointer", d->frame_stackpointer, 8,
		    d->frame_size);
	check_size(v, "PySetObject", d->set_size, 32, SMALL_OBJ_MAX);
	check_field(v, "set used", d->set_used, 8, d->set_size);
	check_field(v, "set table", d->set_table, 8, d->set_size);
	check_field(v, "set mask", d->set_mask, 8, d->set_size);
}

/*
 * What both readers of _Py_DebugOffsets share: the header checked, the
 * layout of this minor found (a newer minor's on probation: -ENOTSUP
 * when its values do not check), the bytes long enough for it, the
 * values it places read into d, and check's verdict on them.
 */
static int read_debug(const unsigned char *p, size_t len, int minor,
		      void (*check)(struct verdict *, const struct debug_vals *),
		      const struct offsets_debug_layout **lp, __u64 *version,
		      struct debug_vals *d, char *err, size_t errlen)
{
	const struct offsets_debug_layout *l;
	struct verdict v = { .bad = false };
	bool guess = false;
	int ret;

	ret = check_header(p, len, minor, version, err, errlen);
	if (ret)
		return ret;
	l = find_layout(minor, &guess);
	if (!l) {
		errmsg__set(err, errlen,
			    "Python 3.%d: no _Py_DebugOffsets layout known",
			    minor);
		return -ENOTSUP;
	}
	if (len < l->struct_size) {
		errmsg__set(err, errlen,
			    "Python 3.%d: _PyRuntime truncated (%zu of %u bytes)",
			    minor, len, l->struct_size);
		return guess ? -ENOTSUP : -EINVAL;
	}
	read_vals(p, len, l, d);
	check(&v, d);
	if (v.bad && guess) {
		errmsg__set(err, errlen,
			    "Python 3.%d: _Py_DebugOffsets layout unknown and values do not validate (%s)",
			    minor, v.why);
		return -ENOTSUP;
	}
	if (v.bad) {
		errmsg__set(err, errlen,
			    "Python 3.%d: bad _Py_DebugOffsets: %s", minor,
			    v.why);
		return -EINVAL;
	}
	*lp = l;
	return 0;
}

int offsets__from_debug(const void *runtime, size_t len, int minor,
			struct py_offsets *out, char *err, size_t errlen)
{
	const struct offsets_debug_layout *l;
	struct debug_vals d;
	__u64 version;
	int ret;

	ret = read_debug(runtime, len, minor, check_runtime, &l, &version, &d,
			 err, errlen);
	if (ret)
		return ret;
	fill(out, version, l, &d);
	derive(out);
	return 0;
}

int offsets__gen_from_debug(const void *runtime, size_t len, int minor,
			    struct py_gen_offsets *out, char *err,
			    size_t errlen)
{
	const struct offsets_debug_layout *l;
	struct debug_vals d;
	bool guess = false;
	__u64 version;
	int ret;

	/* a guessed layout's generator facts (states, depth) are not facts */
	l = find_layout(minor, &guess);
	if (!l || guess || !l->gen_size) {
		errmsg__set(err, errlen,
			    "Python 3.%d: no generator layout known", minor);
		return -ENOTSUP;
	}
	ret = read_debug(runtime, len, minor, check_gens, &l, &version, &d,
			 err, errlen);
	if (ret)
		return ret;
	out->gen_iframe = d.gen_iframe;
	out->gen_frame_state = d.gen_frame_state;
	out->frame_stackpointer = d.frame_stackpointer;
	out->frame_size = d.frame_size;
	out->set_used = d.set_used;
	out->set_table = d.set_table;
	out->set_mask = d.set_mask;
	out->state_yield_from = l->state_yield_from;
	out->state_yield_from_last = l->state_yield_from_last;
	out->state_cleared = l->state_cleared;
	out->owner_generator = l->owner_generator;
	out->yf_depth = l->yf_depth;
	return 0;
}

const struct offsets_async_legacy *offsets__async_legacy(int minor)
{
	unsigned int i;

	for (i = 0; i < offsets_async_legacy_table_len; i++)
		if (offsets_async_legacy_table[i].minor == minor)
			return &offsets_async_legacy_table[i];
	return NULL;
}

/* The section's fields, in its order: one __u64 each. */
static const size_t async_fields[] = {
	offsetof(struct py_async_offsets, task_size),
	offsetof(struct py_async_offsets, task_name),
	offsetof(struct py_async_offsets, task_awaited_by),
	offsetof(struct py_async_offsets, task_is_task),
	offsetof(struct py_async_offsets, task_awaited_by_is_set),
	offsetof(struct py_async_offsets, task_coro),
	offsetof(struct py_async_offsets, task_node),
	offsetof(struct py_async_offsets, interp_size),
	offsetof(struct py_async_offsets, interp_tasks_head),
	offsetof(struct py_async_offsets, tstate_size),
	offsetof(struct py_async_offsets, tstate_running_loop),
	offsetof(struct py_async_offsets, tstate_running_task),
	offsetof(struct py_async_offsets, tstate_tasks_head),
};
_Static_assert(sizeof(async_fields) / sizeof(async_fields[0]) * 8 ==
		       OFFSETS_ASYNC_SECTION_LEN,
	       "one field per __u64 of .AsyncioDebug");

#define TASK_SIZE_MIN	100	/* a FutureObj head and the task's fields */

static void check_tasks(struct verdict *v, const struct py_async_offsets *o)
{
	const struct span task[] = {
		{ o->task_name, 8 }, { o->task_awaited_by, 8 },
		{ o->task_is_task, 1 }, { o->task_awaited_by_is_set, 1 },
		{ o->task_coro, 8 }, { o->task_node, PY_LLIST_SIZE },
	};

	if (o->task_size < TASK_SIZE_MIN || o->task_size > PY_TASK_SIZE_MAX ||
	    o->task_size % 8)
		fail(v, "sizeof(TaskObj) = %llu",
		     (unsigned long long)o->task_size);
	check_field(v, "task_name", o->task_name, 8, o->task_size);
	check_field(v, "task_awaited_by", o->task_awaited_by, 8, o->task_size);
	check_field(v, "task_is_task", o->task_is_task, 1, o->task_size);
	check_field(v, "task_awaited_by_is_set", o->task_awaited_by_is_set, 1,
		    o->task_size);
	check_field(v, "task_coro", o->task_coro, 8, o->task_size);
	check_field(v, "task_node", o->task_node, 8, o->task_size);
	if (o->task_node + PY_LLIST_SIZE > o->task_size)
		fail(v, "task_node %llu past the task",
		     (unsigned long long)o->task_node);
	check_disjoint(v, "TaskObj", task, sizeof(task) / sizeof(task[0]));
	/* task_fut_waiter is not in the section: it precedes task_coro
	 * (TaskObj in Modules/_asynciomodule.c, stable since 3.8), and the
	 * future's state, an int, precedes fut_is_task */
	if (o->task_coro < 16 || o->task_name != o->task_coro + 8 ||
	    o->task_is_task < 4 ||
	    o->task_awaited_by + 8 != o->task_is_task - 4 ||
	    o->task_awaited_by_is_set != o->task_is_task + 1 ||
	    o->task_node < o->task_name + 8)
		fail(v, "TaskObj fields out of their order");
}

/* The list heads in the interpreter and each thread state. */
static void check_task_lists(struct verdict *v,
			     const struct py_async_offsets *o)
{
	const struct span ts[] = {
		{ o->tstate_running_loop, 8 }, { o->tstate_running_task, 8 },
		{ o->tstate_tasks_head, PY_LLIST_SIZE },
	};

	check_size(v, "PyInterpreterState", o->interp_size, 64,
		   BIG_STRUCT_MAX);
	check_field(v, "asyncio_tasks_head", o->interp_tasks_head, 8,
		    o->interp_size);
	if (o->interp_tasks_head + PY_LLIST_SIZE > o->interp_size)
		fail(v, "interp asyncio_tasks_head %llu past its struct",
		     (unsigned long long)o->interp_tasks_head);
	check_size(v, "PyThreadState", o->tstate_size, 64, TSTATE_MAX);
	check_field(v, "asyncio_running_loop", o->tstate_running_loop, 8,
		    o->tstate_size);
	check_field(v, "asyncio_running_task", o->tstate_running_task, 8,
		    o->tstate_size);
	check_field(v, "asyncio_tasks_head", o->tstate_tasks_head, 8,
		    o->tstate_size);
	if (o->tstate_tasks_head + PY_LLIST_SIZE > o->tstate_size)
		fail(v, "tstate asyncio_tasks_head %llu past its struct",
		     (unsigned long long)o->tstate_tasks_head);
	check_disjoint(v, "PyThreadState", ts, sizeof(ts) / sizeof(ts[0]));
}

int offsets__async_from_section(const void *buf, size_t len,
				struct py_async_offsets *o, char *err,
				size_t errlen)
{
	struct verdict v = { .bad = false };
	unsigned int i;

	if (len < OFFSETS_ASYNC_SECTION_LEN) {
		errmsg__set(err, errlen, "%s is %zu bytes, not %d",
			    OFFSETS_ASYNC_SECTION, len,
			    OFFSETS_ASYNC_SECTION_LEN);
		return -EINVAL;
	}
	for (i = 0; i < sizeof(async_fields) / sizeof(async_fields[0]); i++)
		*(__u64 *)((char *)o + async_fields[i]) =
			remote__u64(buf, len, 8 * i);
	check_tasks(&v, o);
	check_task_lists(&v, o);
	if (v.bad) {
		errmsg__set(err, errlen, "bad %s: %s", OFFSETS_ASYNC_SECTION,
			    v.why);
		return -EINVAL;
	}
	return 0;
}
