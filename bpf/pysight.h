/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one header shared by the BPF programs and user space: limits, the
 * per-process interpreter facts user space loads into maps, and the layout
 * of every record that crosses the ring buffer.  Only fixed-size types.
 */
#ifndef __PYSIGHT_H
#define __PYSIGHT_H

#define PYSIGHT_MAX_FRAMES	1024	/* frames kept per stack (power of 2) */
#define PYSIGHT_MAX_THREADS	8192	/* threads walked per interpreter */
#define PYSIGHT_NEG_TTL_NS	50000000ULL	/* re-walk for a thread not found */
#define PYSIGHT_MAX_INTERPS	4	/* sub-interpreters walked */
#define PYSIGHT_CODE_WINDOW	192	/* bytes read from a code object */
#define PYSIGHT_FRAME_WINDOW	128	/* bytes read from a frame */
#define PYSIGHT_TSTATE_WINDOW	256	/* bytes of a thread state read (2^n) */
#define PYSIGHT_BULK		16384	/* bytes of data stack read at once */
#define PYSIGHT_COMM_LEN	16
#define PYSIGHT_MAX_CGROUPS	16	/* --cgroup and --container filters */
#define PYSIGHT_KSTACK_DEPTH	64	/* kernel frames kept (--kernel-stacks) */
#define PYSIGHT_NATIVE_FRAMES	128	/* native frames kept (--native) */

/* What a recording is of (--mode): the BPF side's `mode`, and user
 * space's enum profile_mode. */
#define PYSIGHT_MODE_CPU	0	/* on-CPU samples */
#define PYSIGHT_MODE_WALL	1	/* on-CPU and off-CPU time */
#define PYSIGHT_MODE_OFF	2	/* off-CPU time alone */

/* How a PyThreadState is matched to the sampled kernel task. */
enum py_match {
	PY_MATCH_NATIVE_TID = 0,	/* tstate->native_thread_id == ns tid (3.11+) */
	PY_MATCH_PTHREAD = 1,		/* tstate->thread_id == fs base (<= 3.10) */
};

/* Where the current frame hangs and what a frame looks like. */
enum py_frame_model {
	PY_FRAMES_OBJECT = 0,	/* tstate->frame, PyFrameObject, f_back (<= 3.10) */
	PY_FRAMES_CFRAME = 1,	/* tstate->cframe->current_frame (3.11, 3.12) */
	PY_FRAMES_DIRECT = 2,	/* tstate->current_frame (3.13+) */
};

/* What the frame's instruction field holds. */
enum py_instr_kind {
	PY_INSTR_LASTI_BYTES = 0,	/* int f_lasti, in bytes (3.8, 3.9) */
	PY_INSTR_LASTI_UNITS = 1,	/* int f_lasti, in code units (3.10) */
	PY_INSTR_POINTER = 2,		/* pointer into co_code_adaptive (3.11+) */
};

/*
 * Interpreter facts for one CPython minor version.  Offsets are byte
 * offsets inside the named struct; 0xffff means "absent in this version".
 * For 3.8-3.12 they come from generated tables (tools/gen-offsets), for
 * 3.13+ from the interpreter's own _Py_DebugOffsets.
 */
#define PY_OFF_NONE 0xffff

struct py_offsets {
	__u32 version_hex;		/* PY_VERSION_HEX of the interpreter */
	__u8 match;			/* enum py_match */
	__u8 frame_model;		/* enum py_frame_model */
	__u8 instr_kind;		/* enum py_instr_kind */
	__u8 owner_cstack;		/* owners >= this are shim frames, 0 = none */
	__u64 code_tag_mask;		/* mask applied to the frame's code field */

