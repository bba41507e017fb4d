/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Options, maps and per-CPU buffers the parts share, and their helpers. */
#ifndef __PYSIGHT_MAPS_BPF_H
#define __PYSIGHT_MAPS_BPF_H

const volatile bool filter_pids = false;	/* sample only pids in targets */
const volatile __u32 self_pid = 0;
const volatile __u8 mode = PYSIGHT_MODE_CPU;	/* --mode */
const volatile bool gil_only = false;		/* --gil */
const volatile bool kernel_stacks = false;	/* --kernel-stacks */
const volatile bool sweep = false;		/* --offcpu=sweep */
const volatile __u64 walk_below_ns = 1000000;	/* see switch_in() */
const volatile __u64 period_ns = 10000000;	/* the mean sampling period */
const volatile bool native = false;		/* --native */

const volatile __u32 ncgroups = 0;		/* --cgroup/--container */

/* set by user space before each run of the task iterator */
__u32 iter_mode = 0;
/* the pass's one clock reading, 0 until its first record: read once, not
 * a paravirtual clock read a record (9% of the sweep's time) */
__u64 pass_now = 0;
__u64 iter_visits = 0;				/* tasks the passes looked at */

/* Code objects freed in processes whose deallocs a uprobe reports: a
 * stack kept to be reused names code by address, and an address freed
 * since may hold another object (see same_stack()). */
__u64 code_frees = 0;

/* tgid -> interpreter facts; PENDING/IGNORED entries stop repeat work. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct py_proc);
} procs SEC(".maps");

/* Interpreter binaries already inspected whose facts are position
 * independent (non-PIE, static libpython): a new process of one is
 * sampled from its first tick (the idea is Meta pystacks'). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct py_binary_key);
	__type(value, struct py_proc);
} binaries SEC(".maps");

/* Executables user space found are not Python: an exec of one costs no
 * event, so an exec storm of /bin/true costs one inspection, not one
 * each. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct py_binary_key);
	__type(value, __u8);
} not_python SEC(".maps");

/* --cgroup: keep tasks in these cgroups (v2) or below them. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PYSIGHT_MAX_CGROUPS);
	__type(key, __u32);
	__type(value, struct cgroup_filter);
} cgroup_filter SEC(".maps");

/* -p and "-- command": the processes to sample, children added on fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/*
 * tid -> PyThreadState *, validated on every use: the id must still be
 * this thread's, and the thread state still linked in its list (a freed
 * one keeps its id, but is unlinked).  A thread the walk did not find (a
 * C thread, or one not yet bound to its thread state) is remembered for
 * up to 50 ms, or until the list's head changes (new thread states go
 * in at the head), so it does not cost a walk per sample.
 */
struct tstate_entry {
	__u64 tstate;		/* 0: not found at ts */
	__u64 ts;
	__u64 interp;		/* where it was found, or the first walked */
	__u64 head;		/* interp's list head at a failed walk */
	__u64 head_id;		/* and the thread id that head had then */
	__u32 status;		/* what a failed walk said */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct tstate_entry);
} tstates SEC(".maps");

/* Stack hashes user space has been sent the frames of. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} stacks_seen SEC(".maps");

/* One slot of the direct-mapped code-object cache.  tag seals the slot:
 * slots are written without locks, and a torn one fails its tag.  The
 * tag covers the process's start time, so a reused pid never meets the
 * slots of the process it replaced. */
#define CODE_SLOTS	65536	/* power of 2 */

struct code_slot {
	__u64 code;
	__u32 tgid;
	__u32 check;
	__u64 tag;
	__u64 seen_ns;		/* when a walk put it here */
};

/* A cached code object freed sooner than this after a walk met it may
 * not have been named yet: its dealloc sends its bytes (EV_CODE). */
#define CODE_RECENT_NS	(1000 * 1000000ULL)

