/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-version CPython facts (struct py_offsets): from generated tables for
 * 3.8-3.12, from the interpreter's own _Py_DebugOffsets for 3.13+.  See
 * docs/OFFSETS.md.
 */
#ifndef __PYSIGHT_OFFSETS_H
#define __PYSIGHT_OFFSETS_H

#include <stddef.h>
#include <linux/types.h>	/* __u8 etc. for pysight.h */
#include "pysight.h"

/*
 * Facts for 3.8-3.12 from the generated table.  Returns 0, or -ENOENT for
 * a minor not in the table.
 */
int offsets__from_table(int major, int minor, struct py_offsets *out);

/*
 * Facts for 3.13+ from the bytes at the start of _PyRuntime (the file bytes
 * of the ELF .PyRuntime section), which begin with _Py_DebugOffsets.
 * Returns 0, or -errno with a one-line reason in err:
 *   -EINVAL           not _Py_DebugOffsets of 3.<minor>: no cookie, too
 *                     short, wrong version, or values that do not validate
 *   -EPROTONOSUPPORT  a free-threaded build
 *   -ENOTSUP          a newer minor whose layout is unknown and whose
 *                     values do not validate under the newest known layout
 * *out is filled completely on success, version_hex from the struct.
 */
int offsets__from_debug(const void *runtime, size_t len, int minor,
			struct py_offsets *out, char *err, size_t errlen);

/* The bytes at _PyRuntime a caller reads for _Py_DebugOffsets: more
 * than any layout's struct_size (3.15: 888), no more than the fuzz
 * seeds copy of it (tools/fuzz-seeds). */
#define OFFSETS_DEBUG_MAX	4096

/*
 * What reading a coroutine needs (user space only, so not in struct
 * py_offsets): from _Py_DebugOffsets, which describes generators from
 * 3.14 on, and the facts the generator records beside it.
 */
struct py_gen_offsets {
	__u16 gen_iframe;		/* the embedded _PyInterpreterFrame */
	__u16 gen_frame_state;		/* int8 gi_frame_state */
	__u16 frame_stackpointer;	/* _PyStackRef *stackpointer */
	/* before 3.14, an int stacktop instead, counted in slots from
	 * localsplus (0: stackpointer is there) */
	__u16 frame_stacktop, frame_localsplus;
	__u16 frame_size;		/* sizeof(_PyInterpreterFrame) */
	__u16 set_used, set_table, set_mask;	/* PySetObject */
	__s8 state_yield_from;		/* suspended in an await: from ... */
	__s8 state_yield_from_last;	/* ... to this frame state */
	__s8 state_cleared;
	__u8 owner_generator;		/* a coroutine's own frame's owner */
	__u8 yf_depth;			/* awaited: stackpointer[-yf_depth] */
};

/*
 * The same bytes as offsets__from_debug() takes: 0, or -ENOTSUP for a
 * minor whose layout has no generators (before 3.14, or unknown), or
 * -EINVAL with why in err when the values do not validate.
 */
int offsets__gen_from_debug(const void *runtime, size_t len, int minor,
			    struct py_gen_offsets *out, char *err,
			    size_t errlen);

/*
 * _Py_AsyncioModuleDebugOffsets, 3.14+: the 13 __u64 of the _asyncio
 * module's .AsyncioDebug section (no cookie, no version), in its order.
 */
#define OFFSETS_ASYNC_SECTION		".AsyncioDebug"
#define OFFSETS_ASYNC_SECTION_LEN	(13 * 8)
#define PY_TASK_SIZE_MAX		4096	/* a TaskObj: more is refused */

/* struct llist_node { next; prev; } (Include/internal/pycore_llist.h) */
#define PY_LLIST_NEXT	0
#define PY_LLIST_PREV	8
#define PY_LLIST_SIZE	16

struct py_async_offsets {
	__u64 task_size, task_name, task_awaited_by, task_is_task;
	__u64 task_awaited_by_is_set, task_coro, task_node;
	__u64 interp_size, interp_tasks_head;
	__u64 tstate_size, tstate_running_loop, tstate_running_task;
	__u64 tstate_tasks_head;
};

/* The section's bytes, checked as _Py_DebugOffsets are: 0, or -EINVAL
 * with why in err. */
int offsets__async_from_section(const void *buf, size_t len,
				struct py_async_offsets *out, char *err,
				size_t errlen);

/*
 * asyncio before 3.14 (3.11 to 3.13), which has no .AsyncioDebug: the
 * interpreter's facts from its headers, _asyncio's TaskObj and FutureObj
 * from a build's DWARF (tools/gen-offsets).  The target's own types are
 * checked against task_size and future_size before any task is read.
 */
