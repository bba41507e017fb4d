"""pysight agent and pysight snapshot, end to end: the real sampler on real
Python workloads (tests/workloads/agent_burn.py, whose thread measures
its own CPU time, and many_stacks.py, whose exports are big), exporting
to a real OpenTelemetry Collector (otelcol.py), and what a user checks
of it: the right functions, shares and resource; every interval once,
in order, across an outage; a full spool dropping the oldest; refusals
and Retry-After; rolling files; snapshots; the metrics endpoint.

Only for the answers a collector cannot be made to give (a 400 with a
quota message, a 500, a 503 with Retry-After) is there a plain
http.server on loopback; the real collector's 400 is tested too.
"""
import bisect
import http.server
import os
import re
import signal
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import (INTERPRETERS, PYSIGHT, REPO, Profile, find_interp, pct, python_frames,
                      run_pysight)
from otelcol import PROFILES_PATH, decode_status, free_port
from test_containers import ID1, POD, cgroups  # noqa: F401 (a fixture)

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as ps

NS = 1_000_000_000
HEALTH = re.compile(r"pysight: agent: (\d+) samples, (\d+) errors, (\d+) Python processes, "
                    r"(\d+) exports sent \((\d+) bytes\), queue (\d+) \((\d+) bytes, "
                    r"(\d+) dropped, (\d+) refused\), cpu [\d.]+%, rss (\d+) KiB, "
                    r"interned (\d+) \((\d+) rebases\)")
HEALTH_KEYS = ["samples", "errors", "processes", "sent", "sent_bytes", "depth",
               "queue_bytes", "dropped", "refused", "rss_kib", "interned", "rebases"]
STOPPED = re.compile(r"pysight: agent: stopped: (\d+) exports made, (\d+) sent, (\d+) dropped, "
                     r"(\d+) refused; (\d+) left in (\S+) for the next start")


@pytest.fixture
def py():
    """One interpreter is enough here: the host's 3.11 when there is one."""
    i = find_interp("3.11", "debian") or (INTERPRETERS[0] if INTERPRETERS else None)
    if i is None:
        pytest.skip("no Python interpreter found")
    return i


def runtime_version(interp):
    """process.runtime.version as the agent states it: in full, as
    platform.python_version() says, where the binary's Py_Version tells
    (3.11 on); before that only the minor its file name gives."""
    if interp.minor_tuple < (3, 11):
        return interp.minor
    return subprocess.run(interp.argv("-c", "import platform; print(platform.python_version())"),
                          capture_output=True, text=True, check=True).stdout.strip()


# --------------------------------------------------------------------------
# The agent and the workloads


