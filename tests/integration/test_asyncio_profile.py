"""`--asyncio`: a sample of an asyncio program is its running task's stack,
the tasks awaiting it root first, in place of the event loop's frames.
A real line server (asyncio_service.py) under load from another
process."""
import os
import sys
import time

import pytest

from conftest import Profile, find_interp, run_pysight

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "asyncio_service.py")


def pytest_generate_tests(metafunc):
    if "ainterp" in metafunc.fixturenames:
        interps = [i for i in (find_interp("3.14", "chroot"), find_interp("3.15", "chroot")) if i]
        metafunc.parametrize("ainterp", interps, ids=[i.id for i in interps])


def start_service(procs, staging, interp, seconds, clients):
    """The server, its port once it listens, and its load: clients
    connections from the host's Python."""
    result = staging.result_file(interp)
    server = procs.start(interp.argv(staging.script(interp, "asyncio_service.py"), "serve",
                                     seconds, result))
    port_file = interp.host_path(result + ".port")
    deadline = time.monotonic() + 30
    while not os.path.exists(port_file):
        assert server.poll() is None, "asyncio_service.py exited with %s" % server.returncode
        assert time.monotonic() < deadline, "asyncio_service.py never listened"
        time.sleep(0.05)
    with open(port_file) as f:
        port, tid = (int(x) for x in f.read().split())
    load = procs.start([sys.executable, WORKLOAD, "load", str(port), str(seconds), str(clients)])
    return server, result, load


def test_cpu_task_stacks(ainterp, procs, staging, tmp_path):
    """cpu mode: `fast` burns the CPU, under its connection's task."""
    server, _, _ = start_service(procs, staging, ainterp, 8, 3)
    out = tmp_path / "svc.folded"
    run = run_pysight(procs, ["record", "--asyncio", "-p", server.pid, "-d", "4",
                              "-o", out], timeout=60)
    assert run.returncode == 0, run.stderr
    prof = Profile.load(out)
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
    out = tmp_path / "tree.folded"
    run = run_pysight(procs, ["record", "--asyncio", "-p", proc.pid, "-d", "3", "-o", out],
                      timeout=60)
    assert run.returncode == 0, run.stderr
    prof = Profile.load(out)
    burn = prof.containing("spin")
    assert burn.total > 0.8 * prof.total, prof.top()
    for frames, _ in burn.stacks:
        names = [f.name for f in frames]
        assert names[:2] == ["[task main]", "main"], names
        i = names.index("[task child-2]")
        assert names[i + 1] == "child" and names[i + 2] == "[task grandchild-2]", names
        assert names[i + 3:] == ["grandchild", "spin"], names