	/* _PyRuntimeState */
	__u16 runtime_interpreters_head;
	/* PyInterpreterState */
	__u16 interp_next;
	__u16 interp_threads_head;
	/* PyThreadState */
	__u16 tstate_prev;
	__u16 tstate_next;
	__u16 tstate_thread_id;		/* pthread_t */
	__u16 tstate_native_thread_id;
	__u16 tstate_frame;		/* frame, cframe or current_frame */
	/* _PyCFrame (3.11, 3.12) */
	__u16 cframe_current_frame;
	/* PyFrameObject or _PyInterpreterFrame */
	__u16 frame_previous;
	__u16 frame_code;
	__u16 frame_instr;
	__u16 frame_owner;		/* char owner, 3.11+ */
	/* PyCodeObject */
	__u16 code_filename;
	__u16 code_name;
	__u16 code_qualname;		/* 3.11+ */
	__u16 code_firstlineno;
	__u16 code_linetable;		/* co_lnotab (<= 3.9) or co_linetable */
	__u16 code_code_adaptive;	/* 3.11+ */
	/* PyUnicodeObject / PyBytesObject */
	__u16 unicode_hash;		/* Py_hash_t hash in PyASCIIObject */
	__u16 unicode_state;		/* the state bit-field word */
	__u16 unicode_ascii_data;	/* first byte of a compact ASCII string */
	__u16 unicode_compact_data;	/* first byte of a compact non-ASCII string */
	__u16 bytes_size;		/* ob_size in PyVarObject */
	__u16 bytes_data;		/* ob_sval */
	__u16 tstate_datastack_chunk;	/* 3.11+: frames live in its chunks */
	__u16 object_type;		/* ob_type in PyObject */
	__u16 unicode_length;		/* length in PyASCIIObject */
	/* The GIL state: in _PyRuntimeState (<= 3.11), or behind a pointer
	 * in PyInterpreterState (3.12+); and its fields */
	__u16 runtime_gil;
	__u16 interp_gil_ptr;
	__u16 gil_size;
	__u16 gil_locked;
	__u16 gil_last_holder;
	/* Local variables, for dump --locals (user space only): the frame's
	 * array of them, the code's tuple of their names (co_varnames, or
	 * co_localsplusnames from 3.11), and how many are locals: the int
	 * co_nlocals (<= 3.10) or the bytes co_localspluskinds (3.11+) */
	__u16 frame_localsplus;
	__u16 code_varnames;
	__u16 code_nlocals;
	__u16 code_localskinds;
	__u16 tuple_items;		/* ob_item in PyTupleObject */
	/* Derived: the bytes of a frame that hold what the walkers read, at
	 * most PYSIGHT_FRAME_WINDOW.  A frame can end a stack chunk, so more
	 * can run into an unmapped page. */
	__u16 frame_read_len;
	/* PyInterpreterState's sys.modules dict (user space only: thread
	 * names are read from the threading module) */
	__u16 interp_modules;
	/* --asyncio, 3.14+, valid with PY_PROC_F_ASYNC: the thread state's
	 * running task (from _asyncio's .AsyncioDebug), the task's
	 * coroutine, and the coroutine's embedded frame (the last two, and
	 * task_name, also with PY_PROC_F_ASYNC_OUTER) */
	__u16 tstate_running_task;
	__u16 task_coro;
	__u16 gen_iframe;
	/* ... and the task's name and who awaits it, read with the sample:
	 * a task may end before user space reads the sample */
	__u16 task_name;
	__u16 task_awaited_by;
	/* --asyncio before 3.14, valid with PY_PROC_F_ASYNC_OUTER: the
	 * owner of a coroutine's own frame (FRAME_OWNED_BY_GENERATOR) */
	__u8 owner_generator;
	__u8 pad;
	/* --native, 3.11 alone: the frame's bool is_entry, set on the first
	 * frame a call of the eval loop ran (3.12+ mark it with a shim frame
	 * below it instead) */
	__u16 frame_is_entry;
};

enum py_proc_state {
	PY_PROC_PENDING = 0,	/* seen by BPF, user space not done yet */
	PY_PROC_PYTHON = 1,	/* sample it */
	PY_PROC_IGNORED = 2,	/* not Python, or unsupported */
};

/* Code objects' checks may be cached: a uprobe on the interpreter's
 * code dealloc drops each entry before its object is freed. */
#define PY_PROC_F_CODE_CACHE	1
/* --asyncio: off's tstate_running_task, task_coro and gen_iframe hold,
 * and a sample says which of its frames are the running task's. */
#define PY_PROC_F_ASYNC		2
/* --asyncio before 3.14, where no thread state names its running task:
 * the stack's root-most coroutine frame is taken for the task's (the
 * event loop calls into the task's coroutine; the frames below it are
 * the loop's), and a sample's task is that frame's address. */
#define PY_PROC_F_ASYNC_OUTER	4

/*
 * A dict from 3.11 on, as every default build lays it out (pyobj.c reads
 * dicts in user space; BPF reads asyncio's _current_tasks before 3.14):
 * ma_keys at 32; in the keys object, dk_log2_size at 8,
 * dk_log2_index_bytes at 9, dk_kind at 10, dk_nentries at 24 and the
 * index at 32, then the entries: 24 bytes {hash, key, value} for general
 * keys (dk_kind 0), 16 {key, value} for str keys.
 */
