"""Shared fixtures and helpers for pysight's integration tests.

The tests run the real sampler (.output/pysight, or $PYSIGHT_BIN) as root on
real Python workloads (tests/workloads) under every interpreter found here:

  * pyenv builds, 3.8 and later, in $(pyenv root)/versions (shared libpython);
  * Debian's /usr/bin/python3.11 (static libpython, non-PIE);
  * Debian chroots from tools/pythons under ${PYSIGHT_CACHE:-/var/cache/pysight}/chroots:
    bullseye (3.9), trixie (3.13), sid (3.14, 3.15).

Run:  sudo python3 -m pytest tests/integration   (after `make`)
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import List, Optional

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYSIGHT = os.environ.get("PYSIGHT_BIN", os.path.join(REPO, ".output", "pysight"))
WORKLOADS = os.path.join(REPO, "tests", "workloads")
CACHE = os.environ.get("PYSIGHT_CACHE", "/var/cache/pysight")
CHROOTS = {"bullseye": ["3.9"], "trixie": ["3.13"], "sid": ["3.14", "3.15"]}
TMP_PREFIX = "pysight-tests-"
# The run fails unless the ratio test passed on at least this many minors.
MIN_MINORS = int(os.environ.get("PYSIGHT_MIN_MINORS", "4"))
IS_ROOT = os.geteuid() == 0


# --------------------------------------------------------------------------
# Interpreters


@dataclass(frozen=True)
class Interp:
    id: str                       # e.g. "pyenv-3.12.1", "debian-3.11", "sid-3.15"
    exe: str                      # path as the interpreter sees it
    minor: str                    # "3.12"
    chroot: Optional[str] = None  # chroot directory, or None for the host
    kind: str = "pyenv"           # pyenv | debian | chroot

    def argv(self, *args):
        prefix = ["chroot", self.chroot] if self.chroot else []
        return prefix + [self.exe] + [str(a) for a in args]

    def host_path(self, guest_path):
        """Path on the host of a file the interpreter sees at guest_path."""
        if self.chroot:
            return os.path.join(self.chroot, guest_path.lstrip("/"))
        return guest_path

    @property
    def minor_tuple(self):
        return tuple(int(x) for x in self.minor.split("."))


_PROBE = ("import sys, sysconfig; print('%d.%d' % sys.version_info[:2], "
          "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))))")


def _probe(argv):
    """(minor, free_threaded) of an interpreter, or None if it does not run."""
    try:
        out = subprocess.run(argv + ["-c", _PROBE], capture_output=True, text=True,
                             timeout=30, check=True).stdout.split()
        return out[0], out[1] == "1"
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _pyenv_root():
    if os.environ.get("PYENV_ROOT"):
        return os.environ["PYENV_ROOT"]
    exe = shutil.which("pyenv")
    if exe:
        try:
            return subprocess.run([exe, "root"], capture_output=True, text=True,
                                  timeout=30, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return "/root/.pyenv"


def _version_key(name):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.]", name)]


def discover_interpreters():
    found = []
    versions = os.path.join(_pyenv_root(), "versions")
    if os.path.isdir(versions):
        for name in sorted(os.listdir(versions), key=_version_key):
            exe = os.path.join(versions, name, "bin", "python3")
            m = re.match(r"^(\d+)\.(\d+)", name)
            if not m or not os.access(exe, os.X_OK) or name.endswith("t"):
                continue
            if (int(m.group(1)), int(m.group(2))) < (3, 8):
                continue
            probe = _probe([exe])
            if probe and not probe[1]:
                found.append(Interp("pyenv-" + name, exe, probe[0], None, "pyenv"))
    debian = "/usr/bin/python3.11"
    if os.access(debian, os.X_OK):
        probe = _probe([debian])
        if probe and probe[0] == "3.11" and not probe[1]:
            found.append(Interp("debian-3.11", debian, "3.11", None, "debian"))
    if IS_ROOT:  # chroot(2) needs root
        for suite, minors in CHROOTS.items():
            root = os.path.join(CACHE, "chroots", suite)
            for minor in minors:
                exe = "/usr/bin/python" + minor
                if not os.access(os.path.join(root, exe.lstrip("/")), os.X_OK):
                    continue
                probe = _probe(["chroot", root, exe])
                if probe and probe[0] == minor and not probe[1]:
                    found.append(Interp("%s-%s" % (suite, minor), exe, minor, root, "chroot"))
    return found


INTERPRETERS = discover_interpreters()


def representative_interpreters():
    """A few interpreters covering each frame-walking scheme, for the heavier
    workloads: <=3.10 (PyFrameObject), 3.11, 3.12 (tables, shared and static
    libpython) and 3.13+ (_Py_DebugOffsets).  PYSIGHT_TEST_ALL=1: all of them."""
    if os.environ.get("PYSIGHT_TEST_ALL"):
        return INTERPRETERS
    wanted = [("3.9", "pyenv"), ("3.11", "debian"), ("3.12", "pyenv"), ("3.14", "chroot")]
    chosen = []
    for minor, kind in wanted:
        same = [i for i in INTERPRETERS if i.minor == minor]
        pick = [i for i in same if i.kind == kind] or same
        if pick:
            chosen.append(pick[0])
    return chosen or INTERPRETERS[:1]


def pytest_generate_tests(metafunc):
    if "interp" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("all_interpreters")
        interps = INTERPRETERS if marker else representative_interpreters()
        if not interps:
            metafunc.parametrize("interp", [pytest.param(None, marks=pytest.mark.skip(
                reason="no Python interpreter found"))])
        else:
            metafunc.parametrize("interp", interps, ids=[i.id for i in interps])


def find_interp(minor, kind=None):
    for i in INTERPRETERS:
        if i.minor == minor and (kind is None or i.kind == kind):
            return i
    return None


def blocking_interpreters():
    """The host's 3.11, a pyenv <= 3.10 (time.sleep is select()), and a
    3.13+ chroot (the GIL behind the interpreter, _Py_DebugOffsets): what
    the tests of blocked threads run on."""
    picks = [find_interp("3.11", "debian"),
             find_interp("3.10", "pyenv") or find_interp("3.9", "pyenv"),
             find_interp("3.14", "chroot") or find_interp("3.13", "chroot")]
    return [i for i in picks if i] or INTERPRETERS[:1]


# --------------------------------------------------------------------------
# Session bookkeeping: minors that passed the ratio test


_ratio_minors = {}     # minor -> [interp ids that passed]
_ratio_selected = []   # interp ids of the ratio tests collected


def pytest_configure(config):
    config.addinivalue_line("markers", "all_interpreters: run on every interpreter found")
    config.addinivalue_line("markers", "informative: a second variant of a test, on a less "
                            "central configuration; still asserts")


def pytest_collection_finish(session):
    for item in session.items:  # after -k/-m deselection
        if item.originalname == "test_ratio" and hasattr(item, "callspec"):
            interp = item.callspec.params.get("interp")
            if interp is not None:
                _ratio_selected.append(interp.id)


def pytest_runtest_logreport(report):
    if report.when == "call" and report.passed:
        props = dict(report.user_properties)
        if "ratio_minor" in props:
            _ratio_minors.setdefault(props["ratio_minor"], []).append(props["ratio_interp"])


def _minor_check_message():
    minors = sorted(_ratio_minors, key=_version_key)
    return ("pysight: the ratio test passed on %d distinct minor version(s) %s; "
            "at least %d are required (interpreters found: %s)"
            % (len(minors), minors, MIN_MINORS, [i.id for i in INTERPRETERS]))


def pytest_sessionfinish(session, exitstatus):
    _check_sanitizer_session(session)
    if not _ratio_selected or session.config.option.collectonly:
        return  # the ratio test was deselected: nothing to enforce
    if len(_ratio_minors) < MIN_MINORS:
        session.config._pysight_minor_failure = _minor_check_message()
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    sanitizer = getattr(config, "_pysight_sanitizer_failure", None)
    if sanitizer:
        terminalreporter.section("pysight sanitizers", red=True)
        terminalreporter.write_line("FAILED " + sanitizer, red=True)
    if not _ratio_selected or config.option.collectonly:
        return
    msg = getattr(config, "_pysight_minor_failure", None)
    if msg:
        terminalreporter.section("pysight interpreter coverage", red=True)
        terminalreporter.write_line("FAILED " + msg, red=True)
    else:
        terminalreporter.section("pysight interpreter coverage", green=True)
        terminalreporter.write_line("ratio test passed on minors: %s" % ", ".join(
            "%s (%s)" % (m, ", ".join(ids)) for m, ids in sorted(
                _ratio_minors.items(), key=lambda kv: _version_key(kv[0]))))


# --------------------------------------------------------------------------
# Sanitizer reports (`make test-asan`)

# Set by `make test-asan`: the directory where ASan, LSan and UBSan write
# one report file per process (log_path).  A report fails the test during
# which it appeared, and the session, whatever pysight's exit status was.
SANITIZER_LOGS = os.environ.get("PYSIGHT_SANITIZER_LOGS")
# ASan keeps freed memory in quarantine and its shadow grows with the
# heap: RSS says nothing about pysight there, and LeakSanitizer checks
# what the RSS bounds stand in for.
CHECK_RSS = not SANITIZER_LOGS


def sanitizer_reports():
    if not SANITIZER_LOGS:
        return set()
    try:
        return {os.path.join(SANITIZER_LOGS, n) for n in os.listdir(SANITIZER_LOGS)}
    except FileNotFoundError:
        return set()


def _report_text(paths):
    text = []
    for path in sorted(paths):
        with open(path, errors="replace") as f:
            text.append("==> %s\n%s" % (path, f.read()[-6000:]))
    return "\n".join(text)


@pytest.fixture(autouse=True)
def sanitizer_clean():
    """With PYSIGHT_SANITIZER_LOGS: no new sanitizer report during the test."""
    if not SANITIZER_LOGS:
        yield
        return
    before = sanitizer_reports()
    yield
    new = sanitizer_reports() - before
    assert not new, "sanitizer reports from pysight:\n" + _report_text(new)


def _check_sanitizer_session(session):
    reports = sanitizer_reports()
    if reports:
        session.config._pysight_sanitizer_failure = (
            "%d sanitizer report(s) in %s" % (len(reports), SANITIZER_LOGS))
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


# --------------------------------------------------------------------------
# Folded output


@dataclass(frozen=True)
class Frame:
    name: str
    file: Optional[str] = None
    line: Optional[int] = None

    @property
    def pseudo(self):
        return self.name.startswith("[") and self.file is None


_FRAME_RE = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def parse_frame(text):
    if text.startswith("[") and text.endswith("]"):
        return Frame(text)
    m = _FRAME_RE.match(text)
    if not m:
        return Frame(text)
    line = int(m.group("line")) if m.group("line") else None
    return Frame(m.group("name"), m.group("file"), line)


class Profile:
    """A parsed folded file: a list of (frames root first, count)."""

    def __init__(self, stacks):
        self.stacks = stacks

    @classmethod
    def parse(cls, text):
        stacks = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            stack, sep, count = line.rpartition(" ")
            assert sep and count.isdigit() and stack, \
                "folded line %d is not 'frames COUNT': %r" % (n, line)
            stacks.append(([parse_frame(f) for f in stack.split(";")], int(count)))
        return cls(stacks)

    @classmethod
    def load(cls, path):
        assert os.path.exists(path), "pysight wrote no output file %s" % path
        with open(path) as f:
            return cls.parse(f.read())

    @property
    def total(self):
        return sum(c for _, c in self.stacks)

    def select(self, pred):
        """Sub-profile of the stacks for which pred(frames) is true."""
        return Profile([(f, c) for f, c in self.stacks if pred(f)])

    def containing(self, name, file_suffix=None):
        return self.select(lambda frames: any(
            fr.name == name and (file_suffix is None or (fr.file or "").endswith(file_suffix))
            for fr in frames))

    def with_leaf(self, name):
        return self.select(lambda frames: python_frames(frames)[-1:] != []
                           and python_frames(frames)[-1].name == name)

    def names(self):
        return {fr.name for frames, _ in self.stacks for fr in frames}

    def top(self, n=8):
        """Heaviest stacks as text, for assertion messages."""
        rows = sorted(self.stacks, key=lambda s: -s[1])[:n]
        return "\n".join("  %6d  %s" % (c, ";".join(fmt_frame(f) for f in frames[-6:]))
                         for frames, c in rows)


def fmt_frame(fr):
    if fr.file is None:
        return fr.name
    return "%s (%s%s)" % (fr.name, fr.file, "" if fr.line is None else ":%d" % fr.line)


def python_frames(frames):
    """The frames that are not pseudo-frames such as [truncated] or thread roots."""
    return [f for f in frames if not f.pseudo and not f.name.startswith("thread ")]


def pct(part, whole):
    return 100.0 * part / whole if whole else 0.0


def cpu_s(pid):
    """A process's CPU seconds so far, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuShare:
    """Each pid's share of one CPU while the block runs: what a burner
    really got, on a host where other jobs take their part."""

    def __init__(self, *pids):
        self.pids = [int(p) for p in pids]

    def __enter__(self):
        self.t0 = time.monotonic()
        self.c0 = [cpu_s(p) for p in self.pids]
        return self

    def __exit__(self, *exc):
        dt = time.monotonic() - self.t0
        self.shares = [(cpu_s(p) - c) / dt for p, c in zip(self.pids, self.c0)]
        self.share = sum(self.shares)


