"""`--asyncio`: a sample of an asyncio program is its running task's stack,
the tasks awaiting it root first, in place of the event loop's frames.
A real line server (asyncio_service.py) under load from another
process."""
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import CpuShare, Profile, Recorder, find_interp, run_pysight
from test_dump_tasks import task_interpreters

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "asyncio_service.py")


def pytest_generate_tests(metafunc):
    if "ainterp" in metafunc.fixturenames:
        interps = task_interpreters()
        metafunc.parametrize("ainterp", interps, ids=[i.id for i in interps])


def start_load(interp, procs, result, alive, seconds, clients):
    """Once the server listens (its port in RESULT.port), its load:
    clients connections from the host's Python."""
    port_file = interp.host_path(result + ".port")
    deadline = time.monotonic() + 30
    while not os.path.exists(port_file):
        assert alive(), "asyncio_service.py exited before it listened"
        assert time.monotonic() < deadline, "asyncio_service.py never listened"
        time.sleep(0.05)
    with open(port_file) as f:
        port = f.read().split()[0]
    return procs.start([sys.executable, WORKLOAD, "load", port, str(seconds), str(clients)])


def start_service(procs, staging, interp, seconds, clients):
    """The server and its load."""
    result = staging.result_file(interp)
    server = procs.start(interp.argv(staging.script(interp, "asyncio_service.py"), "serve",
                                     seconds, result))
    load = start_load(interp, procs, result, lambda: server.poll() is None, seconds, clients)
    return server, result, load


def record(procs, pid, out, seconds, *mode):
    """`record --asyncio` of pid for seconds: the profile, and the run."""
    run = run_pysight(procs, ["record", "--asyncio", *mode, "-p", pid, "-d", seconds,
                              "-o", out], timeout=90)
    assert run.returncode == 0, run.stderr
    return Profile.load(out), run


def test_cpu_task_stacks(ainterp, procs, staging, tmp_path):
    """cpu mode: `fast` burns the CPU, under its connection's task."""
    server, _, _ = start_service(procs, staging, ainterp, 8, 3)
    prof, _ = record(procs, server.pid, tmp_path / "svc.folded", 4)
    burn = prof.containing("burn")
    assert burn.total > 0.5 * prof.total, prof.top()
    for frames, count in burn.stacks:
        names = [f.name for f in frames]
        tasks = [n for n in names if n.startswith("[task ")]
        # the task's own frames only: no event loop below them
        assert tasks and tasks[0].startswith("[task conn-"), names
        assert names[0] == tasks[0], names
        assert "BaseEventLoop._run_once" not in names and "Handle._run" not in names, names
        assert names[-3:] == ["serve_conn", "fast", "burn"], names
    # the connections are each their own task
    assert len({f[0].name for f, _ in burn.stacks}) >= 2, burn.top()


def test_cpu_nested_tasks(ainterp, procs, staging, tmp_path):
    """A task awaited by tasks: the whole chain, root first, by name."""
    script = staging.script(ainterp, "asyncio_burn_tree.py")
    result = staging.result_file(ainterp)
    proc = procs.start(ainterp.argv(script, 8, result))
    staging.wait_result(ainterp, result, proc)
    prof, _ = record(procs, proc.pid, tmp_path / "tree.folded", 3)
    burn = prof.containing("spin")
    assert burn.total > 0.8 * prof.total, prof.top()
    for frames, _ in burn.stacks:
        names = [f.name for f in frames]
        assert names[:2] == ["[task main]", "main"], names
        i = names.index("[task child-2]")
        assert names[i + 1] == "child" and names[i + 2] == "[task grandchild-2]", names
        assert names[i + 3:] == ["grandchild", "spin"], names


def handler_shares(prof, handler):
    """Of the time under a handler's frame: each cause's share (cpu for
    on-CPU samples), in points."""
    got, total = {}, 0
    for frames, count in prof.stacks:
        names = [f.name for f in frames]
        if handler not in names:
            continue
        cause = next((n[len("[await: "):-1] for n in names if n.startswith("[await: ")), None)
        off = next((n for n in names if n.startswith("[off-cpu") or n == "[runqueue]"), None)
        key = cause or (off and "off") or "cpu"
        got[key] = got.get(key, 0) + count
        total += count
    return {k: 100.0 * v / total for k, v in got.items()}, total


def test_wall_task_causes(ainterp, procs, staging, tmp_path):
    """wall mode: each handler's sleep, lock and CPU shares, from the task
    samples at its await points and the CPU samples of its task, match
    what the handler measured of itself within 5 points."""
    server, result, load = start_service(procs, staging, ainterp, 7, 3)
    prof, _ = record(procs, server.pid, tmp_path / "wall.folded", 4, "--mode", "wall")
    truth = staging.wait_result(ainterp, result, server, timeout=30)["handlers"]
    tasks = prof.select(lambda fr: fr[0].name == "[asyncio tasks]")
    assert tasks.total > 0, prof.top()
    for frames, _ in tasks.stacks:
        names = [f.name for f in frames]
        assert names[-1].startswith("[await: ") and names[1].startswith("[task "), names
    want = {"db": ("sleep", "sleep"), "locked": ("lock", "lock"), "fast": ("cpu", "cpu")}
    for handler, (key, truth_key) in want.items():
        t = truth[handler]
        shares, total = handler_shares(prof, handler)
        expect = 100.0 * t[truth_key] / t["wall"]
        assert total > 0 and abs(shares.get(key, 0.0) - expect) <= 5.0, \
            (handler, shares, expect, t)
    # a handler's stack is its connection task's: never the loop's frames
    for frames, _ in prof.containing("db").stacks:
        assert "BaseEventLoop._run_once" not in [f.name for f in frames], frames


