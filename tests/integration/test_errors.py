"""Clear errors, and a -p target that exits while being recorded."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import (INTERPRETERS, PYSIGHT, Profile, Recorder, RunResult,
                      python_frames, run_pysight)


def assert_one_error(run, *keywords):
    lines = [l for l in run.stderr.splitlines() if l.strip()]
    assert run.returncode != 0, "%s should fail, exited 0; stderr:\n%s" % (
        " ".join(run.argv), run.stderr)
    assert len(lines) == 1 and lines[0].startswith("pysight: "), (
        "%s: expected one line 'pysight: ...' on stderr, got %d lines:\n%s"
        % (" ".join(run.argv), len(lines), run.stderr))
    if keywords:
        assert any(k.lower() in lines[0].lower() for k in keywords), \
            "%s: error %r should mention %s" % (" ".join(run.argv), lines[0], " or ".join(keywords))
    assert run.elapsed < 15, "%s took %.1fs to fail" % (" ".join(run.argv), run.elapsed)


def free_pid():
    """A pid that has just been reaped, so (almost certainly) not in use."""
    p = subprocess.Popen(["true"])
    p.wait()
    assert not os.path.exists("/proc/%d" % p.pid)
    return p.pid


def test_nonexistent_pid(procs, workdir):
    out = os.path.join(workdir, "none.folded")
    run = run_pysight(procs, ["record", "-o", out, "-d", 2, "-p", free_pid()], timeout=30)
    assert_one_error(run, "no such process")


def test_not_a_python_process(procs, workdir):
    sleeper = procs.start(["sleep", "30"])
    out = os.path.join(workdir, "sleep.folded")
    run = run_pysight(procs, ["record", "-o", out, "-d", 2, "-p", sleeper.pid], timeout=30)
    assert_one_error(run, "not a Python process")
    assert sleeper.poll() is None, "pysight must not harm the process it refused"


@pytest.mark.parametrize("args", [["-r", "0", "-d", "1"], ["-r", "abc", "-d", "1"],
                                  ["-d", "-1", "-r", "100"]], ids=["rate0", "rate-abc", "duration-neg"])
def test_bad_option_values(args, procs, workdir):
    out = os.path.join(workdir, "bad.folded")
    run = run_pysight(procs, ["record", "-o", out] + args, timeout=30)
    assert_one_error(run)


def test_not_root(procs, workdir):
    # a copy nobody can run, whatever the permissions on the repo's path
    os.chmod(workdir, 0o755)
    binary = os.path.join(workdir, "pysight")
    shutil.copy(PYSIGHT, binary)
    os.chmod(binary, 0o755)
    out_dir = os.path.join(workdir, "out")
    os.mkdir(out_dir)
    os.chmod(out_dir, 0o777)
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            binary, "record", "-d", "1", "-o", os.path.join(out_dir, "x.folded")]
    proc = procs.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=30)
    run = RunResult(proc.returncode, err, out, time.monotonic() - t0, argv)
    assert_one_error(run, "root", "CAP_BPF")


def test_pid_exits_while_recording(procs, workdir):
    interp = next((i for i in INTERPRETERS if i.kind == "debian"), None) or \
        next((i for i in INTERPRETERS if not i.chroot), None)
    if interp is None:
        pytest.skip("no host Python interpreter")
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "workloads", "exiting.py")
    script = os.path.join(workdir, "exiting.py")
    shutil.copy(here, script)
    target = procs.start(interp.argv(script, 4), stdout=subprocess.PIPE, text=True)
    ready = target.stdout.readline()
    assert ready.startswith("ready"), "exiting.py did not start: %r" % ready
    out = os.path.join(workdir, "exiting.folded")
    rec = Recorder(procs, ["-o", out, "-r", 100, "-p", target.pid])
    t_sampling = rec.wait_sampling(timeout=10)
    assert target.poll() is None, "pysight took so long to attach that the target had exited"
    target.wait(timeout=30)
    t_exit = time.monotonic()
    rc = rec.wait(timeout=15)
    waited = time.monotonic() - t_exit
    assert rc == 0, "pysight exited %d when its only target exited:\n%s" % (rc, rec.stderr)
    assert waited <= 5.0, "pysight needed %.1fs to notice its target had exited" % waited
    prof = Profile.load(out)
    sub = prof.containing("about_to_exit_work", "exiting.py")
    attached = t_exit - t_sampling
    assert sub.total >= 0.5 * attached * 100, (
        "%d samples in about_to_exit_work over %.1fs attached at 100 Hz (expected about %.0f):\n%s"
        % (sub.total, attached, attached * 100, prof.top()))
    exact = sub.select(lambda f: [fr.name for fr in python_frames(f)]
                       == ["<module>", "about_to_exit_work"])
    assert exact.total >= 0.95 * sub.total, "wrong stacks:\n%s" % sub.top()
