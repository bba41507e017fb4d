"""Every format of one recording, read by the tools people use: speedscope's
own JSON schema, `go tool pprof`, a protobuf decoder that is not ours,
inferno; `report` on each; `diff` of two releases; bad files."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PYSIGHT, REPO, WORKLOADS, Profile, assert_recorded, pct, run_pysight

PYTHON = "/usr/bin/python3.11"
NODE = os.path.join(REPO, ".output", "node", "node_modules")
SCHEMA = os.path.join(NODE, "speedscope", "dist", "release", "file-format-schema.json")
PROTO = "/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto"
INFERNO = os.path.join(REPO, ".output", "cargo", "bin", "inferno-flamegraph")
RATE = 500
LABELS = {"pid", "thread_id", "thread_name", "process_name", "cgroup", "container_id"}


def pysight(*args, timeout=60):
    return subprocess.run([PYSIGHT] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout)


def go_binary():
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go")
                                else None)
    if not go:
        pytest.skip("!!! GO IS MISSING: `go tool pprof` was NOT run on our pprof output; "
                    "install Go to check the pprof format !!!")
    return go


def record(procs, workdir, name, release, extra=(), outputs=("folded", "json", "pb.gz"),
           wargs=("2.5",), workload="shifting.py"):
    outs = [os.path.join(workdir, "%s.%s" % (name, ext)) for ext in outputs]
    args = ["record", "-r", RATE] + [a for o in outs for a in ("-o", o)] + list(extra)
    run = run_pysight(procs, args + ["--", PYTHON, os.path.join(WORKLOADS, workload),
                                     release] + list(wargs), timeout=90)
    assert_recorded(run)
    for o in outs:
        assert os.path.getsize(o) > 0, "%s is empty; stderr:\n%s" % (o, run.stderr)
    return outs


def table(out):
    """report's rows: [(self%, total%, frame)] and its closing total line."""
    rows = []
    lines = out.splitlines()
    for line in lines[2:-1]:
        m = re.match(r"^\s*([\d.]+)%\s+([\d.]+)%\s+(.*)$", line)
        assert m, "not a report row: %r\n%s" % (line, out)
        rows.append((float(m.group(1)), float(m.group(2)), m.group(3)))
    return lines[0], rows, lines[-1]


@pytest.fixture
def v1(procs, workdir):
    return record(procs, workdir, "v1", "v1")


def test_reports_agree_across_formats(v1):
    """One recording in three formats: report reads each, and the rows,
    shares and totals are the same; the header names the format."""
    seen = {}
    for path in v1:
        # every function: report puts self time first, so each import
        # function sampled at start-up (more of them on a busy machine)
        # ranks above render, whose time is all in spin
        run = pysight("report", "-n", 1000, "--by", "function", path)
        assert run.returncode == 0, run.stderr
        header, rows, total = table(run.stdout)
        fmt = {"folded": "folded", "json": "speedscope", "gz": "pprof"}[path.rsplit(".", 1)[1]]
        assert header.startswith("mode cpu, samples") and "read from a %s file" % fmt in header, \
            header
        seen[fmt] = (rows, total)
    assert seen["folded"] == seen["speedscope"] == seen["pprof"], seen
    rows, total = seen["pprof"]
    shares = {frame.split(" (")[0]: (s, t) for s, t, frame in rows}
    # shifting.py v1: parse 70%, render 30% of the workload's time
    assert "parse" in shares and "render" in shares, rows
    work = shares["parse"][1] + shares["render"][1]
    assert abs(pct(shares["parse"][1], work) - 70) < 5, rows
    assert int(re.match(r"\((\d+) samples\)", total).group(1)) > 500, total


def test_speedscope_validates_against_its_schema(v1):
    import jsonschema
    assert os.path.exists(SCHEMA), "speedscope's npm package is not installed (make integration)"
    with open(SCHEMA) as f:
        schema = json.load(f)
    with open(v1[1]) as f:
        doc = json.load(f)
    jsonschema.validate(doc, schema)
    assert doc["exporter"].startswith("pysight@")
    names = [p["name"] for p in doc["profiles"]]
    assert all(re.match(r"^python3\.11 \d+ / python3\.11 \d+( \[.*\])?$", n) for n in names), names
    assert {p["unit"] for p in doc["profiles"]} == {"none"}
    frames = doc["shared"]["frames"]
    parse = [f for f in frames if f["name"] == "parse"]
    assert parse and parse[0]["file"].endswith("shifting.py") and parse[0]["line"] == 26, parse
    # the weights are the folded counts
    folded = Profile.load(v1[0])
    assert sum(sum(p["weights"]) for p in doc["profiles"]) == folded.total


