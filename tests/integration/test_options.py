"""Following children, the rate, and the options that shape frames."""
import os
import re

import pytest

from conftest import (Profile, assert_recorded, find_interp, pct, python_frames,
                      run_pysight)


def host_interp():
    return find_interp("3.11", "debian") or find_interp("3.12") or find_interp("3.11")


def record(procs, staging, workdir, interp, workload, args, rate, *wargs):
    script = staging.script(interp, workload)
    result = staging.result_file(interp)
    out = os.path.join(workdir, workload.replace(".py", ".folded"))
    run = run_pysight(procs, ["record", "-o", out, "-r", rate] + list(args) + ["--"]
                      + interp.argv(script, *wargs, result), timeout=90)
    assert_recorded(run)
    return Profile.load(out), staging.read_result(interp, result), run


@pytest.mark.parametrize("which", ["debian-3.11", "pyenv-3.12"])
def test_follows_children(which, procs, staging, workdir):
    kind, minor = which.split("-")
    interp = find_interp(minor, kind)
    if interp is None:
        pytest.skip("no %s here" % which)
    rate, seconds = 200, 2.0
    prof, truth, _ = record(procs, staging, workdir, interp, "spawner.py", [], rate, seconds)
    for name, busy in truth["seconds"].items():
        got = prof.with_leaf("burn").containing(name, "spawner.py").total
        assert got >= 0.8 * busy * rate, (
            "%s: %d samples under %s, which ran %.2f CPU s at %d Hz (want >= 80%%):\n%s"
            % (which, got, name, busy, rate, prof.top()))


def test_sustains_1000hz(procs, staging, workdir):
    interp = host_interp()
    rate, seconds = 1000, 3.0
    prof, truth, run = record(procs, staging, workdir, interp, "ratio.py", [], rate, seconds)
    busy = sum(truth["seconds"].values())
    lost = re.search(r"lost (\d+)", run.stderr)
    assert lost and int(lost.group(1)) == 0, "samples lost at 1000 Hz:\n%s" % run.stderr
    got = sum(prof.containing(n, "ratio.py").total
              for n in ("alpha_work", "beta_work", "Beta.beta_work", "gamma_work"))
    assert got >= 0.85 * busy * rate, "%d samples for %.2f CPU s at 1000 Hz:\n%s" % (
        got, busy, run.stderr)
    assert got <= 1.15 * busy * rate, "%d samples for %.2f CPU s at 1000 Hz: too many" % (
        got, busy)


def test_nolineno_and_filenames(procs, staging, workdir):
    interp = host_interp()
    prof, _, _ = record(procs, staging, workdir, interp, "threads50.py", ["--nolineno"], 100, 1)
    frames = [f for stack, _ in prof.stacks for f in python_frames(stack)]
    assert frames, "no samples"
    with_lines = [f for f in frames if f.line is not None]
    assert not with_lines, "--nolineno still shows lines: %s" % with_lines[:3]
    # threading.py is shortened to its stdlib-relative name, py-spy style
    files = {f.file for f in frames}
    assert "threading.py" in files, "stdlib frames should read threading.py: %s" % files
    assert not any(f and f.startswith("/") and f.endswith("/threading.py") for f in files)

    prof, _, _ = record(procs, staging, workdir, interp, "threads50.py",
                        ["--full-filenames"], 100, 1)
    files = {f.file for stack, _ in prof.stacks for f in python_frames(stack)}
    full = [f for f in files if f and f.endswith("/threading.py") and f.startswith("/")]
    assert full, "--full-filenames should keep the whole path: %s" % files
    assert all(f.line is not None for stack, _ in prof.stacks for f in python_frames(stack)
               if f.file and f.file.endswith(".py"))


def test_threads_past_256(procs, staging, workdir):
    """Thread states deep in a long thread list are still found."""
    interp = host_interp()
    script = staging.script(interp, "threads50.py")
    out = os.path.join(workdir, "threads300.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", 500, "--threads", "--"]
                      + interp.argv(script, 3, "-", 300), timeout=90)
    assert_recorded(run)
    prof = Profile.load(out)
    m = re.search(r"complete\s+(\d+) \(([\d.]+)%\)", run.stderr)
    assert m and float(m.group(2)) >= 95.0, (
        "with 300 threads only %s of samples were complete:\n%s"
        % (m.group(2) + "%" if m else "none", run.stderr))
    tids = {int(frames[0].name.split()[1]) for frames, _ in prof.stacks
            if frames[0].name.startswith("thread ")}
    assert len(tids) >= 50, "samples from only %d threads of 300" % len(tids)
