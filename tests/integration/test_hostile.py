"""What a host-wide user and a hostile process can do to pysight: replaced
interpreters, exec storms, files truncated under it, paths that try to
steer where root places a uprobe."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import (CHECK_RSS, Profile, Recorder, assert_recorded, dead_keys, find_interp,
                      held, python_frames, run_pysight, spawn_with_pid, start_ready)


def debian_311():
    interp = find_interp("3.11", "debian")
    if interp is None:
        pytest.skip("no Debian /usr/bin/python3.11 here")
    return interp


def test_deleted_interpreter_is_profiled(procs, staging, workdir):
    """After an upgrade replaced it on disk, a running interpreter maps a
    '(deleted)' file: it must be profiled as any other."""
    interp = debian_311()
    copy = os.path.join(workdir, "python3.11")
    shutil.copy2(interp.exe, copy)
    target = start_ready(procs, [copy, staging.script(interp, "exiting.py"), "6"])
    os.unlink(copy)
    with open("/proc/%d/maps" % target.pid) as f:
        assert "(deleted)" in f.read(), "the copy should map as deleted"
    out = os.path.join(workdir, "deleted.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", 200, "-d", 2, "-p", target.pid],
                      timeout=60)
    assert_recorded(run)
    prof = Profile.load(out)
    sub = prof.containing("about_to_exit_work", "exiting.py")
    assert sub.total >= 0.8 * 2 * 200, "%d samples in 2 s at 200 Hz:\n%s\n%s" % (
        sub.total, prof.top(), run.stderr)
    exact = sub.select(lambda f: [fr.name for fr in python_frames(f)]
                       == ["<module>", "about_to_exit_work"])
    assert exact.total >= 0.95 * sub.total, sub.top()


def storm(procs, staging, workdir, count):
    """Record host-wide with -v while COUNT execs of /bin/true run; what
    pysight holds at the end."""
    interp = debian_311()
    out = os.path.join(workdir, "storm-%d.folded" % count)
    rec = Recorder(procs, ["-v", "-o", out, "-r", 100])
    rec.wait_sampling()
    run = subprocess.run(interp.argv(staging.script(interp, "exec_storm.py"), count, 2,
                                     "/bin/true"),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    time.sleep(0.5)
    dead = dead_keys(rec.proc.pid, "procs")
    assert rec.stop() == 0, rec.stderr
    sizes = held(rec.stderr)
    sizes["dead_procs"] = len(dead)
    print("dead pids kept:", dead)
    return sizes, run.stdout.strip()


EXECS = int(os.environ.get("PYSIGHT_EXEC_STORM", "100000"))


def test_exec_storm_leaves_nothing_behind(procs, staging, workdir):
    """Every exec on the host used to leave a 4.5 KB registry entry: 100k
    execs of a program that is not Python must leave RSS, the registry,
    every cache and every BPF map where a short run leaves them."""
    base, _ = storm(procs, staging, workdir, 1000)
    after, ran = storm(procs, staging, workdir, EXECS)
    print("baseline %s\nafter %s (%s)" % (base, after, ran))
    # entries for processes that are gone: none may stay
    assert after["dead_procs"] == 0, "BPF procs kept %d exited pids" % after["dead_procs"]
    # not even a short run may keep one per exec: the storm's driver is
    # Python, and its forks, known to BPF at once, exec /bin/true (known
    # not to be Python after the first), a change BPF must pass on
    assert base["registry"] <= 20, "registry kept %d entries after 1000 execs" % (
        base["registry"])
    # live processes the host ran meanwhile may add a few
    for name in ("registry", "processes", "tstates", "targets", "binaries"):
        assert after[name] <= base[name] + 3, (
            "%s grew from %d to %d over %d execs of /bin/true" % (
                name, base[name], after[name], EXECS))
    # one entry per executable that is not Python: what else the host runs
    # meanwhile adds its own (17 after 5 once, with a build running), while
    # an entry per exec would fill the map (4096)
    assert after["not_python"] <= base["not_python"] + 64, after
    if CHECK_RSS:
        assert after["rss"] <= base["rss"] + 4096, (
            "RSS grew from %d KiB to %d KiB over %d execs" % (base["rss"], after["rss"],
                                                              EXECS))


def test_thread_state_recreated(procs, staging, workdir):
    """A C thread calling Python gets a new thread state on every call,
    while the last one lies freed with its thread id intact.  The cached
    one must not be trusted: the callback's samples are all there."""
    interp = debian_311()
    lib = os.path.join(workdir, "foreign_thread.so")
    src = os.path.join(os.path.dirname(os.path.dirname(__file__)), "workloads",
                       "foreign_thread.c")
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-pthread", "-o", lib, src], check=True)
    result = staging.result_file(interp)
    out = os.path.join(workdir, "foreign.folded")
    rate, seconds = 200, 3
    run = run_pysight(procs, ["record", "-o", out, "-r", rate, "--"]
                      + interp.argv(staging.script(interp, "foreign_thread.py"), lib, seconds,
                                    result), timeout=60)
    assert_recorded(run)
    truth = staging.read_result(interp, result)
    prof = Profile.load(out)
    got = prof.with_leaf("callback_work").total
    want = truth["callback"] * rate
    print("callback_work: %d samples, thread_time says %.0f; C spin %.2f s" % (
        got, want, truth["c_spin"]))
    assert truth["callback"] > 0.5 and truth["c_spin"] > 0.5, truth
    assert got >= 0.7 * want, (
        "%d samples in callback_work, which ran %.2f CPU s at %d Hz (%.0f): samples of "
        "a recreated thread state were lost\n%s\n%s" % (got, truth["callback"], rate, want,
                                                        prof.top(), run.stderr))
    assert got <= 1.3 * want, "%d samples in callback_work, expected about %.0f:\n%s" % (
        got, want, prof.top())