class Agent:
    """pysight agent in the background, with its own spool, socket and
    snapshot directory under workdir; stderr is collected by a thread."""

    def __init__(self, procs, workdir, args, name="agent", env=None):
        base = os.path.join(workdir, name)
        self.spool, self.socket = base + "-spool", base + ".sock"
        self.snapshot_dir = base + "-snapshots"
        self.argv = [PYSIGHT, "agent", "--spool", self.spool, "--socket", self.socket,
                     "--snapshot-dir", self.snapshot_dir] + [str(a) for a in args]
        self.lines = []
        self.started_ns = None
        self._sampling = threading.Event()
        self.proc = procs.start(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=dict(os.environ, **env) if env else None)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            if "pysight: agent: sampling" in line:
                self.started_ns = time.time_ns()
                self._sampling.set()
            self.lines.append(line.rstrip("\n"))

    @property
    def stderr(self):
        """What pysight said, without libbpf's log (-v)."""
        return "\n".join(l for l in self.lines if not l.startswith("libbpf:"))

    def wait_sampling(self, timeout=30):
        deadline = time.monotonic() + timeout
        while not self._sampling.wait(0.05):
            if self.proc.poll() is not None:
                self._reader.join(5)
                pytest.fail("the agent exited (%s) before sampling:\n%s"
                            % (self.proc.returncode, self.stderr))
            if time.monotonic() > deadline:
                pytest.fail("the agent did not start sampling within %ss:\n%s"
                            % (timeout, self.stderr))
        return self

    def health(self):
        """The -v lines, one per export, as dicts."""
        return [dict(zip(HEALTH_KEYS, map(int, m.groups())))
                for m in map(HEALTH.search, list(self.lines)) if m]

    def stopped(self):
        """The line said on the way out, as a dict."""
        m = [m for m in map(STOPPED.search, list(self.lines)) if m]
        assert len(m) == 1, "expected one 'stopped' line:\n%s" % self.stderr[-3000:]
        return dict(zip(["made", "sent", "dropped", "refused", "left"], map(int, m[0].groups())),
                    spool=m[0].group(6))

    def wait_line(self, pattern, timeout=15, start=0):
        """The first match of pattern in stderr lines from index start."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines[start:]:
                m = re.search(pattern, line)
                if m:
                    return m
            if time.monotonic() > deadline:
                pytest.fail("the agent never said /%s/ within %ss:\n%s"
                            % (pattern, timeout, self.stderr[-3000:]))
            time.sleep(0.05)

    def stop(self, sig=signal.SIGINT, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout=30):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail("the agent did not exit within %ss:\n%s" % (timeout, self.stderr[-3000:]))
        self._reader.join(5)
        return rc


class Burn:
    """tests/workloads/agent_burn.py: heavy() and light(), 3:1, in a thread
    named "burner", from go() to finish(); its own CPU timeline."""

    def __init__(self, procs, staging, py, duty=1.0, env=None):
        self.py, self.staging = py, staging
        self.script = staging.script(py, "agent_burn.py")
        self.result = staging.result_file(py)
        self.proc = procs.start(py.argv(self.script, self.result, duty),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, **env) if env else None)
        line = self.proc.stdout.readline().split()
        assert line[:1] == ["ready"], "agent_burn.py did not start: %r" % line
        self.pid, self.tid = int(line[1]), int(line[2])
        self.exe = os.path.realpath("/proc/%d/exe" % self.pid)
        self.truth = None

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self):
        self.proc.stdin.write("stop\n")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        self.truth = self.staging.read_result(self.py, self.result)
        self.times = [t for t, _ in self.truth["timeline"]]
        return self.truth

    def cpu_between(self, a_ns, b_ns):
        """The burner's CPU seconds between two wall-clock times (linear
        between the timeline's points, every 20 ms or so)."""
        return self._cpu_at(b_ns) - self._cpu_at(a_ns)

    def _cpu_at(self, t):
        tl = self.truth["timeline"]
        if t <= tl[0][0]:
            return 0.0
        if t >= tl[-1][0]:
            return tl[-1][1]
        i = bisect.bisect_right(self.times, t)
        (t0, c0), (t1, c1) = tl[i - 1], tl[i]
        return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def start_many_stacks(procs, staging, py, nfuncs, depth, namelen):
    proc = procs.start(py.argv(staging.script(py, "many_stacks.py"), nfuncs, depth,
                                   namelen), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("ready"), "many_stacks.py did not start"
    return proc


def start_named_burn(procs, staging, py, name, seconds=60):
    proc = procs.start(py.argv(staging.script(py, "named_burn.py"), name, seconds),
                       stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("ready"), "named_burn.py did not start"
    return proc


# --------------------------------------------------------------------------
# What the collector received


def ours(col, pid):
    """[(Resource, Profile)] whose resource is process pid, in the order received."""
    return [(r, p) for r, p in col.profiles() if r.attributes.get("process.pid") == pid]


def total(profile, pred=lambda s: True):
    return sum(s.values[0] for s in profile.samples if pred(s))


def has_func(name):
    return lambda s: any(f[0] == name for f in s.frames)


def span(p):
    return "[%.3f, %.3f] (%d samples)" % (p.time_unix_nano / NS % 1000,
                                          p.end_unix_nano / NS % 1000, total(p))


def check_contiguous(profiles, what):
    """Each profile starts where the one before it ended: in order, no gap,
    no overlap, no duplicate."""
    ids = [p.profile_id for p in profiles]
    assert len(set(ids)) == len(ids), "%s: a profile id came twice: %s" % (what, ids)
    for a, b in zip(profiles, profiles[1:]):
        assert b.time_unix_nano > a.time_unix_nano, "%s: out of order: %s then %s" % (
            what, span(a), span(b))
        assert abs(b.time_unix_nano - a.end_unix_nano) <= 5_000_000, (
            "%s: %s then %s: a gap or an overlap of %.3f s; all:\n  %s" % (
                what, span(a), span(b), (b.time_unix_nano - a.end_unix_nano) / NS,
                "\n  ".join(map(span, profiles))))


def check_against_timeline(spans, burn, rate, what, jitter=True):
    """Each of spans, (label, start ns, end ns, samples), holds the samples
    of its own time range: the burner's CPU time in [start, end] at rate
    Hz.  With the sampler's default jitter (a random rate, 0.5 to 1.5
    times -r, every 100 ms or so) a span of a second or two is only good
    to 30%; with a fixed period (PYSIGHT_JITTER=0), to a few standard
    deviations and 50 ms at each edge (between a sample and its poll)."""
    bad = []
    rows = []
    for label, a, b, got in spans:
        want = burn.cpu_between(a, b) * rate
        rows.append("%s [%.3f, %.3f]: %d samples, the burner's CPU time says %.0f" % (
            label, a / NS % 1000, b / NS % 1000, got, want))
        slack = 0.3 * want + 0.1 * rate if jitter else 3 * want ** 0.5 + 0.1 * rate
        if abs(got - want) > slack:
            bad.append(rows[-1])
    print(what, "\n  ".join(rows))
    assert not bad, "%s: spans whose samples are not those of their time:\n  %s" \
        "\nall:\n  %s" % (what, "\n  ".join(bad), "\n  ".join(rows))


def burner_spans(profiles, burn):
    return [("profile", p.time_unix_nano, p.end_unix_nano,
             total(p, lambda s: s.attributes.get("thread.id") == burn.tid)) for p in profiles]


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.split()
            out[k] = float(v)
    return out


def wait_for(pred, timeout, what, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


# --------------------------------------------------------------------------
# 1. What the collector receives of a known workload


RATE = 499          # Hz: about 2700 samples of a 5.5 s burn, 1000 an interval
TOLERANCE = 5.0     # points of share


@pytest.mark.parametrize("naming", ["otel-service-name", "script-name"])
def test_export_matches_ground_truth(naming, py, procs, staging, workdir, otel_collector):
    """The collector gets heavy() and light() at their file:line in the
    workload's own 3:1 split, under the right resource and thread, in
    back-to-back intervals that each hold their own samples.
    otel-service-name: the service named in the target's environment,
    the agent limited to it with -p; script-name: host-wide, the service
    named after the script."""
    col = otel_collector.start(free_port())
    env = {"OTEL_SERVICE_NAME": "checkout-api"} if naming == "otel-service-name" else None
    burn = Burn(procs, staging, py, env=env)
    args = ["-v", "--otlp", col.endpoint, "--export-interval", 2, "-r", RATE,
            "--tag", "deployment.environment=test", "--tag", "team=perf"]
    if naming == "otel-service-name":
        args += ["-p", burn.pid]
    agent = Agent(procs, workdir, args).wait_sampling()
    burn.go()
    time.sleep(5.5)
    truth = burn.finish()
    if naming == "otel-service-name":
        assert agent.wait() == 0, agent.stderr  # its one target is gone
    else:
        time.sleep(0.3)
        assert agent.stop() == 0, agent.stderr
    col.wait_requests(1)
    time.sleep(0.3)
    got = ours(col, burn.pid)
    assert len(got) >= 3, "%d profiles of pid %d; all resources: %s\n%s" % (
        len(got), burn.pid, [r.attributes for r, _ in col.profiles()][:10], agent.stderr)

    want = {"service.name": "checkout-api" if env else "agent_burn",
            "host.name": socket.gethostname(),
            "process.pid": burn.pid,
            "process.runtime.name": "cpython",
            "process.runtime.version": runtime_version(py),
            "deployment.environment": "test", "team": "perf"}
    for res, p in got:
        attrs = dict(res.attributes)
        path = attrs.pop("process.executable.path", None)
        name = attrs.pop("process.executable.name", None)
        assert attrs == want, "resource %s, expected %s (and the executable)" % (
            res.attributes, want)
        assert (path, name) == (burn.exe, os.path.basename(burn.exe)), res.attributes
        assert p.sample_type == ("samples", "count")
        assert p.period_type == ("cpu", "nanoseconds") and p.period == NS // RATE
        assert p.scope["name"] == "pysight"
        assert p.attributes == {}

    # every sample of this process is the burner's, and says so
    profiles = [p for _, p in got]
    samples = [s for p in profiles for s in p.samples]
    def thread(s):
        return (s.attributes.get("process.pid"), s.attributes.get("thread.id"),
                s.attributes.get("thread.name"))
    burner = {thread(s) for s in samples if has_func("heavy")(s) or has_func("light")(s)}
    assert burner == {(burn.pid, burn.tid, "burner")}, burner
    main = (burn.pid, burn.pid, "MainThread")   # Python's name, not its comm
    others = {thread(s) for s in samples} - burner - {main}
    assert not others, "samples of threads the workload does not have: %s" % others
    # nobody else's samples carry this pid
    strays = [r.attributes for r, p in col.profiles() if r.attributes.get("process.pid")
              != burn.pid for s in p.samples if s.attributes.get("process.pid") == burn.pid]
    assert not strays, "samples of pid %d under other resources: %s" % (burn.pid, strays[:3])

    # the functions, at their file and hot line
    lines = truth["lines"]
    for fn in ("heavy", "light"):
        leaf = [s for s in samples if s.frames and s.frames[0][0] == fn]
        assert leaf, "no sample with %s as its leaf" % fn
        files = {s.frames[0][1] for s in leaf}
        assert files == {burn.script}, "%s in files %s, not %s" % (fn, files, burn.script)
        hot = sum(s.values[0] for s in leaf if s.frames[0][2] == lines[fn])
        n = sum(s.values[0] for s in leaf)
        assert pct(hot, n) >= 80, "%s: only %d of %d leaf samples on its hot line %d" % (
            fn, hot, n, lines[fn])
        callers = {tuple(f[0] for f in s.frames[1:]) for s in leaf}
        assert all(c[:1] == ("Burner.run",) for c in callers), callers

    # the shares, against the workload's own thread_time measurement
    heavy = sum(total(p, has_func("heavy")) for p in profiles)
    light = sum(total(p, has_func("light")) for p in profiles)
    spent = truth["seconds"]
    got_share = pct(heavy, heavy + light)
    want_share = pct(spent["heavy"], spent["heavy"] + spent["light"])
    assert abs(got_share - want_share) <= TOLERANCE, (
        "heavy: %.1f%% of %d samples, thread_time says %.1f%%" % (
            got_share, heavy + light, want_share))
    cpu = truth["timeline"][-1][1]
    assert 0.85 * cpu * RATE <= sum(map(total, profiles)) <= 1.1 * cpu * RATE + 10, (
        "%d samples for %.2f CPU s at %d Hz" % (sum(map(total, profiles)), cpu, RATE))

    # back to back, every 2 s, and each holds the samples of its own range
    check_contiguous(profiles, naming)
    assert profiles[0].time_unix_nano <= burn.truth["timeline"][0][0]
    for p in profiles[:-1]:
        assert 2 * NS <= p.duration_nano <= 2.2 * NS, span(p)
    check_against_timeline(burner_spans(profiles, burn), burn, RATE, naming)


def test_container_resource(py, procs, staging, workdir, otel_collector, cgroups):
    """Processes in a Kubernetes container, as containerd names its cgroup:
    container.id and k8s.pod.uid on the resource; service.name is the
    container's id, unless the process's own OTEL_SERVICE_NAME says."""
    if py.chroot:
        pytest.skip("the container's processes run the host's interpreter")
    scope = cgroups.make("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s"
                         ".slice/cri-containerd-%s.scope" % (POD.replace("-", "_"), ID1))
    argv = lambda name: py.argv(staging.script(py, "named_burn.py"), name, 30)  # noqa: E731
    plain = cgroups.run_in(procs, scope, argv("k8splain"), stdout=subprocess.PIPE, text=True)
    named = cgroups.run_in(procs, scope, argv("k8snamed"), stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ, OTEL_SERVICE_NAME="cart"))
    for p in (plain, named):
        assert p.stdout.readline().startswith("ready"), "named_burn.py did not start"
    col = otel_collector.start(free_port())
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 1, "-r", 97,
                                   "-p", plain.pid, "-p", named.pid]).wait_sampling()
    time.sleep(3.5)
    assert agent.stop() == 0, agent.stderr
    for proc, service, fn in ((plain, ID1, "k8splain"), (named, "cart", "k8snamed")):
        got = ours(col, proc.pid)
        assert len(got) >= 2, [r.attributes for r, _ in col.profiles()]
        for res, p in got:
            attrs = res.attributes
            assert (attrs.get("service.name"), attrs.get("container.id"),
                    attrs.get("k8s.pod.uid")) == (service, ID1, POD), attrs
        assert sum(total(p, has_func(fn)) for _, p in got) >= 0.5 * 97 * 3, \
            [(r.attributes, total(p)) for r, p in got]


