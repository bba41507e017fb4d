"""Clear errors, and a -p target that exits while being recorded."""
import os
import signal
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


@pytest.mark.parametrize("argv,option", [
    (["record", "-o", "", "--", "true"], "--output"),
    (["convert", "-o", "", "/dev/null"], "--output"),
    (["diff", "-o", "", "a", "b"], "--output"),
    (["snapshot", "-o", ""], "--output"),
    (["snapshot", "--socket", ""], "--socket"),
    (["agent", "--otlp", "http://127.0.0.1:9", "--spool", ""], "--spool"),
    (["agent", "--output-dir", ""], "--output-dir"),
    (["agent", "--output-dir", "/tmp", "--snapshot-dir", ""], "--snapshot-dir"),
    (["agent", "--output-dir", "/tmp", "--socket", ""], "--socket"),
    (["agent", "--otlp", "https://127.0.0.1:9", "--otlp-ca", ""], "--otlp-ca"),
], ids=lambda v: v if isinstance(v, str) else "-".join(a for a in v if a)[:30])
def test_empty_path_is_a_usage_error(argv, option, procs):
    """An empty path is refused before anything runs: record used to run
    its whole command, then fail to write ''."""
    run = run_pysight(procs, argv, timeout=30)
    assert_one_error(run, "invalid value '' for %s: expected a path" % option)
    assert run.returncode == 2 and run.elapsed < 2, (run.returncode, run.elapsed)


@pytest.mark.parametrize("command,caps,lacks", [
    ("record", "", "both"),
    ("agent", "", "both"),
    ("dump", "", "both"),
    ("record", "bpf", "CAP_PERFMON"),
    ("agent", "perfmon", "CAP_BPF"),
], ids=lambda v: v or "none")
def test_not_root(command, caps, lacks, procs, workdir):
    """Every command that loads BPF refuses an unprivileged user in one
    line that names what this process lacks; one capability of the two
    (given as an ambient capability) is not enough."""
    # a copy nobody can run, whatever the permissions on the repo's path
    os.chmod(workdir, 0o755)
    binary = os.path.join(workdir, "pysight")
    shutil.copy(PYSIGHT, binary)
    os.chmod(binary, 0o755)
    out_dir = os.path.join(workdir, "out")
    os.mkdir(out_dir)
    os.chmod(out_dir, 0o777)
    args = {"record": ["-d", "1", "-o", os.path.join(out_dir, "x.folded")],
            "agent": ["--output-dir", out_dir, "--spool", out_dir],
            "dump": ["-p", str(os.getpid())]}[command]
    keep = ["--inh-caps=+" + caps, "--ambient-caps=+" + caps] if caps else ["--inh-caps=-all"]
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + keep + \
        [binary, command] + args
    proc = procs.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=30)
    run = RunResult(proc.returncode, err, out, time.monotonic() - t0, argv)
    assert_one_error(run, "needs root, or CAP_BPF and CAP_PERFMON", "lacks " + lacks)
    assert run.returncode == 1, run
    assert not os.listdir(out_dir), os.listdir(out_dir)


def test_pid_exits_while_recording(procs, staging, workdir):
    interp = next((i for i in INTERPRETERS if i.kind == "debian"), None) or \
        next((i for i in INTERPRETERS if not i.chroot), None)
    if interp is None:
        pytest.skip("no host Python interpreter")
    script = staging.script(interp, "exiting.py")
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


def _pyenv_python(version_prefix):
    from conftest import _pyenv_root
    root = _pyenv_root()
    if not root:
        return None
    versions = os.path.join(root, "versions")
    for name in sorted(os.listdir(versions)) if os.path.isdir(versions) else []:
        if name.startswith(version_prefix + "."):
            exe = os.path.join(versions, name, "bin", "python" + version_prefix)
            if os.path.exists(exe):
                return exe
    return None


def _wait_started(proc):
    line = proc.stdout.readline()
    assert line.startswith("ready"), "the target did not start: %r" % line


SLEEPER = "import sys, time; print('ready', flush=True); time.sleep(30)"


@pytest.mark.parametrize("version", ["3.7", "2.7"])
def test_old_python_refused(version, procs, workdir):
    exe = _pyenv_python(version)
    if exe is None:
        pytest.skip("no pyenv Python %s here" % version)
    target = procs.start([exe, "-c", SLEEPER.replace("print(", "sys.stdout.write(")
                          .replace(", flush=True)", " + '\\n'); sys.stdout.flush()")],
                         stdout=subprocess.PIPE, text=True)
    _wait_started(target)
    out = os.path.join(workdir, "old.folded")
    run = run_pysight(procs, ["record", "-o", out, "-d", 2, "-p", target.pid], timeout=30)
    assert_one_error(run, "Python %s is not supported" % version)
    assert not os.path.exists(out), "no output file for a refused run"