#define PY_DICT_KEYS		32
#define PY_KEYS_LOG2_SIZE	8
#define PY_KEYS_LOG2_INDEX	9
#define PY_KEYS_KIND		10
#define PY_KEYS_NENTRIES	24
#define PY_KEYS_INDEX		32
#define PY_KEYS_MAX_LOG2	26	/* a sane bound on a dict's size */

/* _current_tasks entries BPF looks through: a loop each, and a dict of
 * 8 slots holds 5 before it grows */
#define PY_CURRENT_MAX		8

/* Value of the per-pid and per-binary maps. */
struct py_proc {
	__u64 runtime_addr;	/* &_PyRuntime in the target */
	__u64 code_type_addr;	/* &PyCode_Type in the target */
	__u32 state;		/* enum py_proc_state */
	__u32 flags;		/* PY_PROC_F_* */
	__u64 gil_addr;		/* the main GIL state, found by BPF; 0 */
	/* PY_PROC_F_ASYNC_OUTER: _asyncio's _current_tasks dict, {loop:
	 * the task it runs}, or 0 */
	__u64 async_current;
	struct py_offsets off;
	/* user space only: type checks of what the symboliser reads */
	__u64 unicode_type_addr;	/* &PyUnicode_Type */
	__u64 bytes_type_addr;		/* &PyBytes_Type */
};

/*
 * Key of the per-binary maps: an executable's identity.  Size and mtime
 * are in it because a file can be rewritten in place: same inode, other
 * bytes, other facts.
 */
struct py_binary_key {
	__u64 dev;		/* kernel dev_t: major << 20 | minor */
	__u64 ino;
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 pad;
};

struct py_frame {
	__u64 code;		/* PyCodeObject * in the target */
	__s32 lasti;		/* byte offset of the instruction, -1 unknown */
	__u32 check;		/* checksum of the code object's identity */
};

/*
 * --native: two more kinds of entry in a sample's frames.  Among the
 * Python frames, a mark where one call of the eval loop began (3.11+:
 * the frames leaf-side of it, up to the mark before, are what that
 * _PyEval_EvalFrameDefault ran).  After the Python frames, the native
 * ones, leaf first: code is the pc (a return address past the first).
 */
#define PY_LASTI_ENTRY		(-3)	/* code 0 */
#define PY_LASTI_NATIVE		(-2)	/* code: the pc */

enum sample_status {
	ST_COMPLETE = 0,
	ST_TRUNCATED,		/* deeper than PYSIGHT_MAX_FRAMES */
	ST_NO_TSTATE,		/* thread has no PyThreadState (not Python) */
	ST_IDLE,		/* thread state without frames */
	ST_ERR_READ_RUNTIME,	/* reading _PyRuntime / interpreter failed */
	ST_ERR_READ_FRAME,	/* a frame could not be read */
	ST_ERR_READ_CODE,	/* a code object could not be read */
	ST_ERR_BAD_CODE,	/* frame's code field is not a code object */
	ST_ERR_FRAME_LOOP,	/* the frame chain comes back to a frame */
	ST_ERR_THREAD_LOOP,	/* not found, and the thread list loops */
	ST__MAX,
};

/* What a thread was doing when its stack was taken: on a CPU, or off
 * it and why.  Off-CPU stacks end in a pseudo-frame naming the cause. */
enum sample_kind {
	KIND_CPU = 0,
	KIND_SLEEP,		/* [off-cpu: sleep] */
	KIND_LOCK,		/* [off-cpu: lock] */
	KIND_IO,		/* [off-cpu: io] */
	KIND_GIL,		/* [off-cpu: gil] */
	KIND_RUNQUEUE,		/* [runqueue] */
	KIND_OTHER,		/* [off-cpu: other] */
	/*
	 * --asyncio, user space only: a pending task's time, at its await
	 * point.  A task's own wall time, not a thread's: tasks overlap, so
	 * these never add into a thread's or a process's total.
	 */
	KIND_AWAIT_SLEEP,	/* [await: sleep] */
	KIND_AWAIT_IO,		/* [await: io] */
	KIND_AWAIT_LOCK,	/* [await: lock] */
	KIND_AWAIT_TASK,	/* [await: task] */
	KIND_AWAIT_EXECUTOR,	/* [await: executor] */
	KIND_AWAIT_OTHER,	/* [await: other] */
	KIND_AWAIT_BUSY,	/* [await: loop busy] */
	KIND__MAX,
};