def test_intervals_hold_their_own_samples(py, procs, staging, workdir, otel_collector):
    """Every export and every rolling file holds the samples of the time it
    says it covers: exports every 1.5 s and files every 2.5 s (the agent
    keeps its past in one-second slices: these cut slices in two), at a
    fixed sampling period (PYSIGHT_JITTER=0) so that counts are exact
    enough to see a sample a few hundred ms off; the last one too, made
    as the agent stops."""
    col = otel_collector.start(free_port())
    out = os.path.join(workdir, "out")
    burn = Burn(procs, staging, py)
    rate = 499
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 1.5,
                                   "-r", rate, "--output-dir", out, "--rotate", "2.5s",
                                   "-f", "folded",
                                   "-p", burn.pid], env={"PYSIGHT_JITTER": "0"})
    agent.wait_sampling()
    burn.go()
    seen, _ = watch_dir(out, 6.2)
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    more, _ = watch_dir(out, 0.1)   # the last, written on the way out
    seen.update((n, v) for n, v in more.items() if n not in seen)
    time.sleep(0.3)
    profiles = [p for _, p in ours(col, burn.pid)]
    assert len(profiles) >= 4, len(profiles)
    check_contiguous(profiles, "exports")
    check_against_timeline(burner_spans(profiles, burn), burn, rate, "exports", jitter=False)
    # a file covers the time from the one before it (or the start) to its
    # writing
    names = sorted(seen)
    assert len(names) >= 3, names
    bounds = [agent.started_ns] + [seen[n][2] for n in names]
    check_against_timeline([(n, a, b, Profile.parse(seen[n][1]).total)
                            for n, a, b in zip(names, bounds, bounds[1:])],
                           burn, rate, "files", jitter=False)


def test_window_rate_is_thinned_in_exports(py, procs, staging, workdir, otel_collector):
    """-r 49 --window-rate 499: the window (a snapshot) has the burner at
    499 Hz, the exports and files have it at 49 Hz and say so in their
    period, and the functions keep their shares in both."""
    col = otel_collector.start(free_port())
    out = os.path.join(workdir, "out")
    burn = Burn(procs, staging, py)
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 1, "-r", 49,
                                   "--window-rate", 499, "--window", 30, "--output-dir", out,
                                   "--rotate", "30s", "-f", "folded", "-p", burn.pid],
                  env={"PYSIGHT_JITTER": "0"}).wait_sampling()
    burn.go()
    time.sleep(5)
    snap = os.path.join(workdir, "window.folded")
    asked = time.time_ns()
    run = run_pysight(procs, ["snapshot", "--socket", agent.socket, "-o", snap])
    assert run.returncode == 0, run.stderr
    truth = burn.finish()
    assert agent.wait() == 0, agent.stderr
    time.sleep(0.3)
    cpu = truth["timeline"][-1][1]
    profiles = [p for _, p in ours(col, burn.pid) if not p.attributes]
    check_contiguous(profiles, "exports")
    assert {p.period for p in profiles} == {1_000_000_000 // 49}, {p.period for p in profiles}
    # the snapshot's own export is the window, at its rate
    snaps = [p for _, p in ours(col, burn.pid) if p.attributes]
    assert [(p.attributes.get("trigger"), p.period) for p in snaps] == [
        ("snapshot", 1_000_000_000 // 499)], [(p.attributes, p.period) for p in snaps]
    exported = sum(total(p, lambda s: s.attributes.get("thread.id") == burn.tid)
                   for p in profiles)
    files = [Profile.load(os.path.join(out, n)) for n in os.listdir(out)]
    in_files = sum(f.containing("Burner.run").total for f in files)
    window = Profile.load(snap).containing("Burner.run").total
    snap_cpu = burn.cpu_between(0, asked)
    print("burner %.2f CPU s: exported %d, in files %d (49 Hz says %.0f); window %d "
          "(499 Hz says %.0f)" % (cpu, exported, in_files, cpu * 49, window, snap_cpu * 499))
    # 49 Hz over the whole run: a binomial thinning of ~500 Hz, a few
    # standard deviations and a sample's worth at each end
    want = cpu * 49
    assert abs(exported - want) <= 4 * want ** 0.5 + 10, (exported, want)
    assert abs(in_files - want) <= 4 * want ** 0.5 + 10, (in_files, want)
    # the window, up to the snapshot (a slice cut then, give or take the
    # request's round trip), at 499 Hz
    assert abs(window - snap_cpu * 499) <= 0.05 * snap_cpu * 499 + 30, (window, snap_cpu)
    heavy = pct(sum(total(p, lambda s: any(f[0] == "heavy" for f in s.frames)) for p in profiles),
                exported)
    assert abs(heavy - 75) <= 8, "heavy() is 3/4 of the burner's work: %.1f%% exported" % heavy


def test_wall_mode_exports_off_cpu_causes(py, procs, staging, workdir, otel_collector):
    """--mode wall: the burner's time on CPU and asleep (it sleeps as long
    as it burns) in nanoseconds, the sleep under a cause frame and with
    pysight.off_cpu.cause; the main thread waiting on its pipe as io."""
    col = otel_collector.start(free_port())
    burn = Burn(procs, staging, py, duty=0.5)
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 2, "-r", 97,
                                   "--mode", "wall", "-p", burn.pid]).wait_sampling()
    burn.go()
    time.sleep(4)
    truth = burn.finish()
    assert agent.wait() == 0, agent.stderr
    time.sleep(0.3)
    profiles = [p for _, p in ours(col, burn.pid)]
    assert profiles, agent.stderr
    check_contiguous(profiles, "wall")
    assert {p.sample_type for p in profiles} == {("wall", "nanoseconds")}
    samples = [s for p in profiles for s in p.samples]
    burner = [s for s in samples if s.attributes.get("thread.id") == burn.tid]
    causes = {}
    for s in burner:
        c = s.attributes.get("pysight.off_cpu.cause", "cpu")
        causes[c] = causes.get(c, 0) + s.values[0]
    asleep = [s for s in burner if s.attributes.get("pysight.off_cpu.cause") == "sleep"]
    assert asleep, causes
    assert all(s.frames[0][0] == "[off-cpu: sleep]" and s.frames[1][0] == "Burner.run"
               for s in asleep), {tuple(f[0] for f in s.frames[:3]) for s in asleep}
    # against the burner's own clock: on CPU for its CPU time, asleep
    # for the rest of the time from go to stop
    tl = truth["timeline"]
    wall, cpu = (tl[-1][0] - tl[0][0]) / NS, tl[-1][1]
    on = causes.get("cpu", 0) / NS
    assert abs(pct(on, sum(causes.values()) / NS) - pct(cpu, wall)) <= 7, (causes, cpu, wall)
    assert 0.85 * wall <= sum(causes.values()) / NS <= 1.1 * wall + 0.5, (causes, wall)
    main = [s for s in samples if s.attributes.get("thread.id") == burn.pid]
    io = sum(s.values[0] for s in main if s.attributes.get("pysight.off_cpu.cause") == "io")
    assert io >= 0.8 * wall * NS, "main thread: %.2f s of io in %.2f s" % (io / NS, wall)


def test_asyncio_task_profiles(py, procs, staging, workdir, otel_collector):
    """--asyncio in wall mode (the host's 3.11: _current_tasks, no
    section): an asyncio service's tasks go to the Collector as profiles of
    their own sample type, each sample under its task at its await point,
    apart from the thread profiles, which have no await in them."""
    from test_asyncio_profile import start_service
    col = otel_collector.start(free_port())
    server, _, _ = start_service(procs, staging, py, 8, 3)
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 2, "-r", 97,
                                   "--mode", "wall", "--asyncio", "-p", server.pid]).wait_sampling()
    time.sleep(5)
    assert agent.stop() == 0, agent.stderr
    time.sleep(0.3)
    profiles = [p for _, p in ours(col, server.pid)]
    assert {p.sample_type for p in profiles} == {("wall", "nanoseconds"),
                                                 ("task_wall", "nanoseconds")}, agent.stderr
    tasks = [s for p in profiles if p.sample_type[0] == "task_wall" for s in p.samples]
    threads = [s for p in profiles if p.sample_type[0] == "wall" for s in p.samples]
    assert tasks and threads
    for s in tasks:
        names = [f[0] for f in s.frames]
        assert names[0].startswith("[await: ") and any(n.startswith("[task ") for n in names), \
            names
    for s in threads:
        assert not any(f[0].startswith("[await: ") for f in s.frames), s.frames
    # the db handler awaits asyncio.sleep, the locked one the lock
    for handler, cause in (("db", "[await: sleep]"), ("locked", "[await: lock]")):
        mine = [s for s in tasks if has_func(handler)(s)]
        assert mine, handler
        at = sum(s.values[0] for s in mine if s.frames[0][0] == cause)
        assert at >= 0.8 * sum(s.values[0] for s in mine), (handler, len(mine))


