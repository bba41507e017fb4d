"""`pysight dump --tasks`: the asyncio tasks of a running process, as a
tree of who awaits whom.  3.14+ from the .AsyncioDebug section, agreeing
with CPython's own `python3.14 -m asyncio pstree`; 3.11-3.13 from
asyncio's set of tasks, the edges rebuilt from what each task awaits."""
import json
import re
import subprocess

import pytest

from conftest import find_interp, run_pysight

# main -> gather(child-1..3) -> each awaits grandchild-N (asyncio_tree.py)
CHILDREN = {"child-%d" % n: "grandchild-%d" % n for n in (1, 2, 3)}
NAMES = {"main", "reporter"} | set(CHILDREN) | set(CHILDREN.values())


def sid314():
    interp = find_interp("3.14", "chroot")
    if not interp:
        pytest.skip("no Python 3.14 chroot")
    return interp


def task_interpreters():
    """One of each layout: 3.11 (a loop holder in the thread's dict), 3.12
    (the loop itself there), 3.13 (the loop in the thread state, a new
    TaskObj), 3.14 (.AsyncioDebug), 3.15 (another await slot, renumbered
    frame states)."""
    picks = (find_interp("3.11", "debian"), find_interp("3.12", "pyenv"),
             find_interp("3.13", "chroot") or find_interp("3.13", "pyenv"),
             find_interp("3.14", "chroot"), find_interp("3.15", "chroot"))
    return [i for i in picks if i]


def pytest_generate_tests(metafunc):
    if "tinterp" in metafunc.fixturenames:
        interps = task_interpreters()
        metafunc.parametrize("tinterp", interps, ids=[i.id for i in interps])


def start_tree(procs, staging, interp, seconds=60, *extra):
    """asyncio_tree.py in a mount namespace of its own, the chroot's /proc
    mounted there: pstree, run in the same namespace and chroot, reads
    /proc.  The mount goes with the namespace."""
    result = staging.result_file(interp)
    guest = interp.argv(staging.script(interp, "asyncio_tree.py"), seconds, result, *extra)
    if interp.chroot:
        guest = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"',
                 interp.chroot] + guest[2:]
    proc = procs.start(guest, stdout=subprocess.DEVNULL)
    return proc, staging.wait_result(interp, result, proc)