#define KIND_AWAIT_FIRST	KIND_AWAIT_SLEEP

enum event_kind {
	EV_SAMPLE = 1,
	EV_NEW_PID = 2,		/* a process BPF does not know yet */
	EV_EXEC = 3,
	EV_EXIT = 4,
	EV_ADOPTED = 5,		/* configured by BPF itself: struct adopt_event */
	EV_CODE = 6,		/* a code object freed soon after it was seen */
	EV_STACK = 7,		/* a stack's frames alone: struct sample_event
				 * and its frames, no sample (the tracer takes
				 * an interval's stack before its weight is
				 * known) */
};

enum counter {
	CNT_SAMPLES = 0,	/* perf events seen for known Python processes */
	CNT_RB_DROPS,		/* ring buffer full */
	CNT_TSTATE_CACHE_HIT,
	CNT_TSTATE_WALK,
	CNT_NEW_PID,
	CNT_BINARY_HIT,		/* new process configured from the binary map */
	CNT_CODE_CACHE_HIT,
	CNT_CODE_FREED,		/* code objects freed while cached */
	CNT_OFF_INTERVALS,	/* off-CPU intervals ended */
	CNT_OFF_WALKED,		/* of them, sent with a stack */
	CNT_THREAD_STATES,	/* per-thread off-CPU states alive */
	CNT_OFF_UNSEEN,		/* intervals whose switch back in was missed */
	CNT_CODE_SENT,		/* of code objects freed, sent (EV_CODE) */
	CNT_OFF_STACKS,		/* stacks walked as a thread left the CPU */
	CNT_OFF_REUSED,		/* stacks reused there, none walked */
	CNT_STATUS_BASE,	/* + enum sample_status */
	CNT__MAX = CNT_STATUS_BASE + ST__MAX,
};

struct event_header {
	__u32 kind;		/* enum event_kind */
	__u32 pid;		/* tgid, host namespace */
	__u32 tid;
	__u32 cpu;
	__u64 ts;		/* bpf_ktime_get_ns */
};

struct sample_event {
	struct event_header hdr;
	__u64 stack_hash;	/* frames + pid, 0 when nframes == 0 */
	__u64 cgroup_id;
	__u64 weight;		/* ns: CPU time since the thread's last sample,
				 * or time off the CPU; 0: one sample */
	__u32 status;		/* enum sample_status */
	__s32 kstack;		/* kernel stack id, or -1 */
	__u16 nframes;
	__u8 has_frames;	/* frames[] follow (first time this hash) */
	__u8 kind;		/* enum sample_kind */
	/* PY_PROC_F_ASYNC: the frames, leaf first, that are the running
	 * asyncio task's (its coroutine's frame the last of them); 0 when
	 * no task ran or its frame was not in the stack */
	__u16 task_depth;
	__u16 task_flags;	/* SAMPLE_TASK_* */
	char comm[PYSIGHT_COMM_LEN];	/* thread name */
	__u64 task;		/* that task, 0: none: the Task object with
				 * SAMPLE_TASK_OBJ, else its coroutine's frame
				 * (PY_PROC_F_ASYNC_OUTER) */
	__u64 task_name;	/* SAMPLE_TASK_OBJ: the task's name object */
	__u64 task_by;		/* ... and its task_awaited_by (0: none, and
				 * always before 3.14) */
	__u16 nnative;		/* --native: native frames after the Python */
	__u8 native_stop;	/* enum native_stop: why their walk ended */
	__u8 pad[5];
	/* when has_frames, nframes struct py_frame follow, leaf first, then
	 * nnative native ones (PY_LASTI_NATIVE), leaf first */
};

/* Why a native walk ended. */
enum native_stop {
	NATIVE_NONE = 0,	/* no walk: the process's mappings not loaded */
	NATIVE_END,		/* at the outermost frame: whole */
	NATIVE_NO_MAPPING,	/* a pc in no known binary (JIT, anonymous
				 * code, a library loaded since) */
	NATIVE_NO_ROW,		/* the binary has no rule there */
	NATIVE_READ,		/* the stack could not be read */
	NATIVE_DEEP,		/* more than PYSIGHT_NATIVE_FRAMES */
	NATIVE__MAX,
};