def test_interning_stays_flat_under_thread_churn(py, procs, staging, workdir,
                                                 otel_collector):
    """A process that starts and joins threads all the time: each sampled
    thread is a new thread record (and name) in the collector's profile.
    The agent rebases that profile onto what live processes use (every 2 s
    here; an old profile is freed with the last slice of the 4 s window
    that points into it), so what
    it interns stays flat while the threads it has seen climb, and the
    exports across the rebases stay whole: contiguous, thread_work named,
    nothing [unknown]."""
    col = otel_collector.start(free_port())
    target = procs.start(py.argv(staging.script(py, "churn_threads.py"), 24, 8),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().startswith("ready")
    agent = Agent(procs, workdir, ["-v", "--otlp", col.endpoint, "--export-interval", 1,
                                   "-r", 499, "-p", target.pid, "--window", 4],
                  env={"PYSIGHT_REBASE_S": "2"}).wait_sampling()
    target.stdin.write("go\n")
    target.stdin.flush()
    done = target.stdout.readline()
    assert done.startswith("done "), done
    time.sleep(1.5)
    assert agent.stop() == 0, agent.stderr
    target.stdin.close()
    target.wait(timeout=10)
    time.sleep(0.3)
    health = agent.health()
    got = [p for _, p in ours(col, target.pid)]
    check_contiguous(got, "churn")
    threads = {s.attributes.get("thread.id") for p in got for s in p.samples}
    interned = [h["interned"] for h in health]
    print("%s threads run, %d sampled; interned %s; rebases %d" % (
        done.split()[1], len(threads), interned, health[-1]["rebases"]))
    assert len(threads) >= 1000, "only %d threads sampled: the test shows nothing" % len(threads)
    assert health[-1]["rebases"] >= 2, interned
    # without rebases it would hold a record and a name per thread sampled
    assert max(interned) < len(threads) / 2, (max(interned), len(threads))
    assert max(interned[len(interned) // 2:]) <= 1.5 * max(interned[:len(interned) // 2]), \
        interned
    frames = [f[0] for p in got for s in p.samples for f in s.frames]
    assert "[unknown]" not in frames, "a stack lost its names across a rebase"
    every = sum(total(p) for p in got)
    share = {fn: pct(sum(s.values[0] for p in got for s in p.samples
                         if any(f[0] == fn for f in s.frames)), every)
             for fn in ("churn", "thread_work")}
    print("shares %s of %d samples" % (share, every))
    assert share["churn"] >= 40 and share["thread_work"] >= 5, share


# --------------------------------------------------------------------------
# 2. An outage of the collector


def test_collector_outage_loses_nothing(py, procs, staging, workdir, otel_collector):
    """The collector away for 30 s of a run exporting every 2 s: once it is
    back, every interval of the outage arrives, in order, once, back to
    back; the metrics show the queue grow and drain."""
    port = free_port()
    col = otel_collector.start(port)
    burn = Burn(procs, staging, py, duty=0.3)
    mport = free_port()
    agent = Agent(procs, workdir, ["-v", "--otlp", col.endpoint, "--export-interval", 2,
                                   "-r", 97, "-p", burn.pid,
                                   "--metrics-addr", "127.0.0.1:%d" % mport]).wait_sampling()
    burn.go()
    col.wait_requests(2, timeout=15)
    stopped = time.time_ns()
    assert col.stop() == 0
    time.sleep(30)
    during = metrics(mport)
    assert during["pysight_queue_depth"] >= 13, during
    assert during["pysight_export_retries_total"] >= 4, during
    assert during["pysight_queue_dropped_total"] == 0, during
    col.start(port)
    restarted = time.time_ns()
    # the exporter backs off up to 10 s, so the first retry may take that
    wait_for(lambda: ours(col, burn.pid) and
             ours(col, burn.pid)[-1][1].end_unix_nano >= restarted, 45,
             "the outage's intervals to arrive")
    drained = wait_for(lambda: (lambda m: m if m["pysight_queue_depth"] == 0 else None)(
        metrics(mport)), 10, "the queue to drain")
    truth = burn.finish()
    assert agent.wait() == 0, agent.stderr
    time.sleep(0.3)

    got = [p for _, p in ours(col, burn.pid)]
    check_contiguous(got, "across the outage")
    outage = [p for p in got if stopped <= p.time_unix_nano and p.end_unix_nano <= restarted]
    print("%d profiles, %d of the outage %.3f to %.3f" % (
        len(got), len(outage), stopped / NS % 1000, restarted / NS % 1000))
    assert len(outage) >= 13, "only %d intervals of the %.0f s outage arrived:\n  %s" % (
        len(outage), (restarted - stopped) / NS, "\n  ".join(map(span, got)))
    assert got[0].time_unix_nano <= truth["timeline"][0][0] <= got[0].end_unix_nano
    assert got[-1].end_unix_nano >= truth["timeline"][-1][0]
    # nothing lost: every sample of the run arrived
    cpu = truth["timeline"][-1][1]
    n = sum(total(p) for p in got)
    assert 0.85 * cpu * 97 <= n <= 1.1 * cpu * 97 + 10, "%d samples for %.2f CPU s" % (n, cpu)
    assert drained["pysight_queue_dropped_total"] == 0
    assert drained["pysight_exports_refused_total"] == 0
    assert drained["pysight_exports_sent_total"] >= len(got) - 1
    assert "failed" in agent.stderr  # -v said so


# --------------------------------------------------------------------------
# 3. A full spool


def test_full_spool_drops_the_oldest(py, procs, staging, workdir, otel_collector):
    """With the collector away and exports of ~200-450 KB, a 1 MiB spool
    keeps the newest: the oldest are dropped and counted, and what arrives
    afterwards is the run minus one stretch of the oldest intervals."""
    port = free_port()
    col = otel_collector.start(port)
    work = start_many_stacks(procs, staging, py, 3000, 30, 60)
    mport = free_port()
    agent = Agent(procs, workdir, ["-v", "--otlp", col.endpoint, "--export-interval", 1,
                                   "-r", 499, "-p", work.pid, "--spool-max", 1,
                                   "--metrics-addr", "127.0.0.1:%d" % mport]).wait_sampling()
    col.wait_requests(2, timeout=15)
    stopped = time.time_ns()
    assert col.stop() == 0
    time.sleep(7)
    during = agent.health()[-1]
    assert during["dropped"] > 0, "nothing dropped from a 1 MiB spool:\n%s" % agent.stderr
    assert all(h["queue_bytes"] <= 1 << 20 for h in agent.health()), agent.health()
    col.start(port)
    restarted = time.time_ns()
    wait_for(lambda: ours(col, work.pid) and
             ours(col, work.pid)[-1][1].end_unix_nano >= restarted, 40,
             "the queued exports to arrive")
    m = metrics(mport)
    assert agent.stop() == 0, agent.stderr
    time.sleep(0.5)
    health = agent.health()
    dropped = health[-1]["dropped"]
    assert m["pysight_queue_dropped_total"] == dropped, (m, health[-1])

    got = [p for _, p in ours(col, work.pid)]
    gaps = [(a, b) for a, b in zip(got, got[1:])
            if abs(b.time_unix_nano - a.end_unix_nano) > 5_000_000]
    assert len(gaps) == 1, "expected one stretch missing, found %d:\n  %s" % (
        len(gaps), "\n  ".join(map(span, got)))
    (before, after), = gaps
    check_contiguous(got[:got.index(after)], "before the gap")
    check_contiguous(got[got.index(after):], "after the gap")
    # the missing stretch is the oldest of the outage: it starts where the
    # outage did, and what was queued last before the collector came back
    # is there
    assert stopped - 1.5 * NS <= before.end_unix_nano <= stopped + 1.5 * NS, span(before)
    assert after.time_unix_nano < restarted - 1.5 * NS, (span(after), restarted / NS % 1000)
    # every export made was either received or dropped, as the agent says on
    # the way out (an interval with no samples makes no export)
    final = agent.stopped()
    print("%s; received %d; gap %s to %s; outage %.3f to %.3f" % (
        final, len(got), span(before), span(after), stopped / NS % 1000,
        restarted / NS % 1000))
    assert final["left"] == 0 and final["refused"] == 0, final
    assert final["dropped"] == dropped, (final, health[-1])
    assert final["sent"] == len(got), (final, len(got))
    assert len(got) + dropped == final["made"], (
        "%d exports made, %d received, %d dropped" % (final["made"], len(got), dropped))
    assert len(health) <= final["made"] <= len(health) + 1, (final, len(health))
    missing = (after.time_unix_nano - before.end_unix_nano) / NS
    assert 0.9 * dropped <= missing <= 1.2 * dropped + 0.2, (
        "%.2f s missing for %d dropped exports of 1 s" % (missing, dropped))


# --------------------------------------------------------------------------
# 4. Bad options fail at once, before any BPF


@pytest.mark.parametrize("url", ["ftp://x", "not a url", "http://", "http://127.0.0.1:99999",
                                 "127.0.0.1:4318"])
def test_bad_url_is_refused_at_start(url, procs, workdir):
    spool = os.path.join(workdir, "spool")
    run = run_pysight(procs, ["agent", "-v", "--otlp", url, "--spool", spool,
                              "--socket", os.path.join(workdir, "s.sock"),
                              "--snapshot-dir", os.path.join(workdir, "snaps")], timeout=20)
    lines = run.stderr.splitlines()
    assert run.returncode in (1, 2), (run.returncode, run.stderr)
    assert len(lines) == 1 and lines[0].startswith("pysight: invalid OTLP URL '%s'" % url), \
        run.stderr
    assert "http" in lines[0]
    assert run.elapsed < 3, run.elapsed
    assert not os.path.exists(spool) and not os.path.exists(os.path.join(workdir, "s.sock"))


def test_nowhere_to_send_is_a_usage_error(procs, workdir):
    run = run_pysight(procs, ["agent", "-v", "--socket", os.path.join(workdir, "s.sock")],
                      timeout=20)
    assert run.returncode == 2, run.stderr
    assert "nowhere to send" in run.stderr and "--otlp" in run.stderr, run.stderr
    assert "libbpf" not in run.stderr
    assert len(run.stderr.strip().splitlines()) <= 2, run.stderr


def test_help_states_the_agents_rate():
    """-r is shared with record (100 Hz); the agent's own default is 19 Hz,
    and its --help must not say otherwise."""
    run = subprocess.run([PYSIGHT, "agent", "--help"], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())
    rate = text[text.index("-r, --rate=HZ"):][:120]
    assert "agent: 19" in rate, rate


# --------------------------------------------------------------------------
# 5. A server that refuses, or asks to come back later


def rpc_status(code, message):
    """A google.rpc.Status, by hand: code (field 1), message (field 2)."""
    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out
    m = message.encode()
    return b"\x08" + varint(code) + b"\x12" + varint(len(m)) + m


class FakeEndpoint:
    """A loopback HTTP server answering each POST with answer(n) ->
    (status, headers, body); it keeps (monotonic time, path, headers, body)."""

    def __init__(self, answer):
        self.answer, self.posts, self.lock = answer, [], threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with fake.lock:
                    n = len(fake.posts)
                    fake.posts.append((time.monotonic(), self.path, dict(self.headers), body))
                status, headers, out = fake.answer(n)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def fake_endpoint():
    made = []

    def make(answer):
        made.append(FakeEndpoint(answer))
        return made[-1]
    yield make
    for f in made:
        f.close()


PB = {"Content-Type": "application/x-protobuf"}
OK = (200, PB, ps.ExportProfilesServiceResponse().SerializeToString())


def decoded(body):
    req = ps.ExportProfilesServiceRequest.FromString(body)
    return [p for rp in req.resource_profiles for sp in rp.scope_profiles for p in sp.profiles]


def spooled(agent):
    return sorted(n for n in os.listdir(agent.spool) if n.endswith(".otlp"))


@pytest.mark.parametrize("status,code", [(400, 3), (500, 13)], ids=["400", "500"])
def test_refusal_is_logged_once(status, code, py, procs, staging, workdir, fake_endpoint):
    """A 400, or a 500, with a google.rpc.Status: its message once on
    stderr, the export dropped (not retried: OTLP retries only 429, 502,
    503 and 504, so a server that fails on one export for ever does not
    hold up the queue), the agent carrying on; the headers given with
    --otlp-header sent with every export."""
    message = "profiles refused: tenant t1 is over its quota"
    state = {"refuse": True}
    server = fake_endpoint(lambda n: (status, PB, rpc_status(code, message))
                           if state["refuse"] else OK)
    burn = Burn(procs, staging, py, duty=0.3)
    agent = Agent(procs, workdir, ["--otlp", server.endpoint, "--export-interval", 1,
                                   "-r", 97, "-p", burn.pid,
                                   "--otlp-header", "Authorization=Bearer t0k",
                                   "--otlp-header", "X-Scope-OrgID=tenant1"]).wait_sampling()
    burn.go()
    wait_for(lambda: len(server.posts) >= 4, 15, "four exports")
    state["refuse"] = False
    wait_for(lambda: len(server.posts) >= 6, 10, "two more exports")
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    refusals = [l for l in agent.stderr.splitlines() if "refused an export" in l]
    assert len(refusals) == 1, agent.stderr
    # and counted: every post was either taken or refused, none left over
    final = agent.stopped()
    assert final["refused"] >= 4 and final["left"] == 0 and \
        final["sent"] + final["refused"] == len(server.posts), (final, len(server.posts))
    assert refusals[0] == ("pysight: %s%s refused an export (HTTP %d): %s (further refusals "
                           "are counted, not logged)" % (server.endpoint, PROFILES_PATH,
                                                         status, message)), refusals[0]
    bodies = [b for _, _, _, b in server.posts]
    assert len(set(bodies)) == len(bodies), "a refused export was sent again"
    times = [t for t, _, _, _ in server.posts][:-1]   # the last: made on the way out
    assert all(0.7 < b - a < 1.5 for a, b in zip(times, times[1:])), \
        "exports should go on every second: %s" % [round(b - a, 2) for a, b in
                                                    zip(times, times[1:])]
    for _, path, headers, body in server.posts:
        assert path == PROFILES_PATH
        assert headers.get("Authorization") == "Bearer t0k", headers
        assert headers.get("X-Scope-OrgID") == "tenant1", headers
        assert headers.get("Content-Type") == "application/x-protobuf", headers
        assert decoded(body), "an export without profiles"
    assert spooled(agent) == []


def test_collector_refusal_is_logged_once(py, procs, staging, workdir, otel_collector):
    """The real collector's 400: an export it cannot decode (left in the
    spool by a crash or a bad disk) is refused with the collector's own
    message, logged once, dropped and not sent again; the exports after it
    are taken."""
    col = otel_collector.start(free_port())
    garbage = b"\xff\xff\xff\xff\x0fnot an export"
    status, _, body = col.post(garbage)
    assert status == 400, (status, body)
    _, message = decode_status(body)
    assert message, body
    spool = os.path.join(workdir, "agent-spool")
    os.mkdir(spool, 0o700)
    with open(os.path.join(spool, "%020d.otlp" % 1), "wb") as f:
        f.write(garbage)
    burn = Burn(procs, staging, py, duty=0.3)
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 1, "-r", 97,
                                   "-p", burn.pid]).wait_sampling()
    burn.go()
    wait_for(lambda: len(ours(col, burn.pid)) >= 3, 20, "three exports taken")
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    refusals = [l for l in agent.stderr.splitlines() if "refused an export" in l]
    assert refusals == ["pysight: %s%s refused an export (HTTP 400): %s (further refusals "
                        "are counted, not logged)" % (col.endpoint, PROFILES_PATH, message)], \
        agent.stderr
    final = agent.stopped()
    assert final["refused"] == 1 and final["left"] == 0, final
    assert spooled(agent) == []


def test_headers_from_the_environment(py, procs, staging, workdir, fake_endpoint):
    """OTEL_EXPORTER_OTLP_HEADERS, as OpenTelemetry's SDKs read it, so a
    token need not be on the command line: percent-encoded values
    decoded, spaces around names and values trimmed, and --otlp-header
    winning over the same name; the signal's own variable wins over it."""
    server = fake_endpoint(lambda n: OK)
    burn = Burn(procs, staging, py, duty=0.3)
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20s3cr%2Ct, X-Team = env ,"
                                         "X-Scope-OrgID=t1"}
    agent = Agent(procs, workdir, ["--otlp", server.endpoint, "--export-interval", 1, "-r", 97,
                                   "-p", burn.pid, "--otlp-header", "X-Team=cli"],
                  env=env).wait_sampling()
    burn.go()
    wait_for(lambda: len(server.posts) >= 2, 15, "two exports")
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    for _, _, headers, _ in server.posts:
        assert (headers.get("Authorization"), headers.get("X-Team"),
                headers.get("X-Scope-OrgID")) == ("Bearer s3cr,t", "cli", "t1"), headers
    # the profiles' own variable instead of the general one
    env["OTEL_EXPORTER_OTLP_PROFILES_HEADERS"] = "X-Scope-OrgID=t2"
    before = len(server.posts)
    burn = Burn(procs, staging, py, duty=0.3)
    agent = Agent(procs, workdir, ["--otlp", server.endpoint, "--export-interval", 1, "-r", 97,
                                   "-p", burn.pid], name="agent2", env=env).wait_sampling()
    burn.go()
    wait_for(lambda: len(server.posts) >= before + 2, 15, "two more exports")
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    headers = server.posts[-1][2]
    assert headers.get("X-Scope-OrgID") == "t2" and "Authorization" not in headers, headers