/*
 * (tgid, code object) -> identity check, for processes whose code
 * deallocations a uprobe reports (PY_PROC_F_CODE_CACHE).  Direct-mapped
 * in a plain array: a lookup is an inlined index, where a hash map
 * costs ~40 ns a frame.  A collision just evicts.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CODE_SLOTS);
	__type(key, __u32);
	__type(value, struct code_slot);
} code_checks SEC(".maps");

/*
 * Scalars the frame loop needs, copied out of the map value once.  They
 * live in the per-CPU scratch: bpf_loop's callback's stack counts on top
 * of its caller's, and the two must stay within 512 bytes.
 */
struct frame_ctx {
	__u64 frame;
	__u64 epoch;		/* the process's start time */
	__u64 bulk_lo, bulk_hi;	/* target range copied into the bulk map */
	__u64 hash;
	__u64 raw;		/* the frames' code and instruction fields */
	__u64 leaf;		/* the first frame */
	__u64 code_type;
	__u64 tag_mask;
	struct pysight_loop loop;	/* a frame passed earlier */
	__u64 task_frame;	/* the running task's coroutine frame, or 0 */
	__u32 task_at;		/* frames kept up to and with it, 0: not met */
	__u32 n;
	__u32 status;
	__u32 cache_hits;
	__u16 f_prev, f_code, f_instr, f_owner, f_len;
	__u16 c_first, c_file, c_name, c_qual, c_adaptive, c_lt;
	__u16 u_hash, o_type, b_size, b_data;
	__u8 instr_kind, owner_cstack, skip_foreign, code_cache;
	__u8 raw_only;		/* hash the frames' fields, check nothing */
	__u8 owner_gen;		/* PY_PROC_F_ASYNC_OUTER: a coroutine's
				 * frame owner, else 0 */
	__u8 marks;		/* --native: mark eval calls' first frames */
	__u16 f_entry;		/* 3.11's is_entry, else PY_OFF_NONE */
	__u64 outer;		/* ... the root-most such frame met */
	/* ... and the tasks _current_tasks says run, with their coroutines'
	 * frames: the one met in the stack is the sample's task */
	__u64 cur_frame[PY_CURRENT_MAX];
	__u64 cur_task[PY_CURRENT_MAX];
	__u64 found;		/* that task, 0: none met */
	__u32 ncur;
	__u32 tgid;
};

/* nesting levels with a buffer of their own: a program, a perf sample
 * interrupting it, and one to spare (see scratch_get()) */
#define SCRATCH_SLOTS	3

/* ev and frames go out together: keep them first, and in this order */
struct sample_buf {
	struct sample_event ev;
	/* the Python frames, then (--native) the native ones */
	struct py_frame frames[PYSIGHT_MAX_FRAMES + PYSIGHT_NATIVE_FRAMES];
	__u64 tstate;		/* the thread state the stack was read from */
	__u8 fwin[PYSIGHT_FRAME_WINDOW];
	__u8 cwin[PYSIGHT_CODE_WINDOW];
	__u8 twin[PYSIGHT_TSTATE_WINDOW];
	struct code_ident ident;	/* code_check's */
	struct frame_ctx fc;		/* collect_stack's, for walk_frame */
	__u32 slot;			/* this buffer's index in scratch */
};

/* A copy of the data stack below the leaf frame (own map: per-CPU values
 * are limited to 32 KiB). */
struct bulk_buf {
	__u8 data[PYSIGHT_BULK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct bulk_buf);
} bulk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct sample_buf);
} scratch SEC(".maps");

/* how many of this CPU's scratch slots are in use */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} scratch_depth SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

#define mix64 pysight_mix64

#define WIN_U64(win, size, off) \
	((off) <= (size) - 8 ? *(__u64 *)((win) + (off)) : 0)
#define WIN_U32(win, size, off) \
	((off) <= (size) - 4 ? *(__u32 *)((win) + (off)) : 0)

static __always_inline int read_u64(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

#endif /* __PYSIGHT_MAPS_BPF_H */