/* sample_event.task is the Task object, read by BPF with the sample:
 * always on 3.14+, and before when _current_tasks named it */
#define SAMPLE_TASK_OBJ		1

/* --cgroup: a cgroup (v2) whose tasks, and its descendants', to keep. */
struct cgroup_filter {
	__u64 id;		/* the cgroup's id (its inode) */
	__u32 level;		/* its depth below the root */
	__u32 pad;
};

/* What the task iterator tells user space of a thread. */
struct thread_record {
	__u32 tgid, tid;
	__u32 ns_tid;		/* tid in its own pid namespace */
	__u32 state;		/* task __state */
	__u64 fsbase;		/* thread pointer: pthread_t (<= 3.10) */
	__u64 off_since;	/* off the CPU since (ktime ns), 0: on it */
	__u64 cgroup_id;	/* its cgroup v2 */
	__u8 kind;		/* enum sample_kind when off the CPU */
	__u8 on_cpu;
	__u8 exiting;		/* the sweep: its last record, from its exit */
	__u8 pad;
	__s32 kstack;		/* the sweep, --kernel-stacks: its kernel
				 * stack when it last switched out, -1 */
	char comm[PYSIGHT_COMM_LEN];
	/* the scheduler's own counts, for the sampled sweep (--offcpu=sweep) */
	__u64 now;		/* ktime ns when this record was taken */
	__u64 start_time;	/* the thread's start, ktime ns */
	__u64 ran_ns;		/* se.sum_exec_runtime */
	__u64 run_delay_ns;	/* sched_info.run_delay: run-queue wait */
	__u64 switches;		/* nvcsw + nivcsw */
	__u64 vswitches;	/* nvcsw: those where it blocked */
	__u64 arrivals;		/* sched_info.pcount: times it was switched
				 * in, 0 without CONFIG_SCHED_INFO */
	/* the sweep: the last pass that found the thread as its previous
	 * record left it (ktime ns), 0: none since that record */
	__u64 same_until;
	/* the sweep with --native, off the CPU: the user registers it left
	 * user mode with, its native stack's start (0: none) */
	__u64 user_ip, user_sp, user_bp;
};

enum iter_mode {
	ITER_OPEN = 1,		/* open an interval for each blocked thread */
	ITER_REPORT = 2,	/* report threads (and close their intervals) */
	ITER_LIST = 3,		/* report threads, change nothing (dump) */
	ITER_SWEEP = 4,		/* the sweep: report threads, note each */
	ITER_SWEEP_MOVED = 5,	/* the sweep: report those that moved since */
};

struct pid_event {
	struct event_header hdr;
	char comm[PYSIGHT_COMM_LEN];
};

/*
 * A process BPF configured without asking: at its exec, from the binary
 * map, or at its fork, from its parent.  Ahead of its samples in the
 * ring, so user space knows it even when the samples are read after it
 * exited (its entry in procs is gone by then).  proc.state is
 * PY_PROC_IGNORED when it exec'd a program known not to be Python.
 */
struct adopt_event {
	struct event_header hdr;
	struct py_proc proc;
};

/*
 * A code object freed soon after a stack walk first met it: its bytes as
 * they were at its dealloc, so user space can still name it when the
 * sample that holds it is read after the free (the last stack of a short
 * script: its module's code dies microseconds after the stack is taken).
 * Regions in order: the code object's window, its name, qualname and file
 * name (str objects: header and text), its line table (a bytes object).
 * A region's len is what was read, 0 when nothing was.  The bytes are the
 * target's: hostile, parsed as if read from its memory.
 */
#define PYSIGHT_SNAP_STR	576	/* a str's header and 512 bytes of text */
#define PYSIGHT_SNAP_LT		4128	/* a bytes header and 4 KiB of table */

enum { SNAP_CODE, SNAP_NAME, SNAP_QUAL, SNAP_FILE, SNAP_LT, SNAP__MAX };

struct snap_region {
	__u64 addr;
	__u32 len;
	__u32 pad;
};

struct code_event {
	struct event_header hdr;
	__u64 code;
	__u32 check;		/* the identity BPF cached for it */
	__u32 pad;
	struct snap_region r[SNAP__MAX];
	__u8 code_win[PYSIGHT_CODE_WINDOW];
	__u8 name[PYSIGHT_SNAP_STR];
	__u8 qual[PYSIGHT_SNAP_STR];
	__u8 file[PYSIGHT_SNAP_STR];
	__u8 lt[PYSIGHT_SNAP_LT];
};

