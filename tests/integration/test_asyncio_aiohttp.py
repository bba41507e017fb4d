"""`--asyncio` on a real service from PyPI: aiohttp.web (aiohttp_service.py,
aiohttp from `make`'s .output/aiohttp/MINOR) under load from another
process.  Its tasks are aiohttp's: a task per connection, and one per
request that runs the handler, named Task-N and, from 3.12 on, started
eagerly (the handler's first step runs inside the connection task's)."""
import collections
import os
import shutil
import sys
import time

import pytest

from conftest import REPO, find_interp
from test_asyncio_profile import handler_shares, record
from test_dump_tasks import task_interpreters

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "aiohttp_service.py")
AIOHTTP = os.path.join(REPO, ".output", "aiohttp")


def pytest_generate_tests(metafunc):
    if "ainterp" in metafunc.fixturenames:
        interps = task_interpreters()
        metafunc.parametrize("ainterp", interps, ids=[i.id for i in interps])


def aiohttp_path(staging, interp):
    """Where interp finds aiohttp: make's directory for its minor, copied
    into its chroot's staging directory.  No wheels for the minor: skip."""
    src = os.path.join(AIOHTTP, interp.minor)
    if not os.path.isdir(src):
        pytest.skip("no aiohttp for Python %s in %s (`make .output/aiohttp/.done`; "
                    "PyPI may have no wheels for it)" % (interp.minor, AIOHTTP))
    if not interp.chroot:
        return src
    guest = staging.script(interp, "aiohttp-" + interp.minor)
    if not os.path.isdir(interp.host_path(guest)):
        shutil.copytree(src, interp.host_path(guest))
    return guest


def start_service(procs, staging, interp, seconds, clients=3, *loop):
    """The service (on uvloop's loop with loop "uvloop"), and once it
    listens (its port in RESULT.port), its load: clients keep-alive
    connections from the host's Python."""
    env = dict(os.environ, PYTHONPATH=aiohttp_path(staging, interp))
    result = staging.result_file(interp)
    server = procs.start(interp.argv(staging.script(interp, "aiohttp_service.py"), "serve",
                                     seconds, result, *loop), env=env)
    port_file = interp.host_path(result + ".port")
    deadline = time.monotonic() + 30
    while not os.path.exists(port_file):
        assert server.poll() is None, "aiohttp_service.py exited before it listened"
        assert time.monotonic() < deadline, "aiohttp_service.py never listened"
        time.sleep(0.05)
    with open(port_file) as f:
        port = f.read().split()[0]
    procs.start([sys.executable, WORKLOAD, "load", port, str(seconds), str(clients)])
    return server, result


def innermost_task(names):
    """The [task NAME] frame nearest the leaf, or None."""
    return next((n for n in reversed(names) if n.startswith("[task ")), None)


def test_cpu_request_tasks(ainterp, procs, staging, tmp_path):
    """cpu mode: `fast` burns the CPU, under its request's task (the
    handler names it "fast"), never under the event loop's frames.  A
    request's task lives 2 ms, and on 3.12+ often ends in its eager first
    step: BPF reads the running task and its name with the sample, from
    the thread state on 3.14+ and from _current_tasks before.  A task
    named as user space reads it later is another request's."""
    server, _ = start_service(procs, staging, ainterp, 8)
    prof, _ = record(procs, server.pid, tmp_path / "aiohttp.folded", 4)
    burn = prof.containing("burn")
    assert burn.total > 0.5 * prof.total, prof.top()
    # where fast's samples are, by the task they are under
    under = collections.Counter()
    for frames, count in burn.stacks:
        under[innermost_task([f.name for f in frames]) or "no task"] += count
    assert under == {"[task fast]": burn.total}, (under, burn.top(3))
    for frames, _ in burn.stacks:
        names = [f.name for f in frames]
        assert names[0].startswith("[task "), names
        assert "BaseEventLoop._run_once" not in names and "Handle._run" not in names, names
        # the request's task, then aiohttp's frames, then the handler
        i = names.index("[task fast]")
        assert names[i + 1] == "RequestHandler._handle_request", names
        assert names[-2:] == ["fast", "burn"], names


def test_wall_handler_causes(ainterp, procs, staging, tmp_path):
    """wall mode: each handler's shares of its time on the CPU, in
    asyncio.sleep and waiting for the lock match what it measured of
    itself, within 5 points."""
    server, result = start_service(procs, staging, ainterp, 7)
    prof, _ = record(procs, server.pid, tmp_path / "wall.folded", 4, "--mode", "wall")
    truth = staging.wait_result(ainterp, result, server, timeout=30)["handlers"]
    assert_shares(prof, truth)


@pytest.mark.parametrize("where", [("3.12", "pyenv"), ("3.14", "chroot")],
                         ids=["3.12", "3.14"])
def test_uvloop(where, procs, staging, tmp_path):
    """uvloop's event loop, in Cython, runs asyncio's own tasks: the same
    shares in wall mode, and fast's CPU under its task, with no Python
    loop frames below it at all."""
    interp = find_interp(*where)
    if not interp:
        pytest.skip("no Python %s (%s)" % where)
    server, result = start_service(procs, staging, interp, 7, 3, "uvloop")
    prof, _ = record(procs, server.pid, tmp_path / "uv.folded", 4, "--mode", "wall")
    truth = staging.wait_result(interp, result, server, timeout=30)["handlers"]
    assert_shares(prof, truth)
    burn = prof.select(lambda fr: fr[-1].name == "burn" and fr[0].name != "[asyncio tasks]")
    assert burn.total > 0, prof.top()
    for frames, _ in burn.stacks:
        names = [f.name for f in frames]
        assert innermost_task(names) == "[task fast]", names


def assert_shares(prof, truth):
    """Each handler's cpu, sleep and lock shares, within 5 points of its
    own measure; its awaits under its request's task."""
    for handler, t in truth.items():
        shares, total = handler_shares(prof, handler)
        assert total > 0, (handler, prof.top())
        # a handler's awaits are its request's task's
        for frames, _ in prof.containing(handler).stacks:
            names = [f.name for f in frames]
            if names[0] == "[asyncio tasks]":
                assert innermost_task(names) == "[task %s]" % handler, names
        for key in ("cpu", "sleep", "lock"):
            expect = 100.0 * t[key] / t["wall"]
            assert abs(shares.get(key, 0.0) - expect) <= 5.0, (handler, key, shares, expect, t)