@pytest.mark.parametrize("value", ["Authorization", "=v", "A:b=c", "A=bad%0Aline"])
def test_bad_headers_from_the_environment(value, workdir):
    """A malformed OTEL_EXPORTER_OTLP_HEADERS: one line, exit 2, before any
    BPF, and the value (it may be a secret) not printed."""
    r = subprocess.run([PYSIGHT, "agent", "--otlp", "http://127.0.0.1:9", "--spool",
                        os.path.join(workdir, "spool"), "--socket", os.path.join(workdir, "s")],
                       env=dict(os.environ, OTEL_EXPORTER_OTLP_HEADERS="Ok=1," + value),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert r.stderr == ("pysight: OTEL_EXPORTER_OTLP_HEADERS: its header 2 is not name=value "
                        "(a percent-encoded value without line breaks)\n"), r.stderr


def test_partial_success_is_counted_and_logged_once(py, procs, staging, workdir,
                                                    fake_endpoint):
    """A 200 whose ExportProfilesServiceResponse says a profile was
    rejected: the export is not sent again, the server's reason is logged
    once, and the rejected profiles are counted in the metrics."""
    reason = "profile 0 has a string index out of range"
    partial = ps.ExportProfilesServiceResponse()
    partial.partial_success.rejected_profiles = 1
    partial.partial_success.error_message = reason
    server = fake_endpoint(lambda n: (200, PB, partial.SerializeToString()) if n < 3 else OK)
    burn = Burn(procs, staging, py, duty=0.3)
    mport = free_port()
    agent = Agent(procs, workdir, ["--otlp", server.endpoint, "--export-interval", 1, "-r", 97,
                                   "-p", burn.pid, "--metrics-addr",
                                   "127.0.0.1:%d" % mport]).wait_sampling()
    burn.go()
    wait_for(lambda: len(server.posts) >= 5, 15, "five exports")
    time.sleep(1.2)     # the metrics are refreshed each second
    m = metrics(mport)
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    said = [l for l in agent.stderr.splitlines() if "rejected" in l]
    assert said == ["pysight: %s%s took an export but rejected 1 of its profiles: %s (further "
                    "partial rejections are counted, not logged)" % (
                        server.endpoint, PROFILES_PATH, reason)], agent.stderr
    assert m["pysight_profiles_rejected_total"] == 3, m
    assert m["pysight_exports_refused_total"] == 0, m
    bodies = [b for _, _, _, b in server.posts]
    assert len(set(bodies)) == len(bodies), "an export taken in part was sent again"
    final = agent.stopped()
    assert final["sent"] == len(server.posts) and final["left"] == 0, (final, len(server.posts))


def test_retry_after_is_honoured(py, procs, staging, workdir, fake_endpoint):
    """503 with Retry-After: 3, then 12: the same export is sent again
    after 3 s (not the backoff's 1 s), then after 12 s (longer than the
    backoff's 10 s cap: the server's word wins), then everything queued
    meanwhile goes, in order, once."""
    server = fake_endpoint(lambda n: (503, dict(PB, **{"Retry-After": "3" if n == 0 else "12"}),
                                      rpc_status(14, "overloaded, come back later"))
                           if n < 2 else OK)
    burn = Burn(procs, staging, py, duty=0.3)
    agent = Agent(procs, workdir, ["-v", "--otlp", server.endpoint, "--export-interval", 1,
                                   "-r", 97, "-p", burn.pid]).wait_sampling()
    burn.go()
    wait_for(lambda: len(server.posts) >= 8, 35, "eight posts")
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    posts = server.posts
    t = [p[0] for p in posts]
    assert posts[1][3] == posts[0][3] == posts[2][3], "the refused export was not retried"
    assert 2.9 <= t[1] - t[0] <= 4.0 and 11.9 <= t[2] - t[1] <= 13.0, \
        "retries after %.2f s and %.2f s, not Retry-After's 3 s and 12 s" % \
        (t[1] - t[0], t[2] - t[1])
    assert agent.stderr.count("will retry: HTTP 503: overloaded, come back later") == 2, \
        agent.stderr
    accepted = [p[3] for p in posts[2:]]
    assert len(set(accepted)) == len(accepted), "an accepted export was sent again"
    profiles = [p for body in accepted for p in decoded(body)]
    check_contiguous([_P(p) for p in profiles], "after Retry-After")
    assert spooled(agent) == []
    assert agent.health()[-1]["refused"] == 0


def test_outage_is_said_once_without_v(py, procs, staging, workdir, fake_endpoint):
    """Without -v, a collector that fails is still said, once an outage:
    its first failure with the server's words, then that it works again;
    not one line per retry."""
    server = fake_endpoint(lambda n: (503, PB, rpc_status(14, "draining for an upgrade"))
                           if n < 3 else OK)
    burn = Burn(procs, staging, py, duty=0.3)
    agent = Agent(procs, workdir, ["--otlp", server.endpoint, "--export-interval", 1,
                                   "-r", 97, "-p", burn.pid]).wait_sampling()
    burn.go()
    wait_for(lambda: len(server.posts) >= 5, 30, "five posts")
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    lines = [ln for ln in agent.stderr.splitlines() if "export to" in ln]
    assert len(lines) == 2, agent.stderr
    assert "failed, will retry: HTTP 503: draining for an upgrade" in lines[0], lines
    assert lines[1].endswith("works again"), lines


def test_overload_exports_state_the_rate_sampled(py, procs, staging, workdir, fake_endpoint):
    """At 10 kHz into a 4 KiB ring buffer the sampler slows down (and the
    ring still loses some): each export's period is that of the rate it
    really sampled at, so samples times period is the burner's CPU time,
    not a fraction of it."""
    server = fake_endpoint(lambda n: OK)
    burn = Burn(procs, staging, py)
    agent = Agent(procs, workdir, ["-v", "--otlp", server.endpoint, "--export-interval", 1,
                                   "-r", 10000, "-p", burn.pid],
                  env={"PYSIGHT_RINGBUF_KB": "4"}).wait_sampling()
    burn.go()
    time.sleep(4)
    truth = burn.finish()
    assert agent.wait() == 0, agent.stderr
    assert "ring buffer full: sampling at" in agent.stderr, agent.stderr
    profiles = [p for _, _, _, body in server.posts for p in decoded(body)]
    periods = sorted({p.period for p in profiles})
    assert periods and periods[-1] > 1_000_000_000 // 10000, periods
    cpu = sum(total(p) * p.period for p in profiles) / 1e9
    want = truth["timeline"][-1][1]
    print("exports say %.2f CPU s at periods %s; the burner used %.2f s" % (
        cpu, periods, want))
    assert abs(cpu - want) <= 0.15 * want, ("exports say %.2f CPU s, the burner used %.2f s"
                                            % (cpu, want), periods, agent.stderr[-2000:])


class _P:
    """A decoded protobuf profile with otelcol.Profile's names."""

    def __init__(self, p):
        self.time_unix_nano, self.duration_nano = p.time_unix_nano, p.duration_nano
        self.end_unix_nano = p.time_unix_nano + p.duration_nano
        self.profile_id = p.profile_id.hex()
        self.samples = p.samples



def test_spool_survives_a_restart(py, procs, staging, workdir, otel_collector,
                                  fake_endpoint):
    """An agent stopped while the collector is away leaves its exports in
    the spool; the next agent on that spool sends them first, in order,
    then its own.  A second agent started on the same socket and spool
    while the first runs is refused at once and touches neither; so is
    one whose start fails on a later option."""
    port = free_port()
    burn = Burn(procs, staging, py, duty=0.3)
    first = Agent(procs, workdir, ["-v", "--otlp", "http://127.0.0.1:%d" % port,
                                   "--export-interval", 1, "-r", 97, "-p", burn.pid])
    first.wait_sampling()
    burn.go()
    wait_for(lambda: len(spooled(first)) >= 3, 15, "three exports queued")
    # a second agent on the same socket and spool: refused before it sends
    queued = spooled(first)
    other = fake_endpoint(lambda n: OK)
    run = run_pysight(procs, ["agent", "--otlp", other.endpoint, "--spool", first.spool,
                              "--socket", first.socket, "--export-interval", 1], timeout=30)
    assert run.returncode == 1, run.stderr
    assert run.stderr.splitlines() == [
        "pysight: another agent is listening on %s" % first.socket], run.stderr
    assert run.elapsed < 2, run.elapsed
    assert other.posts == [], "the refused agent sent %d of the first's exports" % len(
        other.posts)
    assert set(queued) <= set(spooled(first)), (queued, spooled(first))
    assert first.stop() == 0, first.stderr
    left = spooled(first)
    assert len(left) >= 3, left
    # nor does an agent whose start fails later (here on its metrics)
    run = run_pysight(procs, ["agent", "--otlp", other.endpoint, "--spool", first.spool,
                              "--socket", first.socket, "--metrics-addr", "127.0.0.1:99999"],
                      timeout=30)
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1 and \
        "invalid --metrics-addr" in run.stderr, run.stderr
    assert run.elapsed < 2 and other.posts == [] and spooled(first) == left, (
        run.elapsed, len(other.posts))

    # an interval without samples (the last, cut short, may be) is queued
    # too, but the collector writes nothing of it
    full = [n for n in left if decoded(open(os.path.join(first.spool, n), "rb").read())]
    assert len(full) >= 3, left
    col = otel_collector.start(port)
    second = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 1, "-r", 97,
                                    "-p", burn.pid], name="agent").wait_sampling()
    col.wait_requests(len(full) + 2, timeout=20)
    truth = burn.finish()
    assert second.wait() == 0, second.stderr
    time.sleep(0.3)
    got = [p for _, p in ours(col, burn.pid)]
    old = [p for p in got if p.end_unix_nano <= second.started_ns]
    new = [p for p in got if p.time_unix_nano >= second.started_ns - 5_000_000]
    assert len(old) == len(full) and got[:len(old)] == old, (
        "the spool's %d exports should come first:\n  %s" % (len(full), "\n  ".join(map(
            span, got))))
    assert old and new and len(old) + len(new) == len(got)
    check_contiguous(old, "the first agent's")
    check_contiguous(new, "the second agent's")
    # the last interval is exported, up to the burner's end: what it burned
    # after the last export is less than two samples' worth (an interval
    # cut short with no sample in it makes no export)
    after_last = burn.cpu_between(new[-1].end_unix_nano, truth["timeline"][-1][0])
    assert after_last < 2 / 97, "%.3f CPU s after the last export %s" % (after_last,
                                                                         span(new[-1]))
    assert spooled(second) == []