/* Does a 3.11+ dict keys header read as one: the log2 of its size and
 * of its index's bytes, and its kind (0 general, 1 str, 2 split)? */
static inline int pysight_keys_ok(__u8 log2, __u8 log2_index, __u8 kind)
{
	return log2 >= 3 && log2 <= PY_KEYS_MAX_LOG2 && log2_index >= log2 &&
	       log2_index <= log2 + 3 && kind <= 2;
}

/* The bytes of an entry of keys of that kind: {hash, key, value} for
 * general keys, {key, value} for str keys. */
static inline __u32 pysight_keys_entry(__u8 kind)
{
	return kind ? 16 : 24;
}

/*
 * A code object's identity as both sides compute it.  A freed and reused
 * address must not check alike, so the name string's cached hash is in it,
 * not only pointers that an allocator may hand out again.
 */
static inline __u64 pysight_mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/*
 * Does a list come back to a node passed before?  A target can make two
 * frames each other's caller, or ring its thread states; without this
 * check each sample of a looping stack was PYSIGHT_MAX_FRAMES copies
 * (16 KiB in the ring buffer, a thousand reads) and each walk of a ringed
 * thread list PYSIGHT_MAX_THREADS steps.  Brent's method: compare each
 * next node with a mark moved forward at powers of two, so a loop of
 * length L entered after M nodes is found within M + 2L steps, with two
 * words of state.  The BPF walks and dump's walks in user space share it,
 * so both stop a loop at the same node.
 */
struct pysight_loop {
	__u64 mark;
	__u32 power, lam;
};

static inline void pysight_loop_start(struct pysight_loop *l, __u64 first)
{
	l->mark = first;
	l->power = 1;
	l->lam = 0;
}

static inline int pysight_loop_seen(struct pysight_loop *l, __u64 next)
{
	if (next && next == l->mark)
		return 1;
	if (++l->lam == l->power) {
		l->mark = next;
		l->power <<= 1;
		l->lam = 0;
	}
	return 0;
}

/*
 * What identifies a code object: its strings, its first line, the name's
 * content (its hash), and its line table: address, length and the first
 * PYSIGHT_LT_HEAD bytes.  A recycled object with the same name and first
 * line but other lines is told apart, unless its table has the same
 * address and length and differs only past those bytes.
 */
#define PYSIGHT_LT_HEAD	64

struct code_ident {
	__u64 name, file, qual, name_hash;
	__u64 linetable, linetable_len;
	__u64 lt_head[PYSIGHT_LT_HEAD / 8];	/* zero past the length */
	__u32 first;
	__u32 pad;
};

static inline __u32 pysight_code_check(const struct code_ident *id)
{
	__u64 h = pysight_mix64(id->name ^ (id->file << 1) ^
				((__u64)id->first << 32));
	int i;

	h = pysight_mix64(h ^ id->qual ^ id->name_hash);
	h = pysight_mix64(h ^ id->linetable ^ (id->linetable_len << 17));
	for (i = 0; i < PYSIGHT_LT_HEAD / 8; i++)
		h = pysight_mix64(h ^ id->lt_head[i]);
	return (__u32)(h ^ (h >> 32));
}

/* How many of the line table's bytes go into the check. */
static inline __u32 pysight_lt_head_len(__u64 linetable_len)
{
	return linetable_len < PYSIGHT_LT_HEAD ? (__u32)linetable_len :
						  PYSIGHT_LT_HEAD;
}

/*
 * --native: how to step from one native frame to its caller on x86-64,
 * compiled by user space from a binary's .eh_frame.  A row holds from its
 * pc (the binary's own virtual address) up to the next row's.  The
 * return address sits at CFA - 8 in every row: .eh_frame that says
 * otherwise gets UNW_CFA_NONE.
 */
enum unwind_cfa {
	UNW_CFA_NONE = 0,	/* no rule here (a gap, or one not kept) */
	UNW_CFA_RSP,		/* CFA = rsp + cfa_off */
	UNW_CFA_RBP,		/* CFA = rbp + cfa_off */
	UNW_CFA_PLT,		/* a PLT entry's expression: CFA = rsp + 8,
				 * + 8 more from byte cfa_off of its 16 */
	UNW_CFA_END,		/* the return address is undefined: the
				 * thread's outermost frame */
};