# --------------------------------------------------------------------------
# Running pysight and cleaning up


def _kill_group(proc, sig=signal.SIGKILL):
    """Kill the process group led by a process we started (start_new_session)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _reap(proc, timeout=10):
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait(timeout=10)


_started_groups = set()  # process groups (= sessions) of every process the tests started


class Procs:
    """Every process a test starts; killed (with its group) by pid at teardown."""

    def __init__(self):
        self.procs = []

    def start(self, argv, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(proc)
        _started_groups.add(proc.pid)
        return proc

    def cleanup(self):
        leftovers = []
        for proc in self.procs:
            if proc.poll() is None:
                leftovers.append(proc.args)
            _kill_group(proc)
            _reap(proc)
            # anything left in the group (e.g. a workload pysight launched)
            _kill_group(proc)
        return leftovers


class Recorder:
    """pysight running in the background; stderr is collected by a thread."""

    def __init__(self, procs, args, stdout=subprocess.DEVNULL):
        self.argv = [PYSIGHT, "record"] + [str(a) for a in args]
        self.proc = procs.start(self.argv, stdout=stdout, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self._sampling = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if "pysight: sampling" in line:
                self._sampling.set()

    @property
    def stderr(self):
        return "\n".join(self.lines)

    def wait_sampling(self, timeout=20):
        """Wait for 'pysight: sampling'; fail if pysight exits or never says it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._sampling.wait(0.05):
                return time.monotonic()
            if self.proc.poll() is not None:
                self._reader.join(5)
                pytest.fail("pysight exited (status %s) before sampling:\n%s"
                            % (self.proc.returncode, self.stderr))
        pytest.fail("pysight did not print 'pysight: sampling' within %ss:\n%s"
                    % (timeout, self.stderr))

    def stop(self, sig=signal.SIGINT, timeout=30):
        """Send sig to pysight (only) and wait for it to finish writing."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout=30):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail("pysight did not exit within %ss; stderr so far:\n%s"
                        % (timeout, self.stderr))
        self._reader.join(5)
        return rc


@dataclass
class RunResult:
    returncode: int
    stderr: str
    stdout: str
    elapsed: float
    argv: List[str]


def run_pysight(procs, args, timeout=120, user=None, env=None):
    """Run `pysight ARGS` to completion (killed after timeout); env adds
    variables to pysight's environment."""
    argv = [PYSIGHT] + [str(a) for a in args]
    if user:
        argv = user + argv
    t0 = time.monotonic()
    full_env = dict(os.environ, **env) if env else None
    proc = procs.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=full_env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        pytest.fail("%s did not finish within %ss; stderr:\n%s" % (" ".join(argv), timeout, err))
    return RunResult(proc.returncode, err, out, time.monotonic() - t0, argv)


