"""The profilers under test: how to start them, stop them and read their output.

Rates mean what each tool means by them: pysight's -r is samples per second
per CPU (each sample is the thread on that CPU); py-spy's -r and austin's
interval are snapshots per second of the whole process (every thread).  For a
single busy thread the two give the same number of samples.
"""
import os
import re
import signal
import subprocess
import threading
import time

from . import common
from .common import LineReader, log

VENV = os.path.join(common.REPO, ".output", "bench-venv")
PYSIGHT = os.environ.get("PYSIGHT_BIN", os.path.join(common.REPO, ".output", "pysight"))
PYSPY = os.path.join(VENV, "bin", "py-spy")
AUSTIN = os.path.join(VENV, "bin", "austin")

# austin-dist 4.x wheels need glibc 2.38; 3.7.0 is the newest that runs on
# Debian 12 (glibc 2.36).  We install the newest that starts.
AUSTIN_VERSIONS = ["austin-dist", "austin-dist==3.7.0", "austin-dist==3.6.0"]

TOOLS = ["pysight", "py-spy", "py-spy-nb", "austin"]
LABELS = {"none": "no profiler", "pysight": "pysight", "py-spy": "py-spy",
          "py-spy-nb": "py-spy --nonblocking", "austin": "austin -s"}


def _runs(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def ensure_tools(python):
    """Build pysight if missing; create the venv with py-spy and austin."""
    if not os.access(PYSIGHT, os.X_OK):
        log("building pysight (make)")
        subprocess.run(["make", "-C", common.REPO], check=True)
    if not os.path.exists(os.path.join(VENV, "bin", "pip")):
        log("creating %s" % VENV)
        subprocess.run([python, "-m", "venv", VENV], check=True)
    pip = os.path.join(VENV, "bin", "pip")
    if not _runs([PYSPY, "--version"]):
        log("pip install py-spy")
        subprocess.run([pip, "install", "-q", "py-spy"], check=True)
    if not _runs([AUSTIN, "--version"]):
        for spec in AUSTIN_VERSIONS:
            log("pip install %s" % spec)
            subprocess.run([pip, "install", "-q", spec], check=False)
            if _runs([AUSTIN, "--version"]):
                break
        else:
            raise RuntimeError("no austin-dist release runs here")
    return versions()


def versions():
    def first_line(argv):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            return None
    return {"pysight": first_line([PYSIGHT, "--version"]),
            "py-spy": first_line([PYSPY, "--version"]),
            "austin": first_line([AUSTIN, "--version"])}


# --------------------------------------------------------------------------
# Running


class Running:
    """One profiler run: one process (pysight, host-wide or -p), or one per
    target pid (py-spy and austin take a single pid)."""

    def __init__(self, tool, procs, readers, out_files, argvs):
        self.tool = tool
        self.procs = procs
        self.readers = readers
        self.out_files = out_files
        self.argvs = argvs
        self.t_start = time.monotonic()
        self.t_ready = None
        self.results = []
        self.hwm_kib = [0] * len(procs)
        self._hwm_stop = threading.Event()
        self._hwm = threading.Thread(target=self._poll_hwm, daemon=True)
        self._hwm.start()

    def _poll_hwm(self):
        """Peak RSS: VmHWM, polled (wait4's ru_maxrss would count the RSS
        of the process that forked it)."""
        while True:
            for i, p in enumerate(self.procs):
                v = common.vm_hwm_kib(p.pid) if p.returncode is None else None
                if v and v > self.hwm_kib[i]:
                    self.hwm_kib[i] = v
            if self._hwm_stop.wait(0.05):
                return

    def wait_ready(self, timeout=30):
        for proc, reader in zip(self.procs, self.readers):
            if self.tool == "pysight":
                if not reader.wait_for(r"pysight: sampling", timeout):
                    raise RuntimeError("pysight did not start:\n" + reader.text)
            elif self.tool.startswith("py-spy"):
                reader.wait_for(r"Sampling process", 3.0)
            else:
                time.sleep(0.3)  # austin says nothing when it attaches
            if proc.poll() is not None:
                raise RuntimeError("%s exited early:\n%s" % (self.tool, reader.text))
        self.t_ready = time.monotonic()
        return self.t_ready

    def cpu_reading(self):
        return [common.cpu_reading(p.pid) for p in self.procs]

    @staticmethod
    def cpu_delta_ns(r0, r1):
        vals = [common.cpu_delta_ns(a, b) for a, b in zip(r0, r1)]
        return None if any(v is None for v in vals) else sum(vals)

    def stop(self, sig=signal.SIGINT):
        for p in self.procs:
            if p.returncode is None and p.poll() is None:
                try:
                    p.send_signal(sig)
                except ProcessLookupError:
                    pass

    def wait(self, timeout=60):
        """Wait for every process; returns [(rc, rusage)]."""
        res = []
        for p in self.procs:
            res.append(common.wait_rusage(p, timeout))
        self._hwm_stop.set()
        self._hwm.join(5)
        for r in self.readers:
            r.join()
        self.results = res
        return res

    @property
    def maxrss_kib(self):
        """Peak RSS of the largest of our profiler processes (VmHWM)."""
        return max(self.hwm_kib) or None

    @property
    def cpu_total_s(self):
        vals = [ru.ru_utime + ru.ru_stime for _, ru in self.results if ru is not None]
        return sum(vals) if vals else None

    @property
    def stderr(self):
        return "\n".join(r.text for r in self.readers)


def _start(tool, argv, out):
    proc = common.start(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                        errors="replace")
    return proc, LineReader(proc.stderr)


def attach(tool, pids, rate, outdir, tag, threads=False, duration=None, extra=(), wall=False,
           out=None):
    """Start `tool` on running pids.  pids=None: pysight host-wide.
    extra: more pysight options (--mode wall, --cgroup PATH).  wall: py-spy
    --idle and austin without -s (pysight's mode is in extra).  out: one
    output file for every instance (/dev/null when only the cost counts)."""
    procs, readers, outs, argvs = [], [], [], []
    if tool == "pysight":
        out = out or os.path.join(outdir, "%s.folded" % tag)
        argv = [PYSIGHT, "record", "-r", rate, "-o", out]
        for pid in pids or []:
            argv += ["-p", pid]
        if threads:
            argv.append("--threads")
        if duration:
            argv += ["-d", duration]
        argv += list(extra)
        p, r = _start(tool, argv, out)
        procs, readers, outs, argvs = [p], [r], [out], [argv]
    else:
        fixed = out
        for i, pid in enumerate(pids):
            out = fixed or os.path.join(outdir, "%s-%d.%s" % (tag, i, "austin" if tool == "austin"
                                                             else "raw"))
            if tool == "austin":
                argv = [AUSTIN] + _austin_opts(rate, wall) + ["-o", out, "-p", pid]
                if duration:
                    argv[1:1] = ["-x", str(max(1, round(duration)))]
            else:
                argv = [PYSPY, "record"] + _pyspy_opts(tool, rate, wall, threads) + ["-o", out,
                                                                                   "-p", pid]
                if duration:
                    argv += ["-d", max(1, round(duration))]
            p, r = _start(tool, argv, out)
            procs.append(p)
            readers.append(r)
            outs.append(out)
            argvs.append(argv)
    return Running(tool, procs, readers, outs, [[str(a) for a in a_] for a_ in argvs])


def _austin_opts(rate, wall):
    # without -s austin samples wall time, idle threads included
    return ([] if wall else ["-s"]) + ["-i", "%dus" % round(1e6 / rate)]


def _pyspy_opts(tool, rate, wall, threads):
    argv = ["-r", rate, "-f", "raw"]
    if wall:
        argv.append("--idle")
    if tool == "py-spy-nb":
        argv.append("--nonblocking")
    if threads:
        argv.append("--threads")
    return argv


def launch_argv(tool, rate, out, command, wall=False, threads=False, extra=()):
    """argv that has `tool` start `command` and profile it to exit.  wall
    and threads as in attach(); extra: more pysight options."""
    if tool == "pysight":
        return ([PYSIGHT, "record", "-r", rate, "-o", out] + (["--threads"] if threads else [])
                + list(extra) + ["--"] + command)
    if tool == "austin":  # austin always says the thread
        return [AUSTIN] + _austin_opts(rate, wall) + ["-o", out] + command
    return [PYSPY, "record"] + _pyspy_opts(tool, rate, wall, threads) + ["-o", out, "--"] + command


# --------------------------------------------------------------------------
# Output


def parse_pysight_summary(text):
    """Numbers from pysight's summary on stderr."""
    res = {}
    m = re.search(r"pysight: ([\d.]+) s, (\d+) samples of Python processes \((\d+) process(?:es)?, "
                  r"(\d+) threads?", text)
    if m:
        res.update(seconds=float(m.group(1)), samples=int(m.group(2)),
                   processes=int(m.group(3)), threads=int(m.group(4)))
    for m in re.finditer(r"pysight:\s{3}(\S.*?)\s+(\d+) \(([\d.]+)%\)", text):
        res.setdefault("status", {})[m.group(1).strip()] = int(m.group(2))
    m = re.search(r"errors ([\d.]+)%, lost (\d+) \(ring buffer full\), (\d+) unknown frames", text)
    if m:
        res.update(error_pct=float(m.group(1)), lost=int(m.group(2)),
                   unknown_frames=int(m.group(3)))
    m = re.search(r"wrote (\d+) stacks", text)
    if m:
        res["stacks"] = int(m.group(1))
    return res


def parse_pyspy_stderr(text):
    res = {}
    m = re.search(r"Samples: (\d+) Errors: (\d+)", text)
    if m:
        res.update(samples=int(m.group(1)), errors=int(m.group(2)))
    return res


def parse_austin_stderr(text):
    res = {}
    m = re.search(r"Error rate : \S*?(\d+)/(\d+)", text)
    if m:
        res.update(errors=int(m.group(1)), samples=int(m.group(2)))
    m = re.search(r"Long sampling rate : \S*?(\d+)/(\d+)", text)
    if m:  # samples that took longer than the interval: it fell behind
        res["long"] = int(m.group(1))
    return res


def parse_sweep_summary(text):
    """pysight's "sampled sweep: N ticks, X us each (Y us of it reading
    stacks), S stacks read (M in one go, D dropped: ...) of R thread
    records" line; older builds print no "in one go", or no "dropped"."""
    m = re.search(r"sampled sweep: (\d+) ticks, ([\d.]+) us each \(([\d.]+) us of it reading "
                  r"stacks\), (\d+) stacks read (?:\((\d+) in one go(?:, (\d+) dropped[^)]*)?\) )?"
                  r"of (\d+) thread records", text)
    if not m:
        return {}
    return {"ticks": int(m.group(1)), "tick_us": float(m.group(2)),
            "stack_read_us": float(m.group(3)), "stacks_read": int(m.group(4)),
            "in_one_go": int(m.group(5)) if m.group(5) else None,
            "dropped": int(m.group(6)) if m.group(6) else None,
            "thread_records": int(m.group(7))}


_FRAME_RE = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _folded_frame(text):
    if text.startswith("[") and text.endswith("]"):
        return (text, None, None)
    m = _FRAME_RE.match(text)
    if not m:
        return (text, None, None)
    return (m.group("name"), m.group("file"), int(m.group("line")) if m.group("line") else None)


def parse_folded(path):
    """[(frames root first, count, thread)] from a folded file (pysight, py-spy raw).
    A root frame 'thread ...' (pysight --threads, py-spy --threads) becomes thread."""
    stacks = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            parts = stack.split(";")
            thread = None
            if parts and (parts[0].startswith("thread ") or parts[0].startswith("process ")):
                while parts and (parts[0].startswith("thread ") or parts[0].startswith("process ")):
                    if parts[0].startswith("thread "):
                        thread = parts[0]
                    parts = parts[1:]
            stacks.append(([_folded_frame(p) for p in parts], int(count), thread))
    return stacks


def parse_austin(path):
    """Austin's collapsed samples: P<pid>;T<iid>:<tid>;file:func:line;... metric.
    Each line is one sample of one thread; a zero metric (idle) is left out."""
    stacks = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            stack, _, metric = line.rpartition(" ")
            try:
                value = int(metric.split(",")[0])
            except ValueError:
                continue
            if value <= 0:
                continue
            parts = stack.split(";")
            thread = None
            frames = []
            for p in parts:
                if re.match(r"^P\d+$", p):
                    continue
                if re.match(r"^T[^;]*$", p) and thread is None and not frames:
                    thread = p
                    continue
                if p == ":INVALID:" or p.endswith(":INVALID:"):
                    frames.append(("[invalid]", None, None))
                    continue
                bits = p.rsplit(":", 2)
                if len(bits) == 3 and bits[2].isdigit():
                    frames.append((bits[1], bits[0], int(bits[2])))
                else:
                    frames.append(("[" + p + "]", None, None))
            stacks.append((frames, 1, thread))
    return stacks


def load(tool, path):
    if not os.path.exists(path):
        return []
    if tool == "austin":
        return parse_austin(path)
    return parse_folded(path)


def is_bad_frame(frame):
    name = frame[0]
    return (name.startswith("[") and frame[1] is None) or name in ("<unknown>", "INVALID")


def short_name(name):
    """Last component of a qualname: Beta.beta_work -> beta_work."""
    return name if name.startswith("<") else name.rsplit(".", 1)[-1]


_TID_RE = re.compile(r"^(?:thread (\d+)|thread \((\d+)\)|T\d+:(\d+))")


def wall_totals(tool, path, rate, functions=()):
    """Wall seconds in a wall-mode profile: ({function: s}, {tid: s}).  A
    function's seconds are every stack through it (the first of
    `functions` on the stack wins); a thread's, every stack under its root
    (pysight and py-spy with --threads: "thread TID (NAME)", "thread (TID):
    NAME"; austin: "T<iid>:TID").  pysight's wall profile and austin's wall
    metric count microseconds, py-spy counts samples at `rate`."""
    funcs = dict.fromkeys(functions, 0.0)
    threads = {}
    if not os.path.exists(path):
        return funcs, threads
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            stack, _, count = line.rpartition(" ")
            try:
                value = int(count.split(",")[0])
            except ValueError:
                continue
            secs = value / 1e6 if tool in ("pysight", "austin") else value / rate
            parts = stack.split(";")
            for p in parts[:2]:
                m = _TID_RE.match(p)
                if m:
                    tid = int(next(g for g in m.groups() if g))
                    threads[tid] = threads.get(tid, 0.0) + secs
                    break
            for fn in functions:
                # pysight/py-spy: "burn_phase (file:line)"; austin: "file:burn_phase:line"
                if (";%s (" % fn) in ";" + stack or (":%s:" % fn) in stack:
                    funcs[fn] += secs
                    break
    return funcs, threads
