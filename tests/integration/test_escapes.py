"""Every name pysight prints comes from a process it does not trust: a
thread's name, the comm, a function's name, a file name, a cgroup's name.
None of their control characters may reach a terminal raw; each is shown
as a visible escape, so the text stays recognisable.  Machine formats keep
the data and stay valid in their own syntax."""
import gzip
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import PYSIGHT, Profile, find_interp, run_pysight
from test_containers import cgroups  # noqa: F401  (the fixture)
from test_formats import profile_pb2

EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31mRED\nFAKE Thread 1 \"x\"\x9b\u202e"
# how a terminal is shown it
SHOWN = r'\x1b]0;owned\x07\x1b[2J\x1b[31mRED\nFAKE Thread 1 "x"\u009b\u202e'
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u2028-\u202e\u2066-\u2069]")


def assert_safe(text, what):
    """No control character but the lines' own breaks, and no line that
    the target wrote: its forged 'FAKE Thread' is inside a line of ours."""
    bad = RAW.search(text)
    assert not bad, "%s: raw %r at %d: %r" % (what, bad.group(), bad.start(),
                                           text[max(0, bad.start() - 60):bad.start() + 20])
    assert not [l for l in text.splitlines() if l.startswith("FAKE")], what


@pytest.fixture
def evil(procs, staging):
    interp = find_interp("3.11", "debian")
    if interp is None:
        pytest.skip("no Debian python3.11")
    proc = procs.start(interp.argv(staging.script(interp, "evil_names.py"), 60),
                       stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("ready")
    return proc


def test_dump_escapes_every_name(procs, evil):
    run = run_pysight(procs, ["dump", "-p", evil.pid])
    assert run.returncode == 0, run.stderr
    assert_safe(run.stdout, "dump")
    assert_safe(run.stderr, "dump's stderr")
    assert ('Thread %d "evil%s"' % (evil.pid + 1, SHOWN)) in run.stdout or \
        ('"evil%s"' % SHOWN) in run.stdout, run.stdout
    assert "burn" + SHOWN in run.stdout, run.stdout           # co_qualname
    assert "evil" + SHOWN + ".py" in run.stdout, run.stdout    # co_filename
    # the JSON form keeps the name whole
    run = run_pysight(procs, ["dump", "-p", evil.pid, "--json"])
    assert run.returncode == 0, run.stderr
    threads = [t for p in json.loads(run.stdout)["processes"] for t in p["threads"]]
    assert "evil" + EVIL in [t["name"] for t in threads], threads
    assert "burn" + EVIL in [f["name"] for t in threads for f in t["frames"]], threads


def test_record_report_diff_and_files(procs, evil, workdir, tmp_path):
    out = {ext: os.path.join(workdir, "p." + ext) for ext in ("folded", "json", "pb.gz", "svg")}
    args = ["record", "-p", evil.pid, "-d", 2, "--threads"]
    for path in out.values():
        args += ["-o", path]
    run = run_pysight(procs, args)
    assert run.returncode == 0, run.stderr
    assert_safe(run.stderr, "record's summary")
    # wall mode's summary names each process
    run = run_pysight(procs, ["record", "-p", evil.pid, "-d", 1, "--mode", "wall",
                              "-o", os.path.join(workdir, "wall.folded")])
    assert run.returncode == 0, run.stderr
    assert_safe(run.stderr, "record's summary by process")
    assert "py\\x1b[2Jevil\\xff" in run.stderr, run.stderr

    # folded: one line a stack, no control characters, names recognisable
    with open(out["folded"], encoding="utf-8") as f:
        text = f.read()
    assert_safe(text.replace("\t", " "), "folded")
    prof = Profile.load(out["folded"])
    burn = prof.select(lambda fr: any(x.name.startswith("burn") for x in fr))
    assert burn.total > 50, prof.top()
    assert any(x.name.startswith("burn\\x1b]0:owned\\x07") for fr, _ in burn.stacks for x in fr), \
        burn.top()                                 # ';' is ':' in folded
    # speedscope and pprof keep the name whole; the SVG is valid XML
    with open(out["json"], encoding="utf-8") as f:
        names = [fr["name"] for fr in json.load(f)["shared"]["frames"]]
    assert "burn" + EVIL in names, names
    msg = profile_pb2(tmp_path).Profile()
    with gzip.open(out["pb.gz"]) as f:
        msg.ParseFromString(f.read())          # proto3: every string valid UTF-8
    assert "burn" + EVIL in msg.string_table
    assert [s for s in msg.string_table if s.startswith("py\x1b[2Jevil")], msg.string_table
    ET.parse(out["svg"])                       # well-formed XML
    with open(out["svg"], encoding="utf-8") as f:
        svg = f.read()
    assert_safe(svg.replace("\t", " "), "svg")
    assert re.search(r"burn[^\"]*x1b\]0:owned[^\"]*RED FAKE Thread", svg), "no name in the SVG"

    # what a terminal shows of the profile that kept them whole
    for argv, want in ((["report", out["pb.gz"]], "burn" + SHOWN),
                       (["report", out["json"], "-b", "file"], "evil" + SHOWN + ".py"),
                       (["diff", out["pb.gz"], out["folded"]], "burn" + SHOWN)):
        run = subprocess.run([PYSIGHT] + argv, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (argv, run.stderr)
        assert_safe(run.stdout, " ".join(argv[:1]))
        assert want in run.stdout, (argv, run.stdout)


def test_top_escapes(procs, evil):
    run = run_pysight(procs, ["top", "-p", evil.pid, "-n", 2, "-i", 1], timeout=60)
    assert run.returncode == 0, run.stderr
    assert_safe(run.stdout, "top")
    assert "burn" + SHOWN[:40] in run.stdout, run.stdout


def test_containers_escapes_cgroup_and_process_names(procs, staging, cgroups):
    interp = find_interp("3.11", "debian")
    if interp is None:
        pytest.skip("no Debian python3.11")
    cg = cgroups.make("pysight-test-evil\x1b[31m\x07")
    proc = cgroups.run_in(procs, cg, interp.argv(staging.script(interp, "evil_names.py"), 60),
                          stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("ready")
    run = run_pysight(procs, ["containers"])
    assert run.returncode == 0, run.stderr
    assert_safe(run.stdout, "containers")
    line = [l for l in run.stdout.splitlines() if "pysight-test-evil" in l]
    assert line and "pysight-test-evil\\x1b[31m\\x07" in line[0], run.stdout
    assert "py\\x1b[2Jevil\\xff %d" % proc.pid in line[0], line