def assert_recorded(result):
    assert result.returncode == 0, "%s exited %d; stderr:\n%s" % (
        " ".join(result.argv), result.returncode, result.stderr)


def bpf_programs():
    """Loaded BPF programs whose name mentions pysight: {id: name}."""
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except FileNotFoundError:
        pytest.fail("bpftool is not installed: cannot check for leaked BPF programs")
    return {p["id"]: p.get("name") for p in json.loads(out or "[]")
            if "pysight" in (p.get("name") or "")}


def bpf_fd_ids(pid, field):
    """The ids a process's BPF fds name in /proc/PID/fdinfo under field
    ("prog_id", "map_id" or "link_id"); empty when it is gone."""
    fdinfo = "/proc/%s/fdinfo" % pid
    try:
        fds = os.listdir(fdinfo)
    except OSError:
        return set()
    ids = set()
    for fd in fds:
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                m = re.search(r"^%s:\s*(\d+)" % field, f.read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def bpf_prog_holders():
    """{prog id: set of pids} of the processes holding a prog (or link) fd."""
    holders = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for prog in bpf_fd_ids(pid, "prog_id"):
                holders.setdefault(prog, set()).add(int(pid))
    return holders


def bpf_map_keys(pid, name):
    """Keys (as little-endian ints) of the BPF map called name that process
    pid holds: what pysight keeps in the kernel, for leak checks."""
    for map_id in sorted(bpf_fd_ids(pid, "map_id")):
        info = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(map_id)],
                                         capture_output=True, text=True, check=True).stdout)
        if info.get("name") != name:
            continue
        dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)],
                                         capture_output=True, text=True, check=True).stdout)
        return [int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
                if isinstance(e["key"], list) else e["key"] for e in dump]
    raise AssertionError("process %d holds no BPF map named %s" % (pid, name))