def test_wall_loop_busy(ainterp, procs, staging, tmp_path):
    """A handler that blocks the loop: every other task's wait then is the
    loop's, [await: loop busy], at least 80% of what the handler stalled.
    The whole run is recorded, so the two cover the same time."""
    result = staging.result_file(ainterp)
    out = tmp_path / "busy.folded"
    rec = Recorder(procs, ["--asyncio", "--mode", "wall", "-o", out, "--"] +
                   ainterp.argv(staging.script(ainterp, "asyncio_service.py"), "serve", 5,
                                result))
    start_load(ainterp, procs, result, lambda: rec.proc.poll() is None, 5, -3)
    assert rec.wait(60) == 0, rec.stderr
    truth = staging.read_result(ainterp, result)["handlers"]
    prof = Profile.load(out)
    busy = sum(c for frames, c in prof.stacks if frames[-1].name == "[await: loop busy]")
    stalled = truth["block"]["stalled"] * 1e6     # the folded file counts microseconds
    assert stalled > 0 and 0.8 * stalled <= busy <= 1.25 * stalled, \
        (busy, stalled, truth["block"], rec.stderr)


def start_loops(procs, staging, interp, *args):
    proc = procs.start(interp.argv(staging.script(interp, "asyncio_loops.py"), *args),
                       stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


# pysight's own CPU with 10,000 idle tasks at -r 100, as a share of one
# core: 0.8-1.0% measured (docs/BENCHMARKS.md, "asyncio tasks"), with room
# for a shared machine; the sweep's budgets hold it under about 1.5%
MANY_TASKS_CPU = 0.03


def test_wall_10000_idle_tasks(procs, staging, tmp_path):
    """10,000 idle tasks: a random share is read each time, said in the
    summary; each task still weighs about the recording's length, and
    pysight's CPU stays under the figure in BENCHMARKS."""
    interp = find_interp("3.14", "chroot")
    if not interp:
        pytest.skip("no Python 3.14 chroot")
    proc = start_loops(procs, staging, interp, "many", 60, 10000)
    out = tmp_path / "many.folded"
    rec = Recorder(procs, ["--asyncio", "--mode", "wall", "-p", proc.pid, "-d", 6, "-o", out])
    rec.wait_sampling()
    with CpuShare(rec.proc.pid) as cpu:
        time.sleep(5)
    assert rec.wait(60) == 0, rec.stderr
    assert "asyncio tasks sampled:" in rec.stderr, rec.stderr
    prof = Profile.load(out)
    idle = sum(c for frames, c in prof.stacks
               if frames[0].name == "[asyncio tasks]" and frames[-1].name == "[await: sleep]"
               and any(f.name == "idle" for f in frames))
    # microseconds over 10,000 tasks: each about the 6 s recorded
    per_task = idle / 1e6 / 10000
    assert 6 * 0.75 <= per_task <= 6 * 1.25, (per_task, rec.stderr)
    assert cpu.share <= MANY_TASKS_CPU, (cpu.share, rec.stderr)
    # the tasks' reads have a budget of their own: the threads' sweep
    # keeps its rate (it fell to 2 ticks a second when they shared one)
    ticks = int(re.search(r"sampled sweep: (\d+) ticks", rec.stderr).group(1))
    assert ticks >= 0.6 * 100 * 6, rec.stderr


def test_two_loops(ainterp, procs, staging, tmp_path):
    """Two loops in two threads: each task on its own thread, under its
    own loop's tasks."""
    proc = start_loops(procs, staging, ainterp, "two", 60)
    prof, _ = record(procs, proc.pid, tmp_path / "two.folded", 2, "--mode", "wall",
                     "--threads")
    seen = set()
    for frames, _ in prof.stacks:
        names = [f.name for f in frames]
        workers = [n for n in names if n.startswith("[task worker-")]
        if names[0] != "[asyncio tasks]" or not workers:
            continue
        side = workers[0][len("[task worker-"):-1]
        other = {"north": "south", "south": "north"}[side]
        assert names[-4:] == [workers[0], "nap_" + side, "sleep", "[await: sleep]"], names
        assert "[task main-%s]" % side in names and "[task main-%s]" % other not in names, names
        # the folded label "thread TID (NAME)" reads as a frame named
        # "thread TID" in file NAME
        assert any(f.name.startswith("thread ") and f.file == side for f in frames), names
        seen.add(side)
    assert seen == {"north", "south"}, prof.top()