# --------------------------------------------------------------------------
# 6. Local mode: rolling files


FILE_RE = re.compile(r"^pysight-(\d{8}T\d{6}Z)\.folded$")


def watch_dir(d, seconds, keep_content=True):
    """Poll d every 50 ms: {name: (first seen monotonic, content, mtime ns)}
    and, per look, (wall clock ns, {name: (size, mtime ns)})."""
    seen, looks = {}, []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            names = sorted(n for n in os.listdir(d) if FILE_RE.match(n))
        except FileNotFoundError:
            names = []
        sizes = {}
        for n in names:
            try:
                st = os.stat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            sizes[n] = (st.st_size, st.st_mtime_ns)
            if n not in seen:
                content = None
                if keep_content:
                    with open(os.path.join(d, n)) as f:
                        content = f.read()
                seen[n] = (time.monotonic(), content, st.st_mtime_ns)
        looks.append((time.time_ns(), sizes))
        time.sleep(0.05)
    return seen, looks


def test_local_files_rotate_and_age_out(py, procs, staging, workdir):
    """--rotate 2s --retain 5s: a file every 2 s, each readable by pysight
    report with the workload's functions; files older than 5 s deleted,
    the newest kept."""
    out = os.path.join(workdir, "out")
    burn = Burn(procs, staging, py)
    agent = Agent(procs, workdir, ["--output-dir", out, "--rotate", "2s", "--retain", "5s",
                                   "-f", "folded", "-r", 97, "-p", burn.pid]).wait_sampling()
    burn.go()
    seen, looks = watch_dir(out, 11.5)
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    more, _ = watch_dir(out, 0.1)   # the last, written on the way out
    seen.update((n, v) for n, v in more.items() if n not in seen)
    names = sorted(seen)
    assert len(names) >= 5, names
    firsts = [seen[n][0] for n in names[:-1]]
    gaps = [b - a for a, b in zip(firsts, firsts[1:])]
    assert all(1.7 <= g <= 2.4 for g in gaps), "files every %s s" % [round(g, 2) for g in gaps]
    # each readable by report, with the workload's functions (a copy of
    # it as first seen: the early ones are gone by now)
    for n in names:
        path = os.path.join(workdir, n)
        with open(path, "w") as f:
            f.write(seen[n][1])
        run = run_pysight(procs, ["report", "-b", "function", path])
        assert run.returncode == 0, run.stderr
        assert "heavy (" in run.stdout and "light (" in run.stdout, run.stdout
    # aged out: none older than --retain (+ a rotation until the next prune,
    # + the second mtime rounds to); the first ones gone
    for now, look in looks:
        old = [n for n, (_, mt) in look.items() if (now - mt) / NS > 5 + 2 + 1.2]
        assert not old, "files kept past --retain 5s: %s" % old
    left = sorted(n for n in os.listdir(out) if FILE_RE.match(n))
    assert names[0] not in left and names[1] not in left, (names, left)
    assert left == names[-len(left):], (names, left)