def orphan_programs(ignore=(), wait=10.0):
    """pysight BPF programs that no process holds, after giving the kernel
    `wait` seconds to release them: what a pysight that exited left behind.
    Programs held by a live process (say, someone else's pysight run on this
    host) are not orphans.  Returns ['id:name', ...]."""
    deadline = time.monotonic() + wait
    while True:
        progs = {i: n for i, n in bpf_programs().items() if i not in ignore}
        if progs:
            holders = bpf_prog_holders()
            progs = {i: n for i, n in progs.items() if not holders.get(i)}
        if not progs or time.monotonic() > deadline:
            return ["%s:%s" % kv for kv in sorted(progs.items())]
        time.sleep(0.25)


def start_ready(procs, argv):
    proc = procs.start(argv, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("ready"), "%s did not start: %r" % (argv, line)
    proc.ready_line = line.strip()
    return proc


def spawn_with_pid(procs, argv, pid):
    """Start argv as pid (ns_last_pid), or None if other forks kept
    taking it."""
    for _ in range(20):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        proc = procs.start(argv, stdout=subprocess.PIPE, text=True)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


# What pysight holds, from the "held:" line of `record -v`: its RSS, its
# caches and the sizes of its BPF maps.  The churn and exec-storm tests
# compare these against a short run's.
HELD = re.compile(r"held: rss (\d+) KiB, registry (\d+), processes (\d+), symbols (\d+), "
                  r"stacks (\d+); BPF maps: procs (\d+), binaries (\d+), not_python (\d+), "
                  r"targets (\d+), tstates (\d+), stacks_seen (\d+), uprobes (\d+), "
                  r"thread states (-?\d+)")
HELD_NAMES = ["rss", "registry", "processes", "symbols", "stacks", "procs", "binaries",
              "not_python", "targets", "tstates", "stacks_seen", "uprobes", "thread_states"]


def held(stderr):
    m = HELD.search(stderr)
    assert m, "no 'held:' line in pysight -v output:\n%s" % stderr[-2000:]
    return dict(zip(HELD_NAMES, map(int, m.groups())))


def dead_keys(pid, name, alive=lambda key: os.path.exists("/proc/%d" % key)):
    """Keys of BPF map `name` (held by pysight, pid) that stay over two looks
    a second apart and name no live task: entries for tasks that are gone."""
    first = set(bpf_map_keys(pid, name))
    time.sleep(1)
    return sorted(k for k in first & set(bpf_map_keys(pid, name)) if not alive(k))


# --------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="session")
def pysight_bin():
    if not IS_ROOT:
        pytest.skip("integration tests need root (BPF): run them with sudo")
    assert os.access(PYSIGHT, os.X_OK), \
        "sampler binary %s is missing: build it with `make` first" % PYSIGHT
    return PYSIGHT


@pytest.fixture(scope="session")
def bpf_baseline(pysight_bin):
    """Orphaned pysight programs from before the session: not ours."""
    return {int(x.split(":")[0]) for x in orphan_programs(wait=0)}


@pytest.fixture
def procs(pysight_bin, bpf_baseline):
    """Process tracker; at teardown kills what is left and checks that no
    pysight BPF program outlives the test."""
    tracker = Procs()
    yield tracker
    leftovers = tracker.cleanup()
    stray = _processes_in_groups({p.pid for p in tracker.procs})
    assert not stray, "processes the test started survived SIGKILL of their group: %s" % stray
    leaked = orphan_programs(ignore=bpf_baseline)
    assert not leaked, "BPF programs left loaded, held by no process, after the test: %s" % leaked
    assert not [a for a in leftovers if a and os.path.basename(a[0]) == "pysight"], \
        "pysight was still running at teardown: %s" % leftovers


@pytest.fixture
def workdir():
    """A private host temp dir, removed afterwards."""
    d = tempfile.mkdtemp(prefix=TMP_PREFIX)
    yield d
    shutil.rmtree(d, ignore_errors=True)
    assert not os.path.exists(d)


@pytest.fixture
def otel_collector(workdir):
    """An OpenTelemetry Collector (tests/integration/otelcol.py), not yet
    started: otel_collector.start(otelcol.free_port()).  Stopped at teardown."""
    from otelcol import OtelCol
    tracker = Procs()
    col = OtelCol(workdir, procs=tracker)
    yield col
    col.stop()
    tracker.cleanup()


class Staging:
    """Copies of tests/workloads visible to each interpreter (in /tmp of the
    host or of its chroot), created lazily, removed at session end."""

    def __init__(self):
        self.dirs = {}  # chroot or "" -> (guest dir, host dir)
        self.counter = 0

    def dir(self, interp):
        key = interp.chroot or ""
        if key not in self.dirs:
            host_tmp = os.path.join(key, "tmp") if key else tempfile.gettempdir()
            host = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=host_tmp)
            os.chmod(host, 0o755)
            for name in os.listdir(WORKLOADS):
                if name.endswith(".py"):
                    shutil.copy(os.path.join(WORKLOADS, name), host)
            guest = "/tmp/" + os.path.basename(host) if key else host
            self.dirs[key] = (guest, host)
        return self.dirs[key][0]

    def script(self, interp, name):
        return os.path.join(self.dir(interp), name)

    def result_file(self, interp):
        """A fresh guest path for a workload's JSON result."""
        self.counter += 1
        return os.path.join(self.dir(interp), "result-%d.json" % self.counter)

    def wait_result(self, interp, guest_path, proc, timeout=30):
        """The result a workload writes once it is ready, waited for while
        proc runs: a workload that exits or stalls first fails the test."""
        host = interp.host_path(guest_path)
        script = next((os.path.basename(str(a)) for a in proc.args if str(a).endswith(".py")),
                      "the workload")
        deadline = time.monotonic() + timeout
        while not os.path.exists(host):
            assert proc.poll() is None, "%s exited with %s" % (script, proc.returncode)
            assert time.monotonic() < deadline, "%s never got ready" % script
            time.sleep(0.05)
        return self.read_result(interp, guest_path)

    def read_result(self, interp, guest_path):
        host = interp.host_path(guest_path)
        assert os.path.exists(host), "the workload wrote no result %s" % host
        with open(host) as f:
            data = json.load(f)
        os.unlink(host)
        return data

    def cleanup(self):
        left = []
        for _, host in self.dirs.values():
            shutil.rmtree(host, ignore_errors=True)
            if os.path.exists(host):
                left.append(host)
        return left


