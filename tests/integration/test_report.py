"""`pysight report`: the table a user reads, and the errors a bad file gets.
It needs no root: these tests run the binary on files."""
import os
import subprocess

import pytest

from conftest import PYSIGHT, REPO

FIXTURES = os.path.join(REPO, "tests", "fixtures")


def report(*args):
    return subprocess.run([PYSIGHT, "report"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=30)


def test_report_table_is_pinned():
    """The table for a fixed profile, byte for byte: the order (self, then
    total, then name), the percentages and the sample count."""
    run = report(os.path.join(FIXTURES, "golden.folded"))
    assert run.returncode == 0, run.stderr
    with open(os.path.join(FIXTURES, "golden.report")) as f:
        assert run.stdout == f.read()


def test_report_top_n_and_labels():
    run = report("-n", 3, os.path.join(FIXTURES, "golden-threads.folded"))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "mode cpu, samples, read from a folded file", run.stdout
    assert lines[2].split() == ["35.1%", "35.1%", "slow_score", "(app.py:19)"]
    assert len(lines) == 6 and lines[-1] == "(77 samples)", run.stdout
    # thread roots are labels, not frames: no row of their own
    full = report("-n", 100, os.path.join(FIXTURES, "golden-threads.folded")).stdout
    assert "thread " not in full, full


def test_report_time_profile(tmp_path):
    path = tmp_path / "wall.folded"
    path.write_text("main (app.py:3);time.sleep (<built-in>);[off-cpu: sleep] 1500000\n"
                    "main (app.py:3);burn (app.py:9) 500000\n")
    run = report(path)
    assert run.returncode == 0, run.stderr
    assert "(2.000 s of time: cpu 25.0% sleep 75.0%)" in run.stdout, run.stdout
    assert " 75.0%   75.0%  [off-cpu: sleep]" in run.stdout, run.stdout


@pytest.mark.parametrize("content,expect", [
    ("a;b 3\nnot a stack\n", "line 2: not 'frame;frame;... COUNT'"),
    ("a;b\x00 1\n", "line 1: binary data"),
    ("a;b 3x\n", "line 1:"),
], ids=["garbage-line", "binary", "bad-count"])
def test_report_bad_files(tmp_path, content, expect):
    path = tmp_path / "bad.folded"
    path.write_text(content)
    run = report(path)
    lines = run.stderr.splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert lines[0].startswith("pysight: ") and str(path) in lines[0] and expect in lines[0], \
        lines[0]


def test_report_missing_and_usage(tmp_path):
    run = report(tmp_path / "none.folded")
    assert run.returncode == 1 and "cannot open" in run.stderr and "none.folded" in run.stderr
    run = report()
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    run = report(tmp_path)
    assert run.returncode == 1 and "not a regular file" in run.stderr, run.stderr


def test_report_empty_file(tmp_path):
    """An empty file is an error (a recording that wrote nothing is one);
    a folded file of comments alone is a profile without samples."""
    path = tmp_path / "empty.folded"
    path.write_text("")
    run = report(path)
    assert run.returncode == 1 and run.stderr == "pysight: %s: empty file\n" % path
    path.write_text("# nothing\n")
    run = report(path)
    assert run.returncode == 0 and run.stdout.endswith("%s: no samples\n" % path)


def test_report_colour_only_on_a_terminal():
    """Colour at a terminal, none in a pipe or with NO_COLOR."""
    import pty
    path = os.path.join(FIXTURES, "golden.folded")
    piped = report(path)
    assert "\033[" not in piped.stdout

    def at_terminal(env):
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(PYSIGHT, [PYSIGHT, "report", "-n", "3", path], env)
        out = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.waitpid(pid, 0)
        return out.decode()

    env = {"TERM": "xterm", "PATH": "/usr/bin:/bin"}
    coloured = at_terminal(env)
    assert "\033[1;31m" in coloured and "slow_score (app.py:19)" in coloured, coloured
    assert "\033[" not in at_terminal(dict(env, NO_COLOR="1"))
    assert "\033[" not in at_terminal(dict(env, TERM="dumb"))


def test_report_by_and_labels():
    """--by function folds lines together, --by file folds functions;
    --thread by id or name, and --process, keep their samples only."""
    threads = os.path.join(FIXTURES, "golden-threads.folded")
    run = report("--by", "function", "--thread", "worker-1", threads)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[2].split() == ["61.9%", "61.9%", "slow_score", "(app.py)"], run.stdout
    assert lines[-1] == "(21 samples)"
    assert report("--by", "function", "--thread", "101", threads).stdout == run.stdout
    run = report("--by", "file", "--thread", "101", threads)
    assert run.stdout.splitlines()[2].split() == ["100.0%", "100.0%", "app.py"], run.stdout
    run = report("--thread", "4242", threads)
    assert run.returncode == 0 and "no samples for that process or thread" in run.stdout
    run = report("--by", "lines", threads)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr


@pytest.mark.parametrize("cmd", ["record", "convert", "diff"])
def test_unknown_extension_names_the_choices(tmp_path, cmd):
    """An -o whose extension no writer has is a usage error, before any
    work, in one line that says what would do; -f names the formats."""
    golden = os.path.join(FIXTURES, "golden.folded")
    out = tmp_path / "profile.xyz"
    args = {"record": ["-o", out, "--", "true"],
            "convert": [golden, "-o", out],
            "diff": [golden, golden, "-o", out]}[cmd]
    run = subprocess.run([PYSIGHT, cmd] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "cannot tell the format of %s" % out in run.stderr
    assert ".svg" in run.stderr and "-f" in run.stderr, run.stderr
    if cmd != "diff":
        assert all(f in run.stderr for f in ("folded", "speedscope", "pprof", ".pb.gz")), run.stderr
    assert not out.exists()
    if cmd != "diff":
        run = subprocess.run([PYSIGHT, cmd, "--help"], capture_output=True, text=True, timeout=30)
        fmt = [l for l in run.stdout.splitlines() if "--format" in l]
        assert fmt and all(f in fmt[0] for f in ("folded", "speedscope", "pprof", "svg")), fmt