def test_stripped_interpreter_profiled(procs, workdir):
    """A libpython whose section headers are gone, as after sstrip: the
    dynamic loader needs only program headers, so it still runs, and
    pysight finds its symbols where the loader does (PT_DYNAMIC)."""
    exe = _pyenv_python("3.11")
    if exe is None:
        pytest.skip("no pyenv Python 3.11 (shared libpython) here")
    libdir = os.path.join(os.path.dirname(os.path.dirname(exe)), "lib")
    lib = os.path.join(libdir, "libpython3.11.so.1.0")
    with open(lib, "rb") as f:
        data = bytearray(f.read())
    assert data[:5] == b"\x7fELF\x02", "not a 64-bit ELF: %s" % lib
    # drop the section header table: e_shoff, e_shnum, e_shstrndx = 0
    data[0x28:0x30] = bytes(8)
    data[0x3c:0x40] = bytes(4)
    patched = bytes(data)
    copy_dir = os.path.join(workdir, "stripped")
    os.mkdir(copy_dir)
    with open(os.path.join(copy_dir, "libpython3.11.so.1.0"), "wb") as f:
        f.write(patched)
    env = dict(os.environ, LD_LIBRARY_PATH=copy_dir)
    target = procs.start([exe, "-S", "-c", SLEEPER], stdout=subprocess.PIPE, text=True,
                         env=env)
    _wait_started(target)
    with open("/proc/%d/maps" % target.pid) as f:
        assert copy_dir in f.read(), "the target did not load the patched libpython"
    out = os.path.join(workdir, "stripped.folded")
    run = run_pysight(procs, ["record", "--mode", "wall", "-o", out, "-d", 2,
                              "-p", target.pid], timeout=30)
    assert run.returncode == 0, run.stderr
    assert target.poll() is None, "pysight must not harm the process it profiles"
    prof = Profile.load(out)
    asleep = prof.select(lambda f: [x.name for x in f] == ["<module>", "[off-cpu: sleep]"])
    # wall mode, in microseconds: the 2 s of the recording, nearly all asleep
    assert asleep.total >= 1.8e6, "%d us of sleep in <module>:\n%s\n%s" % (
        asleep.total, prof.top(), run.stderr)


def test_kernel_without_btf(procs, workdir):
    out = os.path.join(workdir, "nobtf.folded")
    run = run_pysight(procs, ["record", "-o", out, "-d", 1], timeout=30,
                      env={"PYSIGHT_KERNEL_BTF": "/nonexistent/vmlinux"})
    assert_one_error(run, "BTF")


def test_command_that_cannot_run(procs, workdir):
    out = os.path.join(workdir, "nocmd.folded")
    run = run_pysight(procs, ["record", "-o", out, "--", "/nonexistent/python3"], timeout=30)
    assert_one_error(run, "cannot run")
    assert not os.path.exists(out)


def test_sigterm_writes_profile(procs, staging, workdir):
    """SIGTERM stops recording, writes what was collected, stops the command."""
    interp = next((i for i in INTERPRETERS if not i.chroot), None)
    if interp is None:
        pytest.skip("no host Python interpreter")
    script = staging.script(interp, "exiting.py")
    out = os.path.join(workdir, "term.folded")
    rec = Recorder(procs, ["-o", out, "-r", 100, "--"] + interp.argv(script, 30))
    rec.wait_sampling(timeout=10)
    time.sleep(2)
    rc = rec.stop(signal.SIGTERM, timeout=15)
    assert rc == 0, "pysight exited %d on SIGTERM:\n%s" % (rc, rec.stderr)
    prof = Profile.load(out)
    sub = prof.containing("about_to_exit_work", "exiting.py")
    # a loaded machine may run the workload less than the 2 s: a floor only
    assert sub.total >= 30, "%d samples in 2 s at 100 Hz:\n%s" % (sub.total, prof.top())
    leftovers = [d for d in os.listdir(workdir) if d.startswith("term.folded.")]
    assert not leftovers, "temporary files left: %s" % leftovers


@pytest.mark.parametrize("feature", ["ring buffers", "bpf_get_current_task_btf", "bpf_loop"])
def test_old_kernel_named(feature, procs, workdir):
    """A kernel without what the BPF side needs is told apart from a bug:
    one line that names the missing feature and the minimum kernel."""
    out = os.path.join(workdir, "old.folded")
    run = run_pysight(procs, ["record", "-o", out, "-d", 1], timeout=30,
                      env={"PYSIGHT_PROBE_FAIL": feature})
    assert_one_error(run, feature)
    assert "Linux 5.17 or newer" in run.stderr, run.stderr
    assert not os.path.exists(out)
