"""`pysight dump`: every thread of a running process, blocked ones too, with
its state, the GIL and its frames, without stopping it."""
import json
import os
import re
import shutil
import subprocess

from conftest import PYSIGHT, blocking_interpreters, run_pysight

DEPTH = 300


def pytest_generate_tests(metafunc):
    if "dinterp" in metafunc.fixturenames:
        interps = blocking_interpreters()
        metafunc.parametrize("dinterp", interps, ids=[i.id for i in interps])


def start_target(procs, staging, interp, seconds=60):
    result = staging.result_file(interp)
    proc = procs.start(interp.argv(staging.script(interp, "dump_target.py"), seconds, result),
                       stdout=subprocess.DEVNULL)
    return proc, staging.wait_result(interp, result, proc)["tids"]


def parse_text(out):
    """{tid: (name, state, [frame texts, leaf first])} from dump's text."""
    threads, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'^Thread (\d+) "(.*)" \((.*)\)$', line)
        if m:
            cur = (m.group(2), m.group(3), [])
            threads[int(m.group(1))] = cur
        elif line.startswith("    ") and cur:
            cur[2].append(line.strip())
    return threads


def names(frames):
    return [f.split(" (")[0].split(".")[-1] for f in frames]


def test_dump_every_thread(dinterp, procs, staging):
    proc, tids = start_target(procs, staging, dinterp)
    run = run_pysight(procs, ["dump", "-p", proc.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("Process %d: " % proc.pid), run.stdout[:200]
    assert "Python %s" % dinterp.minor in run.stdout
    threads = parse_text(run.stdout)
    assert set(threads) == set(tids.values()), (tids, run.stdout[:3000])
    by_name = {name: threads[tid] for name, tid in tids.items()}
    for name, (shown, state, frames) in by_name.items():
        assert shown == name, (name, shown)

    # blocked in queue.get(): a lock wait, under get
    _, state, frames = by_name["getter"]
    assert state == "waiting on a lock", state
    assert "get" in names(frames)[:3] and names(frames)[names(frames).index("get") + 1] == "getter", \
        frames
    # in time.sleep()
    _, state, frames = by_name["sleeper"]
    assert state == "sleeping" and names(frames)[0] == "sleeper", (state, frames)
    # burning, and holding the GIL nobody else wants
    _, state, frames = by_name["burner"]
    assert state.startswith(("running", "runnable")) and state.endswith("holds the GIL"), state
    assert names(frames)[:2] == ["burn", "burner"], frames
    assert sum("holds the GIL" in t[1] for t in threads.values()) == 1, run.stdout
    # 300 frames deep: every one of them, in order, under deep()
    _, state, frames = by_name["deep"]
    got = names(frames)
    assert got.count("dive") == DEPTH + 1, got[:10]
    assert got.index("deep") == got.index("dive") + DEPTH + 1, got
    assert not any(f.startswith("[") for f in frames), frames[:3]
    # the main thread, in its own sleep
    _, state, frames = by_name["MainThread"]
    assert state == "sleeping" and names(frames)[:2] == ["main", "<module>"], (state, frames)
    # nothing was stopped: the burner went on burning meanwhile
    assert proc.poll() is None


def test_dump_json(procs, staging):
    interp = blocking_interpreters()[0]
    proc, tids = start_target(procs, staging, interp)
    run = run_pysight(procs, ["dump", "--json", "-p", proc.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    [p] = doc["processes"]
    assert p["pid"] == proc.pid and p["python"] == interp.minor
    threads = {t["tid"]: t for t in p["threads"]}
    assert set(threads) == set(tids.values())
    deep = threads[tids["deep"]]
    assert deep["name"] == "deep" and not deep["torn"] and deep["status"] == "complete"
    assert [f["name"] for f in deep["frames"]].count("dive") == DEPTH + 1
    [dframe] = [f for f in deep["frames"] if f["name"] == "deep"]
    assert dframe["file"].endswith("dump_target.py") and dframe["line"] > 0, dframe
    burner = threads[tids["burner"]]
    assert burner["holds_gil"] and burner["frames"][0]["name"] == "burn"


def test_dump_all_processes(procs, staging):
    """No -p: every Python process on the host, ours among them."""
    interp = blocking_interpreters()[0]
    proc, tids = start_target(procs, staging, interp)
    run = run_pysight(procs, ["dump"], timeout=60)
    assert run.returncode == 0, run.stderr
    assert re.search(r"^Process %d: " % proc.pid, run.stdout, re.M), run.stdout[:500]
    assert '"deep"' in run.stdout


def assert_one_error(run, *words):
    assert run.returncode != 0 and run.stdout == "", (run.returncode, run.stdout)
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("pysight: "), run.stderr
    for w in words:
        assert w in run.stderr, run.stderr


def test_dump_errors(procs, workdir):
    sleeper = procs.start(["sleep", "30"])
    assert_one_error(run_pysight(procs, ["dump", "-p", sleeper.pid], timeout=30),
                     str(sleeper.pid), "not a Python process")
    gone = procs.start(["true"])
    gone.wait()
    assert_one_error(run_pysight(procs, ["dump", "-p", gone.pid], timeout=30), str(gone.pid))
    run = run_pysight(procs, ["dump", "-p", "x"], timeout=30)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    # without privilege: a copy of the binary nobody's user can run
    binary = os.path.join(workdir, "pysight")
    shutil.copy(PYSIGHT, binary)
    os.chmod(binary, 0o755)
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          "--inh-caps=-all", binary, "dump", "-p", str(sleeper.pid)],
                         capture_output=True, text=True, timeout=30)
    assert_one_error(run, "root")


def test_dump_locals(dinterp, procs, staging):
    """--locals: the getter's known values, in text and in JSON."""
    proc, tids = start_target(procs, staging, dinterp)
    run = run_pysight(procs, ["dump", "--locals", "-p", proc.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    text = run.stdout.split('Thread %d "getter"' % tids["getter"])[1].split("\nThread ")[0]
    block = text.split("getter (")[1]
    for want in ("count = 42", "ratio = 0.5", "flag = True", "nothing = None",
                 "negative = -7", "label = 'getter\\'s label'", "data = b'\\x00ab'",
                 "items = <list of 3>", "table = <dict of 1>", "big = <int at 0x",
                 "q = <Queue at 0x"):
        assert "        " + want in block, (want, block)
    run = run_pysight(procs, ["dump", "--locals", "--json", "-p", proc.pid], timeout=60)
    doc = json.loads(run.stdout)
    [getter] = [t for t in doc["processes"][0]["threads"] if t["tid"] == tids["getter"]]
    [frame] = [f for f in getter["frames"] if f["name"] == "getter"]
    assert frame["locals"]["count"] == "42" and frame["locals"]["items"] == "<list of 3>", frame