def go_top(path, *extra):
    run = subprocess.run([go_binary(), "tool", "pprof", "-top"] + list(extra) + [path],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_go_tool_pprof_reads_it(v1):
    """`go tool pprof -top`: its total agrees with the folded output's, and
    its flat shares with report's."""
    folded = Profile.load(v1[0])
    out = go_top(v1[2], "-sample_index=samples")
    m = re.search(r"of ([\d.]+) total", out)
    assert m and int(float(m.group(1))) == folded.total, out
    spin = sum(c for frames, c in folded.stacks if frames[-1].name == "spin")
    row = [l for l in out.splitlines() if l.split()[-1:] == ["spin"]]
    assert row, out
    flat = float(row[0].split()[1].rstrip("%"))
    assert abs(flat - pct(spin, folded.total)) < 0.1, (flat, pct(spin, folded.total))
    # the default sample type is cpu time: samples times the period
    out = go_top(v1[2])
    m = re.search(r"of ([\d.]+)(ms|s) total", out)
    total_ms = float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
    assert abs(total_ms - folded.total * 1000 / RATE) < 1, out


def profile_pb2(tmp_path):
    """profile.proto compiled by protoc (grpcio-tools), not by us."""
    from grpc_tools import protoc
    out = tmp_path / "pb"
    out.mkdir()
    rc = protoc.main(["protoc", "-I" + os.path.dirname(PROTO), "--python_out=" + str(out), PROTO])
    assert rc == 0
    sys.path.insert(0, str(out))
    try:
        import profile_pb2
        return profile_pb2
    finally:
        sys.path.remove(str(out))


def test_pprof_ids_and_strings(procs, workdir, tmp_path):
    """The rules Parca and Pyroscope enforce, checked by another decoder:
    string_table[0] is "", ids run 1..N, one Function per code object and
    one Location per (function, line), Prometheus-legal labels; wall mode
    has its sample types."""
    pb2 = profile_pb2(tmp_path)
    outs = record(procs, workdir, "wall", "cycle", ["--mode", "wall"], ("pb.gz", "folded"),
                  workload="offcpu.py", wargs=("2", os.path.join(workdir, "r.json")))
    p = pb2.Profile()
    with gzip.open(outs[0]) as f:
        p.ParseFromString(f.read())
    s = p.string_table
    assert s[0] == ""
    assert [m.id for m in p.mapping] == [1]
    assert [l.id for l in p.location] == list(range(1, len(p.location) + 1))
    assert [f.id for f in p.function] == list(range(1, len(p.function) + 1))
    funcs = [(s[f.name], s[f.filename], f.start_line) for f in p.function]
    assert len(funcs) == len(set(funcs)), "a code object has two Functions"
    locs = [(l.line[0].function_id, l.line[0].line) for l in p.location]
    assert len(locs) == len(set(locs)), "a (function, line) has two Locations"
    assert [(s[t.type], s[t.unit]) for t in p.sample_type] == [
        ("samples", "count"), ("cpu", "nanoseconds"), ("wall", "nanoseconds"),
        ("off_cpu", "nanoseconds")]
    assert s[p.default_sample_type] == "wall"
    keys = {s[l.key] for smp in p.sample for l in smp.label}
    assert keys <= LABELS and {"pid", "thread_id", "thread_name", "process_name"} <= keys, keys
    # wall = cpu + off_cpu in every sample, and the folded total agrees (µs)
    assert all(v.value[2] == v.value[1] + v.value[3] for v in p.sample)
    wall_us = sum(v.value[2] for v in p.sample) / 1000
    assert abs(wall_us - Profile.load(outs[1]).total) < len(p.sample), wall_us
    burn = [f.id for f in p.function if s[f.name] == "burn_phase"]
    assert burn and s[[f for f in p.function if f.id == burn[0]][0].filename].endswith("offcpu.py")


def test_inferno_reads_our_folded(v1, tmp_path):
    assert os.path.exists(INFERNO), "inferno is not installed (make integration installs it)"
    svg = subprocess.run([INFERNO, v1[0]], capture_output=True, text=True, timeout=60)
    assert svg.returncode == 0, svg.stderr
    assert "<svg" in svg.stdout and "parse (" in svg.stdout and "render (" in svg.stdout


def test_diff_ranks_the_function_that_changed(procs, workdir):
    """v1 spends 70% in parse, v2 70% in render: diff ranks render's growth
    and parse's shrinking first, and --fail-over fails on it."""
    before = record(procs, workdir, "v1", "v1", outputs=("json",))[0]
    after = record(procs, workdir, "v2", "v2", outputs=("pb.gz",))[0]
    run = pysight("diff", before, after, "-n", 3)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    at = lines.index("Total share, largest changes:")
    # the two functions whose shares swapped, in either order (their
    # changes are equal but for rounding), before anything else
    rows = {}
    for line in lines[at + 2:at + 4]:
        m = re.match(r"^\s*([\d.]+)% ->\s+([\d.]+)%\s+([-+][\d.]+)\s+(\w+) \(.*shifting\.py\)$",
                     line)
        assert m, run.stdout
        rows[m.group(4)] = float(m.group(3))
    assert set(rows) == {"parse", "render"}, run.stdout
    assert rows["render"] > 25 and rows["parse"] < -25, rows

    run = pysight("diff", before, after, "--fail-over", 15)
    assert run.returncode == 3, run.stderr
    assert run.stderr.startswith("pysight: render (") and "over --fail-over 15" in run.stderr
    assert pysight("diff", before, after, "--fail-over", 80).returncode == 0
    # the same, in the other order: parse grew
    run = pysight("diff", after, before, "--fail-over", 15)
    assert run.returncode == 3 and "parse (" in run.stderr, run.stderr

    # difffolded.pl's two-count form
    run = pysight("diff", before, after, "-f", "folded")
    assert run.returncode == 0, run.stderr
    b = a = 0
    for line in run.stdout.splitlines():
        stack, cb, ca = line.rsplit(" ", 2)
        if "render (" in stack:
            b, a = b + int(cb), a + int(ca)
    assert a > 1.5 * b, (b, a)


def test_collapse(procs, workdir):
    """--collapse hides frames and keeps their children under the nearest
    kept ancestor; report's --collapse does the same to a file."""
    out = record(procs, workdir, "c", "v1", ["--collapse", r"^main \("], ("folded",))[0]
    prof = Profile.load(out)
    assert "main" not in prof.names()
    under = [f for f, _ in prof.stacks if any(x.name == "parse" for x in f)]
    assert under and all(f[[x.name for x in f].index("parse") - 1].name == "<module>"
                         for f in under), prof.top()
    run = pysight("report", "--collapse", "^(parse|render) ", "--by", "function", out)
    assert run.returncode == 0 and "parse (" not in run.stdout, run.stdout
    run = pysight("report", "--collapse", "([", out)
    assert run.returncode == 2 and "--collapse" in run.stderr, run.stderr


def test_unknown_extension(procs, workdir):
    out = os.path.join(workdir, "x.bogus")
    run = run_pysight(procs, ["record", "-o", out, "--", PYTHON, "-c", "pass"], timeout=30)
    assert run.returncode == 2 and not os.path.exists(out)
    assert run.stderr.count("\n") == 1 and "folded, speedscope, pprof" in run.stderr, run.stderr


BAD = {
    "empty.folded": (b"", "empty file"),
    "png.folded": (b"\x89PNG\r\n\x1a\n\x00\x00", "line 1: not"),
    "binary.folded": (b"a;b 1\n\x00\x01\x02 3\n", "line 2: binary data"),
    "trunc.json": (b'{"shared": {"frames": [{"name": "a"}', "byte 36: unexpected end"),
    "wrong.json": (b'{"traceEvents": []}', "not speedscope's format"),
    "trunc.pb.gz": (None, "truncated gzip"),
    "garbage.pb.gz": (b"\x1f\x8b" + b"\x00" * 30, "byte"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_files(name, v1, tmp_path):
    """report and diff: a one-line error naming the file and where."""
    data, expect = BAD[name]
    if data is None:
        with open(v1[2], "rb") as f:
            data = f.read()[:100]
    path = tmp_path / name
    path.write_bytes(data)
    for args in (["report", path], ["diff", v1[0], path], ["diff", path, v1[0]]):
        run = pysight(*args)
        assert run.returncode == 1, (args, run.stdout, run.stderr)
        assert run.stderr.count("\n") == 1 and str(path) in run.stderr \
            and expect in run.stderr, run.stderr
