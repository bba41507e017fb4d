"""Process handling, /proc readings, bpftool, statistics."""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(REPO, "tools", "bench_workloads")
TEST_WORKLOADS = os.path.join(REPO, "tests", "workloads")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


# --------------------------------------------------------------------------
# Processes.  Everything we start gets its own session; we kill only those
# sessions, by the pid of their leader, and only if they are still ours.

_started = []


def start(argv, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    proc = subprocess.Popen([str(a) for a in argv], start_new_session=True, **kw)
    _started.append(proc)
    return proc


def kill_group(proc, sig=signal.SIGKILL):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_groups(procs, timeout=10):
    """Kill the process groups of procs (ours), then reap each, waiting
    up to `timeout` s for one."""
    for p in procs:
        kill_group(p)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass


def wait_rusage(proc, timeout, stop_sig=signal.SIGINT):
    """Wait for proc (ours) with wait4, so that its rusage is its own (the
    children it reaped are included, which our profilers do not have in
    attach mode).  After `timeout` s send stop_sig, then SIGKILL 10 s later.
    Returns (returncode, rusage or None)."""
    if proc.returncode is not None:
        return proc.returncode, getattr(proc, "rusage", None)
    deadline = time.monotonic() + timeout
    sent = None
    while True:
        try:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            proc.returncode = -1
            return -1, None
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            proc.rusage = ru
            return proc.returncode, ru
        now = time.monotonic()
        if now > deadline and sent is None:
            try:
                proc.send_signal(stop_sig)
            except ProcessLookupError:
                pass
            sent = now
        elif sent is not None and now - sent > 10:
            kill_group(proc)
            sent = now + 1e9
        time.sleep(0.01)


def cleanup_all():
    for proc in _started:
        if proc.returncode is None and proc.poll() is None:
            kill_group(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        else:
            kill_group(proc)  # leftovers in its session (none expected)


class LineReader:
    """Collects a pipe's lines in a thread; can wait for a pattern."""

    def __init__(self, pipe):
        self.lines = []
        self.cond = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self.thread.start()

    def _run(self, pipe):
        for line in pipe:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, pattern, timeout):
        """First line matching the regex, or None after timeout / EOF."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self.cond.wait(left)

    def join(self, timeout=10):
        self.thread.join(timeout)

    @property
    def text(self):
        return "\n".join(self.lines)


def start_ready(argv, timeout=60, stdin=subprocess.DEVNULL):
    """Start a workload that prints 'ready PID'; return (proc, reader)."""
    proc = start(argv, stdin=stdin, stdout=subprocess.PIPE, text=True)
    reader = LineReader(proc.stdout)
    if not reader.wait_for(r"^ready \d+", timeout):
        kill_group(proc)
        raise RuntimeError("workload did not start: %s" % " ".join(map(str, argv)))
    return proc, reader


# --------------------------------------------------------------------------
# /proc


def cpu_reading(pid):
    """(tids, schedstat ns summed over live threads, utime+stime ns from
    /proc/PID/stat) of pid, or None if it is gone."""
    total = 0
    try:
        tasks = frozenset(os.listdir("/proc/%d/task" % pid))
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        stat_ns = (int(fields[11]) + int(fields[12])) * 1e9 / CLK_TCK
    except (OSError, ValueError, IndexError):
        return None
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return tasks, total, stat_ns


def cpu_delta_ns(r0, r1):
    """CPU ns between two cpu_reading()s: schedstat (ns resolution) when the
    same threads were there both times, else /proc/PID/stat (10 ms ticks,
    but it keeps the time of threads that exited)."""
    if r0 is None or r1 is None:
        return None
    if r0[0] == r1[0]:
        return r1[1] - r0[1]
    return r1[2] - r0[2]


def cpu_ns(pid):
    """CPU time (user+system) of every live thread of pid, in ns, from
    schedstat; None if it is gone."""
    r = cpu_reading(pid)
    return None if r is None else r[1]


def vm_hwm_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def machine_facts():
    facts = {"nproc": os.cpu_count(), "kernel": os.uname().release}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    facts["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            facts["mem_mib"] = int(f.readline().split()[1]) // 1024
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/loadavg") as f:
            facts["loadavg_at_start"] = f.read().split()[:3]
    except OSError:
        pass
    for key, path in (("perf_event_max_sample_rate", "/proc/sys/kernel/perf_event_max_sample_rate"),
                      ("perf_cpu_time_max_percent", "/proc/sys/kernel/perf_cpu_time_max_percent")):
        try:
            with open(path) as f:
                facts[key] = int(f.read())
        except (OSError, ValueError):
            pass
    return facts


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# --------------------------------------------------------------------------
# BPF


def bpf_ids_of(pid):
    """(prog ids, map ids) held through fds by process pid."""
    progs, maps = set(), set()
    d = "/proc/%d/fdinfo" % pid
    try:
        fds = os.listdir(d)
    except OSError:
        return progs, maps
    for fd in fds:
        try:
            with open(os.path.join(d, fd)) as f:
                text = f.read()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s*(\d+)", text, re.M)
        if m:
            progs.add(int(m.group(1)))
        m = re.search(r"^map_id:\s*(\d+)", text, re.M)
        if m:
            maps.add(int(m.group(1)))
    return progs, maps


def bpftool_json(*args):
    out = subprocess.run(["bpftool", "-j"] + list(args), capture_output=True, text=True,
                         timeout=60)
    if out.returncode:
        raise RuntimeError("bpftool %s: %s" % (" ".join(args), out.stderr.strip()))
    return json.loads(out.stdout or "null")


def prog_stats(ids):
    """{id: {name, run_time_ns, run_cnt, map_ids}} for the given prog ids."""
    res = {}
    for p in bpftool_json("prog", "show") or []:
        if p["id"] in ids:
            res[p["id"]] = {"name": p.get("name"), "run_time_ns": p.get("run_time_ns", 0),
                            "run_cnt": p.get("run_cnt", 0), "map_ids": p.get("map_ids", [])}
    return res


def prog_ids_for(pid, timeout=5.0):
    """Prog ids of pysight process pid (retry: fds appear while it starts)."""
    deadline = time.monotonic() + timeout
    while True:
        progs, maps = bpf_ids_of(pid)
        if progs or time.monotonic() > deadline:
            # maps of the programs too (maps may be held only via the progs)
            return progs, maps
        time.sleep(0.05)


def map_info(ids):
    return [m for m in (bpftool_json("map", "show") or []) if m["id"] in ids]


def map_entries(map_id):
    try:
        return len(bpftool_json("map", "dump", "id", str(map_id)) or [])
    except (RuntimeError, subprocess.TimeoutExpired, ValueError):
        return None


def percpu_value(map_id, key):
    """Sum over CPUs of a per-CPU array's u64 at key."""
    out = bpftool_json("map", "lookup", "id", str(map_id), "key",
                       *[str(b) for b in key.to_bytes(4, "little")])
    if isinstance(out, list):
        out = out[0]
    vals = out.get("values") or []
    total = 0
    for v in vals:
        val = v.get("value")
        if isinstance(val, list):  # raw bytes as hex strings
            val = int.from_bytes(bytes(int(x, 16) for x in val), "little")
        total += int(val)
    return total


SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
BPF_ENABLE_STATS, BPF_STATS_RUN_TIME = 32, 0  # include/uapi/linux/bpf.h


def _enable_stats_fd():
    """bpf(BPF_ENABLE_STATS): run-time stats while the fd is open (5.8+),
    counted apart from the sysctl, so another session that sets
    kernel.bpf_stats_enabled back to 0 does not stop them.  None if it
    cannot."""
    import ctypes
    if SYS_BPF is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(BPF_STATS_RUN_TIME.to_bytes(4, "little"), 8)
    fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, 8)
    return fd if fd >= 0 else None