enum unwind_rbp {
	UNW_RBP_SAME = 0,	/* the caller's rbp is this frame's */
	UNW_RBP_CFA,		/* saved at CFA + rbp_off */
	UNW_RBP_LOST,		/* kept some other way: unknown above here */
};

struct unwind_row {
	__u32 pc;
	__u8 cfa;		/* enum unwind_cfa */
	__u8 rbp;		/* enum unwind_rbp */
	__s16 rbp_off;
	__s32 cfa_off;
	/* an array map's values are 8-byte aligned: the pool user space
	 * maps holds rows 16 bytes apart, so they are 16 bytes here too */
	__u32 pad;
};

/*
 * A process's executable mappings as BPF searches them: sorted by start,
 * each [start, end) running its binary's code from virtual address
 * vaddr on, whose rows are native_rows[row_first, row_first + row_n).
 */
#define NATIVE_MAPS_MAX		512

struct native_mapping {
	__u64 start, end, vaddr;
	__u32 row_first, row_n;
};

struct native_maps {
	__u32 n, pad;
	struct native_mapping m[NATIVE_MAPS_MAX];
};

/*
 * One step of a native walk, for BPF's walk and user space's alike: the
 * registers of a frame, and how to reach its caller's by the row that
 * holds its pc.  pysight_unwind_cfa gives the CFA, or why there is none;
 * the caller reads the return address at CFA - 8 and, when the row says
 * rbp was saved (UNW_RBP_CFA), rbp at CFA + rbp_off; pysight_unwind_next
 * then moves to the caller: 0, or why the walk ends (enum native_stop).
 */
struct pysight_unwind {
	__u64 pc, sp, bp;
};

/* Where to look a frame's pc up: a caller's pc (depth > 0) is a return
 * address, the byte after its call, which may be the next function's
 * first. */
static inline __u64 pysight_unwind_lookup(__u64 pc, __u32 depth)
{
	return depth ? pc - 1 : pc;
}

/*
 * Where no row rules (code of no file: a JIT's, the trampolines of
 * python -X perf; a binary without .eh_frame), the frame-pointer
 * convention, when rbp plausibly points at a frame above sp: CFA = rbp
 * + 16, the caller's rbp saved at CFA - 16.  0: no such frame.
 */
#define PYSIGHT_FP_SPAN		(8u << 20)	/* rbp at most this above sp */

static inline int pysight_unwind_fp(const struct pysight_unwind *u,
				    struct unwind_row *r)
{
	/* at a return address in a frame-pointer function rbp may be sp:
	 * push rbp; mov rbp, rsp; call */
	if (u->bp < u->sp || u->bp - u->sp >= PYSIGHT_FP_SPAN || (u->bp & 7))
		return 0;
	r->pc = 0;
	r->cfa = UNW_CFA_RBP;
	r->cfa_off = 16;
	r->rbp = UNW_RBP_CFA;
	r->rbp_off = -16;
	r->pad = 0;
	return 1;
}

static inline __u32 pysight_unwind_cfa(const struct unwind_row *r,
				       const struct pysight_unwind *u,
				       __u64 *cfa)
{
	switch (r->cfa) {
	case UNW_CFA_RSP:
		*cfa = u->sp + r->cfa_off;
		return 0;
	case UNW_CFA_RBP:
		if (!u->bp)
			return NATIVE_NO_ROW;
		*cfa = u->bp + r->cfa_off;
		return 0;
	case UNW_CFA_PLT:
		*cfa = u->sp + 8 + ((u->pc & 15) >= (__u64)r->cfa_off ? 8 : 0);
		return 0;
	case UNW_CFA_END:
		return NATIVE_END;
	default:
		return NATIVE_NO_ROW;
	}
}

static inline __u32 pysight_unwind_next(const struct unwind_row *r,
					struct pysight_unwind *u, __u64 cfa,
					__u64 ra, __u64 saved_bp)
{
	if (r->rbp == UNW_RBP_CFA)
		u->bp = saved_bp;
	else if (r->rbp == UNW_RBP_LOST)
		u->bp = 0;
	if (!ra)	/* a thread's first frame: its caller is 0 */
		return NATIVE_END;
	if (cfa <= u->sp)	/* the stack grows down: never back */
		return NATIVE_READ;
	u->sp = cfa;
	u->pc = ra;
	return 0;
}

#endif /* __PYSIGHT_H */