def test_local_files_bounded_by_size(py, procs, staging, workdir):
    """--retain-size 1 (MiB) with files of a few hundred KB: the newest
    are kept, the total stays under 1 MiB."""
    out = os.path.join(workdir, "out")
    work = start_many_stacks(procs, staging, py, 3000, 20, 60)
    agent = Agent(procs, workdir, ["--output-dir", out, "--rotate", "1s", "--retain-size", 1,
                                   "-f", "folded", "-r", 199, "-p", work.pid, "-d", 7])
    agent.wait_sampling()
    t0 = time.monotonic()
    seen, looks = watch_dir(out, 6.5, keep_content=False)
    assert agent.wait(timeout=20) == 0, agent.stderr   # -d 7
    assert 6.5 <= time.monotonic() - t0 <= 9, time.monotonic() - t0
    names = sorted(seen)
    left = sorted(n for n in os.listdir(out) if FILE_RE.match(n))
    sizes = {n: os.path.getsize(os.path.join(out, n)) for n in left}
    assert sum(sizes.values()) <= 1 << 20, sizes
    assert len(left) >= 2 and len(names) >= len(left) + 2, (names, left)
    assert left == sorted(set(names) | set(left))[-len(left):], (names, left)
    for _, look in looks:
        newest = max(look, default=None)
        assert sum(s for n, (s, _) in look.items() if n != newest) <= 1 << 20, look
    run = run_pysight(procs, ["report", os.path.join(out, left[-1])])
    assert run.returncode == 0 and "f0" in run.stdout, run.stdout + run.stderr


def test_snapshots_are_pruned(py, procs, staging, workdir):
    """Snapshots written into --snapshot-dir (SIGUSR1 here) are pruned as
    the rolling files are: by --retain-size, oldest first, never the one
    just written; and by --retain, when the next one is written."""
    work = start_many_stacks(procs, staging, py, 3000, 30, 60)
    agent = Agent(procs, workdir, ["--output-dir", os.path.join(workdir, "out"),
                                   "--rotate", "1h", "--retain", "4s", "--retain-size", 3,
                                   "-f", "folded", "-r", 199, "-p", work.pid]).wait_sampling()
    time.sleep(2)
    made, sizes = [], []
    for i in range(5):
        start = len(agent.lines)
        agent.proc.send_signal(signal.SIGUSR1)
        made.append(agent.wait_line(r"snapshot \(signal\) written to (\S+)", start=start).group(1))
        left = sorted(os.listdir(agent.snapshot_dir))
        sizes.append({n: os.path.getsize(os.path.join(agent.snapshot_dir, n)) for n in left})
        assert os.path.basename(made[-1]) == left[-1], (made[-1], left)
        time.sleep(0.7)
    print("snapshot sizes:", [sorted(s.values()) for s in sizes])
    assert max(os.path.getsize(m) for m in made if os.path.exists(m)) > 300_000, sizes
    # by size: what is left stays under 3 MiB (unless the newest alone is
    # more), several at a time, and some went
    for look in sizes:
        assert sum(look.values()) <= 3 << 20 or len(look) == 1, look
    assert max(len(look) for look in sizes) >= 2, sizes
    assert any(not os.path.exists(m) for m in made), sizes
    # by age (whole seconds of mtime): past 4 s, the next snapshot takes
    # the older ones with it
    time.sleep(5.5)
    start = len(agent.lines)
    agent.proc.send_signal(signal.SIGUSR1)
    last = agent.wait_line(r"snapshot \(signal\) written to (\S+)", start=start).group(1)
    assert sorted(os.listdir(agent.snapshot_dir)) == [os.path.basename(last)], \
        os.listdir(agent.snapshot_dir)
    assert agent.stop() == 0, agent.stderr


# --------------------------------------------------------------------------
# 7, 8. Snapshots