def test_binary_rewritten_in_place(procs, staging, workdir):
    """An interpreter file rewritten in place keeps its inode but not its
    facts: a process started from it afterwards must not be configured
    from what the old bytes said."""
    interp = debian_311()
    old = find_interp("3.9", "chroot")
    if old is None:
        pytest.skip("no bullseye chroot with python3.9")
    # named for the old bytes: 3.9 has no Py_Version, its file name says
    exe = os.path.join(workdir, "python3.9")
    shutil.copy2(interp.exe, exe)
    out = os.path.join(workdir, "rewritten.folded")
    rec = Recorder(procs, ["-o", out, "-r", 200])
    rec.wait_sampling()
    script = staging.script(interp, "exiting.py")
    # the first run teaches BPF this file's facts (3.11)
    subprocess.run([exe, script, "0.5"], check=True, capture_output=True, timeout=60)
    ino = os.stat(exe).st_ino
    with open(old.host_path(old.exe), "rb") as src, open(exe, "r+b") as dst:
        dst.truncate(0)
        shutil.copyfileobj(src, dst)
    assert os.stat(exe).st_ino == ino, "the rewrite must keep the inode"
    env = dict(os.environ, PYTHONHOME=os.path.join(old.chroot, "usr"))
    run = subprocess.run([exe, script, "2"], capture_output=True, text=True, timeout=60,
                         env=env)
    assert run.returncode == 0 and "busy" in run.stdout, run.stderr
    time.sleep(0.3)
    assert rec.stop() == 0, rec.stderr
    prof = Profile.load(out)
    sub = prof.containing("about_to_exit_work", "exiting.py")
    assert sub.total >= 0.8 * (2 + 0.5) * 200, "%d samples:\n%s\n%s" % (
        sub.total, prof.top(), rec.stderr)