class BpfStats:
    """BPF run-time stats on for the duration.  A BPF_ENABLE_STATS fd keeps
    them on without touching kernel.bpf_stats_enabled, which another
    session on a shared host may write back to 0 in the meantime (that
    zeroed some windows' BPF figures); where that call fails, the sysctl
    is set to 1 and restored afterwards."""
    PATH = "/proc/sys/kernel/bpf_stats_enabled"

    def __enter__(self):
        self.old = None
        self.fd = _enable_stats_fd()
        if self.fd is None:
            log("BPF_ENABLE_STATS failed: setting %s" % self.PATH)
            with open(self.PATH) as f:
                self.old = f.read().strip()
            with open(self.PATH, "w") as f:
                f.write("1")
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
        if self.old is not None:
            with open(self.PATH, "w") as f:
                f.write(self.old)
        return False


# --------------------------------------------------------------------------
# Statistics


def summarize(values):
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    res = {"n": len(vals), "median": statistics.median(vals), "min": vals[0], "max": vals[-1]}
    if len(vals) >= 4:
        q = statistics.quantiles(vals, n=4, method="inclusive")
        res["q1"], res["q3"] = q[0], q[2]
    return res


def fmt_spread(s, fmt="%.2f", unit=""):
    if not s:
        return "n/a"
    return ("%s%s (%s to %s, n=%d)" % (fmt % s["median"], unit, fmt % s["min"], fmt % s["max"],
                                      s["n"]))