@pytest.fixture(scope="session")
def staging():
    s = Staging()
    yield s
    left = s.cleanup()
    assert not left, "could not remove staged workloads: %s" % left


@pytest.fixture(scope="session", autouse=True)
def no_leftovers_at_end():
    """After the whole session: no pysight BPF programs, no pysight processes
    started by us, no temp dirs of ours in /tmp (host and chroots)."""
    before = set(_our_tmp_dirs())
    orphans_before = {int(x.split(":")[0]) for x in orphan_programs(wait=0)} if IS_ROOT else set()
    yield
    if not IS_ROOT:
        return
    problems = []
    progs = orphan_programs(ignore=orphans_before)
    if progs:
        problems.append("BPF programs held by no process: %s" % progs)
    mine = _processes_in_groups(_started_groups)
    if mine:
        problems.append("processes started by the tests still running: %s" % mine)
    left = sorted(set(_our_tmp_dirs()) - before)
    if left:
        problems.append("temp files left: %s" % left)
    assert not problems, "; ".join(problems)


def _processes_in_groups(groups):
    """'pid:comm' of live processes whose process group is one of ours."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) in groups:
            found.append("%s:%s" % (pid, comm))
    return found


def _our_tmp_dirs():
    roots = [tempfile.gettempdir()] + [os.path.join(CACHE, "chroots", s, "tmp") for s in CHROOTS]
    for root in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            if name.startswith(TMP_PREFIX):
                yield os.path.join(root, name)