def pstree_edges(interp, pid):
    """{(awaiter name, awaited name)} and task names from CPython's pstree."""
    run = subprocess.run(["nsenter", "--mount=/proc/%d/ns/mnt" % pid, "chroot", interp.chroot,
                          interp.exe, "-m", "asyncio", "pstree", str(pid)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    edges, names, stack = set(), set(), []   # stack: (depth, task name)
    for line in run.stdout.splitlines():
        m = re.match(r"^([ │]*)[└├]── (\(T\) )?(.*)$", line)
        assert m, line
        depth = len(m.group(1)) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if m.group(2):
            name = m.group(3)
            names.add(name)
            if stack:
                edges.add((stack[-1][1], name))
            stack.append((depth, name))
    return edges, names


def test_dump_tasks_tree(tinterp, procs, staging):
    interp = tinterp
    proc, result = start_tree(procs, staging, interp)
    assert set(result["tasks"]) == NAMES - {"reporter"}, result

    run = run_pysight(procs, ["dump", "--tasks", "--json", "-p", proc.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    [p] = json.loads(run.stdout)["processes"]
    assert p["pid"] == proc.pid and p["python"] == interp.minor and not p["partial"], p
    tasks = {t["address"]: t for t in p["tasks"]}
    by_name = {t["name"]: t for t in tasks.values()}
    assert set(by_name) == NAMES and len(tasks) == len(NAMES), sorted(by_name)
    edges = {(tasks[a]["name"], t["name"]) for t in tasks.values() for a in t["awaited_by"]}
    want = {("main", c) for c in CHILDREN} | set(CHILDREN.items())
    assert edges == want, edges
    for t in tasks.values():
        assert t["thread"] == result["tid"] and t["state"] == "waiting", t
        assert t["status"] == "complete" and not t["awaited_by_cut"], t
    # coroutines leaf first, the awaited one named as the task awaits it
    frames = {n: [f["name"] for f in t["frames"]] for n, t in by_name.items()}
    assert frames["grandchild-1"] == ["sleep", "grandchild"], frames
    assert frames["grandchild-2"] == ["Event.wait", "grandchild"], frames
    assert frames["child-1"] == ["child"] and frames["main"] == ["main"], frames
    assert by_name["main"]["awaits"] == "_GatheringFuture", by_name["main"]
    assert by_name["child-1"]["awaits"] == "_asyncio.Task", by_name["child-1"]
    [line] = [f["line"] for f in by_name["grandchild-2"]["frames"] if f["name"] == "grandchild"]
    assert line > 0 and by_name["grandchild-2"]["frames"][1]["file"].endswith("asyncio_tree.py")

    # the same names and edges as CPython's own tool, where it has one
    if interp.chroot and interp.minor_tuple >= (3, 14):
        pedges, pnames = pstree_edges(interp, proc.pid)
        assert pnames == NAMES and pedges == want, (pnames, pedges)

    # the text: each task under the one it awaits, its frames below it
    run = run_pysight(procs, ["dump", "--tasks", "-p", proc.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("Process %d: " % proc.pid), lines[:3]
    assert lines[1:3] == ["Python %s" % interp.minor, "%d tasks" % len(NAMES)], lines[:3]
    assert 'Thread %d "MainThread"' % result["tid"] in lines, lines
    indent = {}
    for line in lines:
        m = re.match(r'^( *)Task "(.*)" \((.*)\)$', line)
        if m:
            indent[m.group(2)] = len(m.group(1))
            assert m.group(3).startswith("waiting on "), line
    assert indent["main"] == indent["reporter"] == 2, indent
    assert all(indent[c] == 4 and indent[g] == 6 for c, g in CHILDREN.items()), indent
    i = lines.index('      Task "grandchild-2" (waiting on _asyncio.Future)')
    assert lines[i + 1].lstrip().startswith("Event.wait (") and lines[i + 2].lstrip().startswith(
        "grandchild ("), lines[i:i + 3]
    assert proc.poll() is None


def assert_one_error(run, *words):
    assert run.returncode == 1 and run.stdout == "", (run.returncode, run.stdout)
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("pysight: "), run.stderr
    for w in words:
        assert w in run.stderr, run.stderr


def test_dump_tasks_refusals(procs, staging):
    """One clear line, never a crash: before 3.11, and before asyncio."""
    old = find_interp("3.10", "pyenv") or find_interp("3.9", "chroot")
    if old:
        proc, _ = start_tree(procs, staging, old)
        run = run_pysight(procs, ["dump", "--tasks", "-p", proc.pid], timeout=60)
        assert_one_error(run, str(proc.pid), "Python %s" % old.minor, "3.11")
    interp = sid314()
    plain = procs.start(interp.argv("-c", "import sys, time; print('ready', flush=True); "
                                    "assert '_asyncio' not in sys.modules; time.sleep(60)"),
                        stdout=subprocess.PIPE, text=True)
    assert plain.stdout.readline() == "ready\n"
    run = run_pysight(procs, ["dump", "--tasks", "-p", plain.pid], timeout=60)
    assert_one_error(run, str(plain.pid), "has not imported asyncio")
    run = run_pysight(procs, ["dump", "--tasks"], timeout=60)
    assert run.returncode == 2 and "-p" in run.stderr, run.stderr


@pytest.mark.parametrize("how", ["loop", "null", "stray"])
def test_dump_tasks_torn_list(procs, staging, how):
    """A task list that loops, ends without its head or strays into an
    object that is no task: the walk stops there, says the list is
    partial, and keeps the tasks it read before."""
    interp = sid314()
    result = staging.result_file(interp)
    proc = procs.start(interp.argv(staging.script(interp, "asyncio_torn.py"), how, 60, result),
                       stdout=subprocess.DEVNULL)
    assert staging.wait_result(interp, result, proc) == {"ready": how}
    run = run_pysight(procs, ["dump", "--tasks", "--json", "-p", proc.pid], timeout=30)
    assert run.returncode == 0, run.stderr
    [p] = json.loads(run.stdout)["processes"]
    names = [t["name"] for t in p["tasks"]]
    assert p["partial"] and p["why"], p
    # in list order, up to the broken link (t0's and t1's reads precede it)
    assert names == {"loop": ["t0", "t1", "t2"], "null": ["t0", "t1"],
                     "stray": ["t0", "t1"]}[how], (names, p["why"])
    assert all(t["state"] == "ready" for t in p["tasks"]), p["tasks"]
    run = run_pysight(procs, ["dump", "--tasks", "-p", proc.pid], timeout=30)
    assert run.returncode == 0 and "[partial: " in run.stdout, run.stdout
    assert proc.poll() is None


def test_dump_tasks_freed_coroutine(procs, staging):
    """A task whose coroutine was freed under the read (its memory
    unmapped since): that task is shown with no frame of its own, marked
    partial, the others in full."""
    interp = sid314()
    result = staging.result_file(interp)
    proc = procs.start(interp.argv(staging.script(interp, "asyncio_torn.py"), "freed", 60,
                                   result), stdout=subprocess.DEVNULL)
    assert staging.wait_result(interp, result, proc) == {"ready": "freed"}
    run = run_pysight(procs, ["dump", "--tasks", "--json", "-p", proc.pid], timeout=30)
    assert run.returncode == 0, run.stderr
    [p] = json.loads(run.stdout)["processes"]
    tasks = {t["name"]: t for t in p["tasks"]}
    assert sorted(tasks) == ["t0", "t1", "t2"] and not p["partial"], p
    assert tasks["t1"]["status"] == "frame read fault", tasks["t1"]
    assert [f["name"] for f in tasks["t1"]["frames"]] == ["[partial stack]"], tasks["t1"]
    for n in ("t0", "t2"):
        assert tasks[n]["status"] == "complete", tasks[n]
        assert [f["name"] for f in tasks[n]["frames"]] == ["sleeper"], tasks[n]
    run = run_pysight(procs, ["dump", "--tasks", "-p", proc.pid], timeout=30)
    assert run.returncode == 0 and 'Task "t1"' in run.stdout, run.stdout
    assert proc.poll() is None


@pytest.mark.parametrize("where", [("3.11", "debian"), ("3.13", "chroot")], ids=["3.11", "3.13"])
def test_dump_tasks_pytask(where, procs, staging):
    """asyncio's pure-Python tasks (_PyTask, every field an attribute): the
    same tree, under the C task asyncio.run starts.  (3.14+ lists only C
    tasks, as CPython's pstree does.)"""
    interp = find_interp(*where)
    if not interp:
        pytest.skip("no Python %s (%s)" % where)
    proc, result = start_tree(procs, staging, interp, 60, "pytask")
    run = run_pysight(procs, ["dump", "--tasks", "--json", "-p", proc.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    [p] = json.loads(run.stdout)["processes"]
    tasks = {t["address"]: t for t in p["tasks"]}
    by_name = {t["name"]: t for t in tasks.values()}
    assert set(by_name) == NAMES | {"Task-1"} and not p["partial"], sorted(by_name)
    edges = {(tasks[a]["name"], t["name"]) for t in tasks.values() for a in t["awaited_by"]}
    want = {("Task-1", "main")} | {("main", c) for c in CHILDREN} | set(CHILDREN.items())
    assert edges == want, edges
    assert by_name["child-1"]["awaits"] == "Task", by_name["child-1"]
    frames = {n: [f["name"] for f in t["frames"]] for n, t in by_name.items()}
    assert frames["grandchild-2"] == ["Event.wait", "grandchild"], frames
    assert all(t["thread"] == result["tid"] for t in tasks.values()), tasks