struct offsets_async_legacy {
	int minor;
	__u16 gen_iframe, gen_frame_state;
	__u16 frame_size, frame_stacktop, frame_localsplus;
	__u16 set_used, set_mask, set_table;
	__u16 list_items;		/* PyListObject ob_item */
	__u16 weakref_object;		/* PyWeakReference wr_object */
	__u16 tstate_dict;		/* 3.11, 3.12: the loop in the dict */
	__u16 tstate_running_loop;	/* 3.13: _PyThreadStateImpl's */
	__s8 state_await;		/* a coroutine suspended in an await */
	__s8 state_cleared;
	__u8 owner_generator;
	__u16 task_size, future_size;	/* TaskObj, FutureObj */
	__u16 fut_loop, fut_callback0, fut_state, fut_waiter;
	__u16 task_coro, task_name;
	__u16 holder_loop;		/* 3.11 PyRunningLoopHolder rl_loop */
};

/* The facts for 3.minor, or NULL (3.14+ has its section; before 3.11,
 * coroutines have no embedded frame). */
const struct offsets_async_legacy *offsets__async_legacy(int minor);

/*
 * Internal: the generated tables (user/python/offsets_table.c, tools/gen-offsets).
 * Only offsets.c and the unit test use them.
 */

/*
 * Byte positions, inside one minor's _Py_DebugOffsets, of the fields
 * pysight reads (each a uint64_t), plus the two facts the struct does not
 * carry.  unicode_compact_size is 0 when the layout lacks it.
 */
struct offsets_debug_layout {
	__u8 minor;
	__u8 owner_shim;		/* frame owner of the entry shim */
	__u16 struct_size;		/* sizeof(_Py_DebugOffsets) */
	__u64 code_tag_mask;		/* for f_executable */
	__u16 version;
	__u16 free_threaded;
	__u16 runtime_size;
	__u16 runtime_interpreters_head;
	__u16 interp_size;
	__u16 interp_next;
	__u16 interp_threads_head;
	__u16 tstate_size;
	__u16 tstate_prev;
	__u16 tstate_next;
	__u16 tstate_thread_id;
	__u16 tstate_native_thread_id;
	__u16 tstate_current_frame;
	__u16 tstate_datastack_chunk;
	__u16 frame_size;
	__u16 frame_previous;
	__u16 frame_executable;
	__u16 frame_instr_ptr;
	__u16 frame_owner;
	__u16 code_size;
	__u16 code_filename;
	__u16 code_name;
	__u16 code_qualname;
	__u16 code_linetable;
	__u16 code_firstlineno;
	__u16 code_adaptive;
	__u16 code_localsplusnames;
	__u16 code_localspluskinds;
	__u16 frame_localsplus;
	__u16 tuple_items;		/* 0 when the layout lacks it */
	__u16 bytes_size;
	__u16 bytes_ob_size;
	__u16 bytes_ob_sval;
	__u16 unicode_size;
	__u16 unicode_state;
	__u16 unicode_length;
	__u16 unicode_ascii_size;
	__u16 unicode_compact_size;
	__u16 interp_ceval_gil;
	__u16 interp_modules;
	__u16 interp_gil_state;
	__u16 interp_gil_locked;
	__u16 interp_gil_holder;
	__u16 gil_size;			/* sizeof(struct _gil_runtime_state) */
	/* for asyncio tasks, 3.14+ (0 before): see struct py_gen_offsets */
	__u16 gen_size;
	__u16 gen_iframe;
	__u16 gen_frame_state;
	__u16 frame_stackpointer;
	__u16 set_size;
	__u16 set_used;
	__u16 set_table;
	__u16 set_mask;
	__s8 state_yield_from;		/* FRAME_SUSPENDED_YIELD_FROM */
	__s8 state_yield_from_last;	/* ... its last variant (3.15 _LOCKED) */
	__s8 state_cleared;		/* FRAME_CLEARED */
	__u8 owner_generator;		/* FRAME_OWNED_BY_GENERATOR */
	__u8 yf_depth;			/* awaited object: stackpointer[-depth] */
};

extern const struct py_offsets offsets_table[];
extern const unsigned int offsets_table_len;
extern const struct offsets_async_legacy offsets_async_legacy_table[];
extern const unsigned int offsets_async_legacy_table_len;
extern const struct offsets_debug_layout offsets_debug_layouts[];
extern const unsigned int offsets_debug_layouts_len;
extern const struct py_offsets offsets_header_facts[];
extern const unsigned int offsets_header_facts_len;

#endif /* __PYSIGHT_OFFSETS_H */