def test_pid_reuse_at_same_address(procs, staging, workdir):
    """A process killed (its code objects never freed) and a new one with
    its pid and a different function at the same address: the BPF cache
    of code checks must not hand the new one the old one's answer."""
    interp = debian_311()
    script = staging.script(interp, "named_burn.py")
    out = os.path.join(workdir, "reuse.folded")
    rec = Recorder(procs, ["-o", out, "-r", 200])
    rec.wait_sampling()
    norand = ["setarch", "-R"]
    first = start_ready(procs, norand + interp.argv(script, "fn_one", 30))
    time.sleep(1.0)     # sampled: its code checks are cached
    pid = first.pid
    first.kill()
    first.wait()
    second = spawn_with_pid(procs, norand + interp.argv(script, "fn_two", 2), pid)
    if second is None:
        rec.stop()
        pytest.skip("pid %d was taken by others 20 times" % pid)
    addr = second.stdout.readline().strip()
    second.wait(timeout=30)
    assert addr == first.ready_line, (
        "the workload did not reproduce: fn_one at %s, fn_two at %s (ASLR off?)"
        % (first.ready_line, addr))
    time.sleep(0.3)
    assert rec.stop() == 0, rec.stderr
    prof = Profile.load(out)
    two = prof.with_leaf("fn_two").total
    unknown = prof.containing("[unknown]").total
    assert two >= 0.8 * 2 * 200, (
        "pid %d reused (fn_two's code at %s): %d samples in fn_two, %d [unknown]:\n%s"
        % (pid, addr, two, unknown, prof.top()))


@pytest.fixture
def overlay_root(workdir):
    """A private, writable root over the bullseye chroot (overlayfs), so a
    test can plant files in a "container" without touching the cache.
    Unmounted at teardown, even on failure."""
    base = os.path.join(os.environ.get("PYSIGHT_CACHE", "/var/cache/pysight"), "chroots",
                        "bullseye")
    if not os.path.exists(os.path.join(base, "usr/bin/python3.9")):
        pytest.skip("no bullseye chroot")
    dirs = {n: os.path.join(workdir, n) for n in ("upper", "work", "root")}
    for d in dirs.values():
        os.mkdir(d)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    "lowerdir=%s,upperdir=%s,workdir=%s" % (base, dirs["upper"], dirs["work"]),
                    dirs["root"]], check=True)
    try:
        yield dirs["root"]
    finally:
        subprocess.run(["umount", "-l", dirs["root"]], check=False)


def test_container_symlink_does_not_reach_the_host(procs, workdir, overlay_root):
    """Without map_files (no CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE),
    files are found by path.  A container that swaps its interpreter for
    an absolute symlink to a host file must not make pysight read, or
    place a uprobe on, the host's file: the process is read from the
    inode it really maps, or not at all."""
    host_python = "/usr/bin/python3.11"
    if not os.path.exists(host_python):
        pytest.skip("no host python3.11 to aim at")
    script = os.path.join(overlay_root, "tmp", "burn.py")
    with open(script, "w") as f:
        f.write("import time\nprint('ready', flush=True)\nt = time.time()\n"
                "def burn():\n    while time.time() - t < 5: pass\nburn()\n")
    target = start_ready(procs, ["chroot", overlay_root, "/usr/bin/python3.9", "/tmp/burn.py"])
    # the "container" replaces its interpreter with a link to a host file
    exe = os.path.join(overlay_root, "usr/bin/python3.9")
    os.unlink(exe)
    os.symlink(host_python, exe)
    out = os.path.join(workdir, "escape.folded")
    drop = "-sys_admin,-checkpoint_restore"
    run = run_pysight(procs, ["record", "-v", "-o", out, "-d", 2, "-p", target.pid],
                      timeout=60, user=["setpriv", "--bounding-set=" + drop,
                                        "--inh-caps=" + drop])
    lines = [l for l in run.stderr.splitlines() if not l.startswith("libbpf")]
    assert not [l for l in lines if "is Python 3.11" in l], \
        "pysight read the host's %s for a container process:\n%s" % (host_python,
                                                                   "\n".join(lines))
    assert run.returncode == 0, "\n".join(lines)
    assert [l for l in lines if "is Python 3.9" in l], "\n".join(lines)
    prof = Profile.load(out)
    assert prof.with_leaf("burn").total >= 0.8 * 2 * 100, prof.top()
