"""Containers and cgroups: filtered in BPF, labelled, found from the host.

The cgroups are made under the v2 hierarchy (/sys/fs/cgroup/unified here,
a hybrid host) with names that runtimes use, and removed at teardown,
their processes killed first, even when a test fails.  One container is
a real one: Debian's podman runs the trixie chroot as an image."""
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import (CACHE, WORKLOADS, CpuShare, Profile, Recorder, assert_recorded,
                      find_interp, fmt_frame, run_pysight)

ID1 = "4f1e9b2c" + "0123456789abcdef" * 3 + "d00dfeed"   # 64 hex
ID2 = "4f1e9b2c" + "fedcba9876543210" * 3 + "cafe0000"   # same first 8 digits
POD = "6a1e5b4f-3c2d-4e8f-9a0b-1c2d3e4f5a6b"


def v2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    pytest.skip("no cgroup v2 hierarchy on this host")


def remove_cgroups(paths):
    """rmdir each cgroup, in the order given, once its tasks are gone."""
    for p in paths:
        for _ in range(50):
            try:
                os.rmdir(p)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


class Cgroups:
    """cgroup directories made by a test; torn down deepest first."""

    def __init__(self):
        self.root = v2_mount()
        self.made = []

    def make(self, rel):
        path = os.path.join(self.root, rel)
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            p = os.path.join(self.root, *parts[:i])
            if not os.path.isdir(p):
                os.mkdir(p)
                self.made.append(p)
        return path

    def run_in(self, procs, cgroup, argv, **kw):
        """Start argv inside cgroup (it enters before it execs)."""
        return procs.start(["sh", "-c", 'echo $$ > "$0"/cgroup.procs && exec "$@"', cgroup]
                           + argv, **kw)

    def cleanup(self):
        for p in reversed(self.made):
            try:
                with open(os.path.join(p, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
        remove_cgroups(reversed(self.made))
        return [p for p in self.made if os.path.exists(p)]


@pytest.fixture
def cgroups():
    cg = Cgroups()
    yield cg
    left = cg.cleanup()
    assert not left, "cgroups left behind: %s" % left


def host_interp():
    interp = find_interp("3.11", "debian")
    if interp is None:
        pytest.skip("no Debian python3.11")
    return interp


def burn(interp, staging, name, seconds):
    return interp.argv(staging.script(interp, "named_burn.py"), name, seconds)


def ready(proc):
    line = proc.stdout.readline()
    assert line.startswith("ready"), "the workload did not start: %r" % line


def leaf_totals(prof):
    out = {}
    for frames, count in prof.stacks:
        py = [f for f in frames if f.file is not None]
        if py:
            out[py[-1].name] = out.get(py[-1].name, 0) + count
    return out


def leaf_roots(prof, leaves):
    """The root labels of the stacks of each of these leaf functions."""
    out = {}
    for frames, _ in prof.stacks:
        py = [f for f in frames if f.file is not None]
        if py and py[-1].name in leaves:
            out.setdefault(py[-1].name, set()).add(fmt_frame(frames[0]))
    return out


def test_cgroup_filter_labels_and_moves(procs, staging, workdir, cgroups):
    interp = host_interp()
    a = cgroups.make("pysight-test-A")
    b = cgroups.make("pysight-test-B")
    pa = cgroups.run_in(procs, a, burn(interp, staging, "fn_aaa", 30), stdout=subprocess.PIPE,
                        text=True)
    pb = cgroups.run_in(procs, b, burn(interp, staging, "fn_bbb", 30), stdout=subprocess.PIPE,
                        text=True)
    pc = procs.start(burn(interp, staging, "fn_ccc", 30), stdout=subprocess.PIPE, text=True)
    for p in (pa, pb, pc):
        ready(p)

    # the filter, by a path relative to the v2 mount
    out = os.path.join(workdir, "a.folded")
    with CpuShare(pa.pid) as cpu:
        run = run_pysight(procs, ["record", "-o", out, "-r", 200, "-d", 2,
                                  "--cgroup", "pysight-test-A"], timeout=60)
    assert_recorded(run)
    got = leaf_totals(Profile.load(out))
    # three burners share two CPUs, about 2/3 of one each, less what
    # other jobs on the host take: what it got, from /proc
    assert got.get("fn_aaa", 0) >= 0.7 * 2 * 200 * cpu.share, (got, cpu.share)
    assert "fn_bbb" not in got and "fn_ccc" not in got, got

    # labels, no filter; the full path works too
    out = os.path.join(workdir, "ab.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", 200, "-d", 2,
                              "--group-by", "cgroup"], timeout=60)
    assert_recorded(run)
    roots = leaf_roots(Profile.load(out), ("fn_aaa", "fn_bbb"))
    assert roots == {"fn_aaa": {"cgroup /pysight-test-A"},
                     "fn_bbb": {"cgroup /pysight-test-B"}}, roots

    # a process moved into A while recording is picked up from then on
    out = os.path.join(workdir, "moved.folded")
    rec = Recorder(procs, ["-o", out, "-r", 200, "--cgroup", a])
    rec.wait_sampling()
    with CpuShare(pa.pid) as before:
        time.sleep(1.0)
    with open(os.path.join(a, "cgroup.procs"), "w") as f:
        f.write(str(pc.pid))
    with CpuShare(pa.pid, pc.pid) as after:
        time.sleep(2.0)
    assert rec.stop() == 0, rec.stderr
    got = leaf_totals(Profile.load(out))
    ccc = 2 * 200 * after.shares[1]
    aaa = 200 * before.share + 2 * 200 * after.shares[0]
    assert 0.7 * ccc <= got.get("fn_ccc", 0) <= 1.3 * ccc, (got, ccc)
    assert got.get("fn_aaa", 0) >= 0.7 * aaa and "fn_bbb" not in got, (got, aaa)


def test_pid_namespace_container(procs, staging, workdir, cgroups):
    """A "container": its own PID and mount namespaces, a chroot with its
    own python3.13, its own cgroup.  Profiled from the host with its
    names and lines, both of its pids, and kept alone by --cgroup."""
    interp = find_interp("3.13", "chroot")
    if interp is None:
        pytest.skip("no trixie chroot with python3.13")
    host = host_interp()
    cg = cgroups.make("pysight-test-ns")
    argv = ["unshare", "--pid", "--mount", "--fork"] + burn(interp, staging, "fn_nsp", 30)
    target = cgroups.run_in(procs, cg, argv, stdout=subprocess.PIPE, text=True)
    ready(target)
    other = procs.start(burn(host, staging, "fn_out", 30), stdout=subprocess.PIPE, text=True)
    ready(other)
    py = subprocess.run(["pgrep", "-f", "-P", str(target.pid)], capture_output=True,
                        text=True).stdout.split()
    assert py, "no python3.13 under unshare %d" % target.pid
    out = os.path.join(workdir, "ns.folded")
    with CpuShare(*py) as cpu:
        run = run_pysight(procs, ["record", "-o", out, "-r", 200, "-d", 2, "--cgroup", cg,
                                  "--group-by", "process,thread"], timeout=60)
    assert_recorded(run)
    prof = Profile.load(out)
    got = leaf_totals(prof)
    assert got.get("fn_nsp", 0) >= 0.7 * 2 * 200 * cpu.share and "fn_out" not in got, \
        (got, cpu.share)
    roots = {fmt_frame(frames[0]) for frames, _ in prof.stacks}
    labels = [r for r in roots if r.startswith("process ")]
    assert labels and all(re.match(r"^process python3\.13 \d+ \(ns 1\)$", r) for r in labels), \
        roots
    host_pid = int(labels[0].split()[2])
    assert host_pid != 1 and os.path.exists("/proc/%d" % host_pid), labels
    # the names and lines it sees
    stacks = [f for f, _ in prof.stacks if any(fr.name == "fn_nsp" for fr in f)]
    leaf = [f for f in stacks[0] if f.file is not None][-1]
    assert leaf.file == "<gen>" and leaf.line in (4, 5), leaf


def test_kubepods_container(procs, staging, workdir, cgroups):
    """A cgroup named as containerd and Kubernetes name them: --container
    finds it by a prefix, and --group-by container labels it with its
    id and its pod's uid."""
    interp = host_interp()
    pod = POD.replace("-", "_")
    scope = cgroups.make("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s"
                         ".slice/cri-containerd-%s.scope" % (pod, ID1))
    target = cgroups.run_in(procs, scope, burn(interp, staging, "fn_k8s", 30),
                            stdout=subprocess.PIPE, text=True)
    ready(target)
    out = os.path.join(workdir, "k8s.folded")
    with CpuShare(target.pid) as cpu:
        run = run_pysight(procs, ["record", "-o", out, "-r", 200, "-d", 2,
                                  "--container", ID1[:12], "--group-by", "container"],
                          timeout=60)
    assert_recorded(run)
    prof = Profile.load(out)
    got = leaf_totals(prof)
    assert got.get("fn_k8s", 0) >= 0.7 * 2 * 200 * cpu.share, (got, cpu.share)
    assert len(got) == 1, "only the container's stacks: %s" % got
    roots = {fmt_frame(frames[0]) for frames, _ in prof.stacks}
    assert roots == {"container %s pod %s" % (ID1[:12], POD)}, roots

    listing = run_pysight(procs, ["containers"], timeout=60)
    assert listing.returncode == 0, listing.stderr
    rows = [l for l in listing.stdout.splitlines() if l.startswith(ID1[:12])]
    assert rows and POD in rows[0] and re.search(r"\s1\s+1\s", rows[0]), listing.stdout


def assert_one_error(run, *words):
    lines = [l for l in run.stderr.splitlines() if l.strip()]
    assert run.returncode != 0 and len(lines) == 1 and lines[0].startswith("pysight: "), \
        run.stderr
    for w in words:
        assert w in lines[0], "%r should say %r" % (lines[0], w)


def test_bad_cgroups_and_containers(procs, workdir, cgroups):
    mnt = v2_mount()
    out = os.path.join(workdir, "x.folded")
    cases = [
        (["--cgroup", "/no/such/cgroup"], ["/no/such/cgroup"]),
        (["--cgroup", "/etc/hostname"], ["/etc/hostname"]),
        (["--cgroup", os.path.join(mnt, "..", "..", "..", "..", "etc")],
         ["not under the cgroup v2 mount"]),
        (["--cgroup", os.path.join(mnt, "cgroup.procs")], ["cgroup.procs"]),
        (["--container", "xyz!"], ["xyz!", "hex", "name"]),
        (["--container", "0123456789ab"], ["no container matches"]),
        (["--container", "web01"], ["no container matches"]),
        (["--container", "4f1e9b2c"], ["no container matches", "12 or more"]),
    ]
    cgroups.make("system.slice/docker-%s.scope" % ID1)
    cgroups.make("system.slice/docker-%s.scope" % ID2)
    cases.append((["--container", ID1[:8] + "ffff"], ["no container matches", ID1[:12]]))
    for args, words in cases:
        run = run_pysight(procs, ["record", "-o", out, "-d", 1] + args, timeout=30)
        assert_one_error(run, *words)
        # what can name no container is a usage error, as for any option
        if args[1] == "xyz!":
            assert run.returncode == 2, (run.returncode, run.stderr)
    for cmd in (["top", "-n", 1], ["agent", "--output-dir", workdir]):
        run = run_pysight(procs, cmd + ["--container", "xyz!"], timeout=30)
        assert_one_error(run, "xyz!", "hex", "name")
        assert run.returncode == 2, (cmd, run.returncode, run.stderr)
    # ambiguous: two containers share these digits
    prefix = "4f1e9b2c0123"
    assert ID1.startswith(prefix) and not ID2.startswith(prefix)
    cgroups.make("system.slice/docker-%s.scope" % (prefix + ID2[12:]))
    run = run_pysight(procs, ["record", "-o", out, "-d", 1, "--container", prefix], timeout=30)
    assert_one_error(run, "more than one container matches", ID1[:12])
    assert not os.path.exists(out)


def test_named_container(procs, staging, workdir, cgroups):
    """LXC names its containers: --container takes the name, and labels
    and the listing show it whole."""
    interp = host_interp()
    name = "pysight-test-lxc"
    cg = cgroups.make("lxc.payload." + name)
    target = cgroups.run_in(procs, cg, burn(interp, staging, "fn_lxc", 30),
                            stdout=subprocess.PIPE, text=True)
    other = procs.start(burn(interp, staging, "fn_out", 30), stdout=subprocess.PIPE, text=True)
    for p in (target, other):
        ready(p)
    out = os.path.join(workdir, "lxc.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", 200, "-d", 2, "--container", name,
                              "--group-by", "container"], timeout=60)
    assert_recorded(run)
    prof = Profile.load(out)
    assert set(leaf_totals(prof)) == {"fn_lxc"}, leaf_totals(prof)
    roots = {fmt_frame(frames[0]) for frames, _ in prof.stacks}
    assert roots == {"container " + name}, roots

    listing = run_pysight(procs, ["containers"], timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert [l for l in listing.stdout.splitlines() if l.startswith(name + " ")], listing.stdout


# Debian's podman 4.3, as the bug report ran it: runc, because crun
# refuses this host's hybrid cgroup layout, and cgroupfs, as systemd is not
# pid 1.  run adds --ulimit: podman asks for nofile 1048576, above this
# host's hard limit (20000), and runc fails to set it.
PODMAN = ["podman", "--cgroup-manager", "cgroupfs", "--runtime", "runc"]
TRIXIE = os.path.join(CACHE, "chroots", "trixie")
IMAGE = "localhost/pysight-trixie"


def podman(*args, check=True, timeout=300, **kw):
    run = subprocess.run(PODMAN + [str(a) for a in args], capture_output=True, text=True,
                         timeout=timeout, **kw)
    assert not check or run.returncode == 0, \
        "podman %s exited %d: %s" % (" ".join(map(str, args)), run.returncode, run.stderr)
    return run


def trixie_image():
    """The trixie chroot as a podman image, imported once per build of the
    chroot (its build stamp is the tag) and kept in podman's store."""
    stamp = os.path.join(TRIXIE, ".pysight-done")
    if not (os.path.exists(stamp) and os.access(os.path.join(TRIXIE, "usr/bin/python3.13"),
                                                os.X_OK)):
        pytest.skip("no trixie chroot with python3.13")
    for tool in ("podman", "runc"):
        assert shutil.which(tool), "%s is not installed (`make deps` installs it)" % tool
    image = "%s:%d" % (IMAGE, os.stat(stamp).st_mtime)
    if podman("image", "exists", image, check=False).returncode == 0:
        return image
    old = podman("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter",
                 "reference=" + IMAGE).stdout.split()
    if old:
        podman("rmi", *old, check=False)
    # what tests and their staged workloads leave in the chroot stays out
    tar = subprocess.Popen(["tar", "-C", TRIXIE, "--one-file-system", "--exclude=./tmp/*",
                            "--exclude=./proc/*", "--exclude=./sys/*", "--exclude=./dev/*",
                            "-c", "."], stdout=subprocess.PIPE)
    try:
        imported = podman("import", "-", image, check=False, stdin=tar.stdout)
    finally:
        tar.stdout.close()
        tar.wait()
    assert tar.returncode == 0 and imported.returncode == 0, \
        "could not import %s as %s: %s" % (TRIXIE, image, imported.stderr)
    return image


def cgroup_mounts():
    """Every cgroup hierarchy's mount point, v1 and v2."""
    with open("/proc/self/mountinfo") as f:
        return [l.split(" - ")[0].split()[4] for l in f
                if l.split(" - ")[1].split()[0] in ("cgroup", "cgroup2")]


class Podman:
    """Containers a test runs, each removed by its id at teardown with the
    cgroups podman made for it (libpod_parent and conmon's, which podman
    leaves), even when the test fails."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.cidfiles = []
        self.parents = [p for m in cgroup_mounts()
                        for p in (os.path.join(m, "libpod_parent", "conmon"),
                                  os.path.join(m, "libpod_parent"))
                        if not os.path.exists(p)]

    def run(self, image, *argv):
        """Start argv in a container of image, tests/workloads at /w: its id."""
        cidfile = os.path.join(self.workdir, "cid-%d" % len(self.cidfiles))
        self.cidfiles.append(cidfile)
        podman("run", "-d", "--cidfile", cidfile, "--network", "none",
               "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
               "-v", WORKLOADS + ":/w:ro", image, *argv)
        with open(cidfile) as f:
            return f.read().strip()

    def pid(self, cid):
        return int(podman("inspect", "-f", "{{.State.Pid}}", cid).stdout)

    def wait_output(self, cid, text, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            logs = podman("logs", cid).stdout
            if text in logs:
                return
            if podman("inspect", "-f", "{{.State.Running}}", cid).stdout.strip() != "true":
                pytest.fail("container %s exited: %s" % (cid, logs))
            time.sleep(0.2)
        pytest.fail("container %s did not print %r" % (cid, text))

    def cleanup(self):
        problems = []
        for cidfile in self.cidfiles:
            try:
                with open(cidfile) as f:
                    cid = f.read().strip()
            except FileNotFoundError:
                continue    # never created
            podman("rm", "-f", "-t", "0", cid, check=False)
            if podman("container", "exists", cid, check=False).returncode == 0:
                problems.append("container " + cid)
            problems += [p for p in (os.path.join(m, "libpod_parent", "libpod-" + cid)
                                     for m in cgroup_mounts()) if os.path.exists(p)]
        remove_cgroups(self.parents)    # conmon's empties as it exits
        if not podman("ps", "-aq", check=False).stdout.strip():
            problems += [p for p in self.parents if os.path.exists(p)]
        return problems


@pytest.fixture
def containers(workdir):
    pm = Podman(workdir)
    yield pm
    left = pm.cleanup()
    assert not left, "left behind: %s" % left


def test_podman_container(procs, staging, workdir, containers):
    """A Podman container (cgroupfs manager: /libpod_parent/libpod-<id>)
    is listed by its id, recorded alone by --container and labelled by
    --group-by container, while a host process burns beside it."""
    image = trixie_image()
    host = host_interp()
    cid = containers.run(image, "/usr/bin/python3.13", "/w/named_burn.py", "fn_podman", 60)
    containers.wait_output(cid, "ready")
    other = procs.start(burn(host, staging, "fn_host", 60), stdout=subprocess.PIPE, text=True)
    ready(other)
    short = cid[:12]

    listing = run_pysight(procs, ["containers"], timeout=60)
    assert listing.returncode == 0, listing.stderr
    rows = [l for l in listing.stdout.splitlines() if l.startswith(short + " ")]
    assert rows and "/libpod_parent/libpod-" + cid in rows[0] and \
        re.search(r"\s1\s+1\s", rows[0]), listing.stdout

    out = os.path.join(workdir, "podman.folded")
    with CpuShare(containers.pid(cid)) as cpu:
        run = run_pysight(procs, ["record", "-f", "folded", "-o", out, "-r", 200, "-d", 2,
                                  "--container", short], timeout=60)
    assert_recorded(run)
    got = leaf_totals(Profile.load(out))
    assert set(got) == {"fn_podman"}, "only the container's stacks: %s" % got
    assert got["fn_podman"] >= 0.7 * 2 * 200 * cpu.share, (got, cpu.share)

    out = os.path.join(workdir, "labels.folded")
    run = run_pysight(procs, ["record", "-f", "folded", "-o", out, "-r", 200, "-d", 2,
                              "--group-by", "container"], timeout=60)
    assert_recorded(run)
    roots = leaf_roots(Profile.load(out), ("fn_podman", "fn_host"))
    assert roots == {"fn_podman": {"container " + short}, "fn_host": {"host"}}, roots