def ask(sock_path, line, timeout=10):
    """One request on the control socket: the whole answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        s.sendall(line.encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def py_names(prof):
    return {fr.name for frames, _ in prof.stacks for fr in python_frames(frames)}


def test_snapshots(py, procs, staging, workdir, otel_collector):
    """The last --window on demand: pysight snapshot (all, or -p), SIGUSR1,
    and an application's trigger, which is exported too, marked
    trigger.  Each holds the window's samples of the processes
    asked for."""
    col = otel_collector.start(free_port())
    alpha = start_named_burn(procs, staging, py, "snapalpha")
    beta = start_named_burn(procs, staging, py, "snapbeta")
    window = 3
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 2,
                                   "--window", window, "-f", "folded", "-r", 97])
    agent.wait_sampling()
    time.sleep(6)

    # the regular exports: one service of two processes, so no
    # process.pid on the resource, only on the samples
    shared = [(r, p) for r, p in col.profiles() if r.attributes["service.name"] == "named_burn"
              and not p.attributes]
    assert shared, [r.attributes for r, _ in col.profiles()]
    assert all("process.pid" not in r.attributes for r, _ in shared), shared[0][0].attributes
    pids = {s.attributes["process.pid"] for _, p in shared for s in p.samples}
    assert {alpha.pid, beta.pid} <= pids, pids

    # pysight snapshot: everything in the window, in the format -o says
    out = os.path.join(workdir, "all.folded")
    run = run_pysight(procs, ["snapshot", "--socket", agent.socket, "-o", out])
    assert run.returncode == 0, run.stderr
    assert "wrote %s" % out in run.stderr
    prof = Profile.load(out)
    assert {"snapalpha", "snapbeta"} <= py_names(prof), prof.top()
    for name in ("snapalpha", "snapbeta"):
        n = prof.containing(name).total
        # the window, not the whole run: at most --window and a slice
        assert 0.25 * window * 97 <= n <= (window + 1.2) * 97 * 1.1, (name, n)

    # -p: that process only
    out = os.path.join(workdir, "alpha.folded")
    run = run_pysight(procs, ["snapshot", "--socket", agent.socket, "-p", alpha.pid, "-o", out])
    assert run.returncode == 0, run.stderr
    names = py_names(Profile.load(out))
    assert "snapalpha" in names and "snapbeta" not in names, names
    out = os.path.join(workdir, "beta.pb.gz")
    run = run_pysight(procs, ["snapshot", "--socket", agent.socket, "-p", beta.pid, "-o", out])
    assert run.returncode == 0, run.stderr
    rep = run_pysight(procs, ["report", out])
    assert rep.returncode == 0 and "snapbeta" in rep.stdout and "snapalpha" not in rep.stdout, \
        rep.stdout + rep.stderr

    # SIGUSR1: a file in --snapshot-dir
    mark = len(agent.lines)
    agent.proc.send_signal(signal.SIGUSR1)
    path = agent.wait_line(r"snapshot \(signal\) written to (\S+)$", start=mark).group(1)
    assert os.path.dirname(path) == agent.snapshot_dir and path.endswith(".folded"), path
    assert {"snapalpha", "snapbeta"} <= py_names(Profile.load(path))

    # an application's trigger, for its own process: a file and an export
    before = len(col.raw_requests())
    answer = ask(agent.socket, "trigger pid=%d reason=slow_checkout\n" % beta.pid)
    head, _, tpath = answer.decode().partition("\n")
    assert head == "ok %d" % len(tpath), answer
    assert os.path.dirname(tpath) == agent.snapshot_dir and tpath != path, (tpath, path)
    names = py_names(Profile.load(tpath))
    assert "snapbeta" in names and "snapalpha" not in names, names
    # SIGUSR1's and `pysight snapshot`'s windows are exported too, marked
    # "signal" and "snapshot", and may land after `before`
    triggered = wait_for(lambda: [(r, p) for req in col.requests()[before:] for r in req
                                  for p in r.profiles
                                  if p.attributes.get("trigger") == "slow_checkout"],
                         10, "the trigger's export")
    (res, p), = triggered
    assert p.attributes == {"trigger": "slow_checkout"}
    marks = {p.attributes.get("trigger") for _, p in col.profiles()}
    assert {"signal", "snapshot"} <= marks, marks
    assert res.attributes["process.pid"] == beta.pid
    assert res.attributes["service.name"] == "named_burn"
    assert {s.attributes["process.pid"] for s in p.samples} == {beta.pid}
    assert p.duration_nano == window * NS
    assert abs(p.end_unix_nano - time.time_ns()) < 5 * NS

    # the control socket: root's, and only its group may write to it
    st = os.stat(agent.socket)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660 and st.st_uid == 0, \
        (oct(st.st_mode), st.st_uid)

    # tools/pysight_trigger.py in a real WSGI app: a slow request's own
    # function is in the snapshot it asks for
    if not py.chroot:
        mark = len(agent.lines)
        app = os.path.join(workdir, "slow_app.py")
        with open(app, "w") as f:
            f.write(SLOW_APP % os.path.join(REPO, "tools"))
        run = subprocess.run(py.argv(app), capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, PYSIGHT_SOCKET=agent.socket))
        assert run.returncode == 0 and run.stdout == "served\n", run.stdout + run.stderr
        path = agent.wait_line(r"snapshot \(GET__checkout_[0-9.]+s\) written to (\S+)$",
                               start=mark).group(1)
        prof = Profile.load(path)
        assert prof.containing("slow_checkout_view").total >= 0.3 * 97 * 0.6, prof.top()
        assert not {"snapalpha", "snapbeta"} & py_names(prof), prof.top()

    # two applications' triggers at once: two files, each its own
    a1 = ask(agent.socket, "trigger pid=%d reason=a\n" % alpha.pid).decode()
    b1 = ask(agent.socket, "trigger pid=%d reason=b\n" % beta.pid).decode()
    pa, pb = a1.partition("\n")[2], b1.partition("\n")[2]
    assert pa != pb, "two triggers, one file: %s" % pa
    assert "snapalpha" in py_names(Profile.load(pa)) and \
        "snapbeta" not in py_names(Profile.load(pa)), pa
    assert "snapbeta" in py_names(Profile.load(pb))
    assert agent.stop() == 0, agent.stderr
    for p in (alpha, beta):
        p.kill()
        p.wait()


# A WSGI app behind tools/pysight_trigger.py's middleware: one request that
# burns 0.6 s, over the 0.3 s threshold (%s: the tools folder)
SLOW_APP = """
import sys, threading, time
from wsgiref.util import setup_testing_defaults
sys.path.insert(0, %r)
import pysight_trigger

def slow_checkout_view(environ, start_response):
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.6:
        pass
    start_response("200 OK", [])
    return [b"ok"]

app = pysight_trigger.SlowRequestTrigger(slow_checkout_view, threshold_s=0.3)
time.sleep(1.5)  # the agent learns of this process
env = {"PATH_INFO": "/checkout"}
setup_testing_defaults(env)
assert app(env, lambda status, headers: None) == [b"ok"]
for t in threading.enumerate():
    if t is not threading.main_thread():
        t.join(10)
print("served")
"""


def test_snapshot_without_agent(procs, workdir):
    """No agent: one line that says so, exit 1, no file."""
    out = os.path.join(workdir, "x.folded")
    missing = os.path.join(workdir, "none.sock")
    stale = os.path.join(workdir, "stale.sock")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(stale)   # a socket file that nothing listens on any more
    for path in (missing, stale):
        run = run_pysight(procs, ["snapshot", "--socket", path, "-o", out])
        assert run.returncode == 1, run.stderr
        assert run.stderr.splitlines() == [
            "pysight: no agent is running (nothing listens on %s)" % path], run.stderr
        assert not os.path.exists(out)


# --------------------------------------------------------------------------
# 9. The metrics endpoint


def test_metrics_endpoint(py, procs, staging, workdir, otel_collector):
    """/metrics counts what happened: samples, exports the collector got,
    the queue; other paths are 404."""
    col = otel_collector.start(free_port())
    burn = Burn(procs, staging, py, duty=0.5)
    mport = free_port()
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 3, "-r", 97,
                                   "-p", burn.pid, "--metrics-addr",
                                   "127.0.0.1:%d" % mport]).wait_sampling()
    burn.go()
    col.wait_requests(2, timeout=15)
    # The text is refreshed every second, the collector writes within
    # 50 ms: what it has between two looks at the metrics is at least the
    # first count and at most the second.  Look until the two agree.
    for _ in range(6):
        m1 = metrics(mport)
        time.sleep(0.3)
        received = col.raw_requests()
        time.sleep(1.2)
        m2 = metrics(mport)
        assert m1["pysight_exports_sent_total"] <= len(received) <= \
            m2["pysight_exports_sent_total"], (m1, len(received), m2)
        if m1["pysight_exports_sent_total"] == m2["pysight_exports_sent_total"]:
            break
    assert m1["pysight_exports_sent_total"] == m2["pysight_exports_sent_total"], (m1, m2)
    assert len(received) >= 2, len(received)
    sent_samples = sum(total(p) for _, p in col.profiles())
    assert m2["pysight_samples_total"] >= sent_samples > 0, (m2, sent_samples)
    assert m2["pysight_python_processes"] == 1
    assert m2["pysight_queue_depth"] <= 1 and m2["pysight_queue_dropped_total"] == 0
    assert m2["pysight_exports_refused_total"] == 0
    assert m2["pysight_export_bytes_total"] > 0
    assert m2["pysight_cpu_seconds_total"] > 0 and m2["pysight_resident_bytes"] > 1 << 20
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen("http://127.0.0.1:%d/other" % mport, timeout=5)
    assert e.value.code == 404
    burn.finish()
    assert agent.wait() == 0, agent.stderr
    # a second agent cannot take the same address: one line, at start
    run = run_pysight(procs, ["agent", "--output-dir", os.path.join(workdir, "o"),
                              "--socket", os.path.join(workdir, "b.sock"),
                              "--metrics-addr", "127.0.0.1:99999"], timeout=20)
    assert run.returncode == 1 and "invalid --metrics-addr" in run.stderr, run.stderr
