"""Off-CPU and wall-clock profiles (--mode wall|off): where blocked time
goes and why, checked against what the workloads measure themselves."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (INTERPRETERS, PYSIGHT, Profile, Recorder, assert_recorded, bpf_fd_ids,
                      blocking_interpreters, find_interp, run_pysight)

RATE = 200
# The design these checks run on: the default, the sampled sweep (issue
# #27), or the one PYSIGHT_TEST_OFFCPU names (trace: the whole file on the
# tracer).  Tests about one design pass its option themselves.
OFFCPU_DESIGN = os.environ.get("PYSIGHT_TEST_OFFCPU", "")
assert OFFCPU_DESIGN in ("", "sweep", "trace"), \
    "PYSIGHT_TEST_OFFCPU=%s: expected sweep or trace" % OFFCPU_DESIGN
OFFCPU = ["--offcpu=" + OFFCPU_DESIGN] if OFFCPU_DESIGN else []
ON_SWEEP = OFFCPU_DESIGN != "trace"
# what each design is chosen by: the sweep by nothing, it is the default
SWEEP = []
# the exact-interval tracer, for tests about it alone
TRACE = ["--offcpu=trace"]
CAUSES = {"[off-cpu: sleep]": "sleep", "[off-cpu: lock]": "lock", "[off-cpu: io]": "io",
          "[off-cpu: gil]": "gil", "[runqueue]": "runqueue", "[off-cpu: other]": "other"}


def pytest_generate_tests(metafunc):
    if "ointerp" in metafunc.fixturenames:
        interps = blocking_interpreters()
        metafunc.parametrize("ointerp", interps, ids=[i.id for i in interps])


def kind_of(frames):
    for f in frames:
        if f.name in CAUSES:
            return CAUSES[f.name]
    return "cpu"


def by_thread(prof):
    """{tid: {kind: seconds}} from a --threads profile in microseconds."""
    out = {}
    for frames, us in prof.stacks:
        m = re.match(r"^thread (\d+)$", frames[0].name)
        assert m, "not a --threads profile: %s" % frames[0].name
        k = out.setdefault(int(m.group(1)), {})
        kind = kind_of(frames)
        k[kind] = k.get(kind, 0.0) + us / 1e6
    return out


def function_kinds(prof, name):
    """{kind: seconds} of the stacks whose last Python frame is name."""
    out = {}
    for frames, us in prof.stacks:
        py = [f for f in frames if f.file is not None]
        if py and py[-1].name == name:
            out[kind_of(frames)] = out.get(kind_of(frames), 0.0) + us / 1e6
    return out


def record(procs, staging, workdir, interp, scenario, seconds, mode="wall", extra=()):
    script = staging.script(interp, "offcpu.py")
    result = staging.result_file(interp)
    out = os.path.join(workdir, "%s-%s.folded" % (scenario, mode))
    run = run_pysight(procs, ["record", "--mode", mode, "--threads", "-o", out, "-r", RATE]
                      + (OFFCPU if mode != "cpu" else []) + list(extra) + ["--"] + interp.argv(script, scenario, seconds, result),
                      timeout=120)
    assert_recorded(run)
    return Profile.load(out), staging.read_result(interp, result), run


def test_cycle_burn_sleep_lock(ointerp, procs, staging, workdir):
    """20 ms burning, 50 ms asleep, 30 ms on a lock: wall mode splits the
    thread's time that way, each under its own function and cause; cpu
    mode sees the burn alone and off mode nearly none of it."""
    prof, truth, run = record(procs, staging, workdir, ointerp, "cycle", 3)
    worker = [int(t) for t, v in truth["threads"].items() if v["name"] == "worker"][0]
    phases = truth["phases"]
    busy = sum(phases.values())
    burn = function_kinds(prof, "burn_phase")
    sleep = function_kinds(prof, "sleep_phase")
    lock = function_kinds(prof, "lock_phase")
    # the burn phase's wall time is on the CPU or waiting for one: a busy
    # host preempts it (133 ms of 758 once, with a core taken by another
    # job), and the workload's clock counts that wait too
    running = burn.get("cpu", 0) + burn.get("runqueue", 0)
    got = {"burn": running, "sleep": sleep.get("sleep", 0), "lock": lock.get("lock", 0)}
    total = sum(by_thread(prof)[worker].values())
    elapsed = truth["threads"][str(worker)]["elapsed"]
    report = ", ".join("%s %.1f%% (thread says %.1f%%)" % (k, 100 * got[k] / total,
                                                          100 * phases[k] / busy) for k in got)
    print("%s: worker %.3f s in the profile, ran %.3f s: %s" % (ointerp.id, total, elapsed,
                                                              report))
    # every microsecond of the worker's life is in the profile, once: on
    # or off the CPU (under two CPU hogs, -1.2% to +0.2% in 24 runs, 4 Dec)
    assert abs(total - elapsed) <= 0.02 * elapsed, \
        "%s: the worker's time in the profile is %.3f s, it ran %.3f s\n%s" % (
            ointerp.id, total, elapsed, prof.top(12))
    for k in got:
        assert abs(100 * got[k] / total - 100 * phases[k] / busy) <= 5, \
            "%s: %s\n%s" % (ointerp.id, report, prof.top(12))
    # the right cause under each function, nearly all of its time
    assert sleep.get("sleep", 0) >= 0.9 * sum(sleep.values()), sleep
    assert lock.get("lock", 0) >= 0.9 * sum(lock.values()), lock
    assert running >= 0.9 * sum(burn.values()), burn

    cpu, _, _ = record(procs, staging, workdir, ointerp, "cycle", 2, mode="cpu")
    burn_samples = cpu.with_leaf("burn_phase").total
    # a 1 s run of a fresh interpreter spends a share importing: 70%
    assert burn_samples >= 0.7 * cpu.total, "cpu mode: burn_phase %d of %d samples:\n%s" % (
        burn_samples, cpu.total, cpu.top())
    off, _, _ = record(procs, staging, workdir, ointerp, "cycle", 2, mode="off")
    off_burn = function_kinds(off, "burn_phase")
    off_total = sum(sum(k.values()) for k in by_thread(off).values())
    assert "cpu" not in off_burn, off_burn
    # burning, the worker is off the CPU only when a busy host preempts it
    # (0.29-0.32 s of the 2 s under two CPU hogs): that wait is off-CPU
    # time, the rest is not
    blocked = sum(v for k, v in off_burn.items() if k != "runqueue")
    assert blocked <= 0.05 * off_total, off_burn


def test_gil_contention(ointerp, procs, staging, workdir):
    """Two threads burning CPU on two CPUs: each is on the CPU, waiting
    for the GIL or, on a busy host, waiting for a CPU, and those add up
    to its wall time."""
    prof, truth, _ = record(procs, staging, workdir, ointerp, "gil", 3)
    threads = by_thread(prof)
    for tid, t in truth["threads"].items():
        kinds = threads.get(int(tid), {})
        total = sum(kinds.values())
        print("%s %s: elapsed %.3f s, thread_time %.3f s, profile %s" % (
            ointerp.id, t["name"], t["elapsed"], t["cpu"], kinds))
        # on the CPU, waiting for it or for the GIL: its whole life
        # (under two CPU hogs, -0.8% to +0.3% over 48 threads, 4 Dec 2026)
        assert abs(total - t["elapsed"]) <= 0.02 * t["elapsed"], \
            "%s: %.3f s in the profile of %.3f s" % (t["name"], total, t["elapsed"])
        assert abs(kinds.get("cpu", 0) - t["cpu"]) <= 0.05 * t["elapsed"], (t, kinds)
        # blocked, not runnable: the GIL.  (With a core taken by another
        # job, 0.7 s of the 1.6 s off the CPU was the run queue.)
        blocked = t["elapsed"] - t["cpu"] - kinds.get("runqueue", 0)
        assert kinds.get("gil", 0) >= 0.8 * blocked, (t, kinds)


def test_io_and_idle_asyncio(ointerp, procs, staging, workdir):
    prof, truth, _ = record(procs, staging, workdir, ointerp, "io", 2)
    reader = function_kinds(prof, "wait_data")
    assert reader.get("io", 0) >= 1.8, "recv on a socketpair: %s\n%s" % (reader, prof.top())
    # the idle loop waits in its selector (epoll)
    selector = {}
    for frames, us in prof.stacks:
        names = [f.name for f in frames]
        if "idle_loop" in " ".join(names) or any("select" in n for n in names):
            if any("EpollSelector.select" in n or n == "select" for n in names):
                k = kind_of(frames)
                selector[k] = selector.get(k, 0) + us / 1e6
    assert selector.get("io", 0) >= 1.8, "asyncio's selector: %s\n%s" % (selector, prof.top())


def test_runqueue(ointerp, procs, staging, workdir):
    """Three CPU-bound processes on one CPU: each waits to run about two
    thirds of the time, and the profile says how much by its own clocks.
    (The thread's own CPU clock is the truth: other work on that CPU, as
    when the suite runs beside other jobs, makes the wait longer; 75%
    once, against the 66.7 +- 8 this test used to hold it to.)"""
    prof, truth, _ = record(procs, staging, workdir, ointerp, "runqueue", 3)
    threads = by_thread(prof)
    for tid, t in truth["threads"].items():
        kinds = threads.get(int(tid), {})
        total = sum(kinds.values())
        share = 100 * kinds.get("runqueue", 0) / total if total else 0
        want = 100 * (1 - t["cpu"] / t["elapsed"])
        print("%s crowd %s: %s, runqueue %.1f%% (its clocks: %.1f%%)"
              % (ointerp.id, tid, kinds, share, want))
        assert want >= 60, "the crowd did not wait for the CPU: %r" % t
        assert abs(total - t["elapsed"]) <= 0.02 * t["elapsed"], (t, kinds)
        assert abs(share - want) <= 5, (t, kinds)


def test_blocked_whole_recording(ointerp, procs, staging, workdir):
    """A thread blocked in queue.get() from before the recording to after
    it never switches: it is there with its full time and its stack."""
    script = staging.script(ointerp, "offcpu.py")
    result = staging.result_file(ointerp)
    target = procs.start(ointerp.argv(script, "queue", 6, result), stdout=subprocess.PIPE,
                         text=True)
    assert target.stdout.readline().startswith("ready")
    time.sleep(0.5)
    out = os.path.join(workdir, "queue.folded")
    seconds = 3
    run = run_pysight(procs, ["record", "--mode", "wall", "--threads", "-o", out, "-r", RATE,
                              "-d", seconds, "-p", target.pid] + OFFCPU, timeout=60)
    assert_recorded(run)
    target.wait(timeout=30)
    prof = Profile.load(out)
    stacks = [(frames, us) for frames, us in prof.stacks
              if any(f.name == "wait_item" for f in frames)]
    assert stacks, prof.top()
    got = sum(us for _, us in stacks) / 1e6
    assert abs(got - seconds) <= 0.02 * seconds + 0.05, "%.3f s of %d:\n%s" % (
        got, seconds, prof.top())
    names = [f.name for f in stacks[0][0]]
    assert any(n.endswith("Queue.get") or n == "get" for n in names), names
    assert all(kind_of(f) == "lock" for f, _ in stacks), [kind_of(f) for f, _ in stacks]


def test_thread_states_do_not_leak(procs, staging, workdir):
    """About 10,000 short sleeps a second for 30 s, threads coming and
    going, under the tracer: the per-thread BPF states end where they
    started.  Those states and the intervals counted are the tracer's: the
    sweep keeps none in BPF (tests/unit/test_sweep.c checks that it forgets
    exited threads)."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    script = staging.script(interp, "offcpu.py")
    result = staging.result_file(interp)
    out = os.path.join(workdir, "churn.folded")
    seconds = int(os.environ.get("PYSIGHT_CHURN_SECONDS", "30"))
    run = run_pysight(procs, ["record", "-v", "--mode", "wall", "-o", out, "-r", 100]
                      + TRACE + ["--"] + interp.argv(script, "churn", seconds, result),
                      timeout=seconds + 60)
    assert_recorded(run)
    m = re.search(r"thread states (\d+)", run.stderr)
    intervals = re.search(r"(\d+) off-CPU intervals", run.stderr)
    assert m and intervals, run.stderr
    print("intervals %s, thread states left %s" % (intervals.group(1), m.group(1)))
    assert int(intervals.group(1)) >= 5000 * seconds, run.stderr
    assert int(m.group(1)) == 0, "per-thread states left after every thread exited:\n%s" % (
        run.stderr)


def test_gil_holder_only(ointerp, procs, staging, workdir):
    """--gil keeps the on-CPU samples of the thread holding the GIL: a
    thread hashing in C with the GIL released is on a CPU, and drops out."""
    cpu, _, _ = record(procs, staging, workdir, ointerp, "nogil", 2, mode="cpu")
    gil, _, _ = record(procs, staging, workdir, ointerp, "nogil", 2, mode="cpu",
                       extra=["--gil"])
    def share(prof, name):
        return sum(c for f, c in prof.stacks if any(fr.name == name for fr in f))
    hashed, spun = share(cpu, "hash_loop"), share(cpu, "spin")
    assert hashed >= 100 and spun >= 100, "the workload did not run:\n%s" % cpu.top()
    print("%s: hash_loop %d -> %d, spin %d -> %d samples" % (
        ointerp.id, hashed, share(gil, "hash_loop"), spun, share(gil, "spin")))
    assert share(gil, "hash_loop") <= 0.1 * hashed, gil.top()
    assert share(gil, "spin") >= 0.7 * spun, gil.top()


def test_kernel_stacks(procs, staging, workdir):
    """--kernel-stacks puts the kernel's stack below the cause."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    prof, _, _ = record(procs, staging, workdir, interp, "cycle", 1,
                        extra=["--kernel-stacks"])
    sleeps = [(f, us) for f, us in prof.stacks if any(fr.name == "sleep_phase" for fr in f)
              and kind_of(f) == "sleep"]
    assert sleeps, prof.top()

    def kernel_of(f):
        names = [fr.name for fr in f]
        return names[names.index("[off-cpu: sleep]") + 1:]
    # every interval but the one still open at the end (its stack is read
    # from user space, without the kernel's) has the kernel's stack; in
    # the sweep, every stack read at a tick
    with_kernel = sum(us for f, us in sleeps if kernel_of(f))
    assert with_kernel >= 0.8 * sum(us for _, us in sleeps), prof.top()
    names = [fr.name for fr in max(sleeps, key=lambda s: s[1])[0]]
    kernel = kernel_of(max(sleeps, key=lambda s: s[1])[0])
    assert kernel and all(n.endswith("_[k]") for n in kernel), names
    # the tracer takes the stack in the scheduler; the sweep takes a
    # blocked task's (bpf_get_task_stack), which leaves out the
    # scheduler's __sched functions, so it ends where the sleep called in
    leaves = ("hrtimer_nanosleep_[k]", "do_nanosleep_[k]") if ON_SWEEP else (
        "__schedule_[k]", "schedule_[k]")
    assert any("nanosleep" in n for n in kernel) and kernel[-1] in leaves, kernel


@pytest.mark.all_interpreters
@pytest.mark.parametrize("batch", [None, "1"], ids=["whole-ring", "record-a-pass"])
def test_last_stack_named_after_exit(interp, batch, procs, staging, workdir):
    """A script ending in a sleep: the sleep's stack is read once its code
    objects are freed (the module's microseconds after the sleep, the
    function's as the interpreter ends).  BPF sends their bytes at their
    dealloc, and the frames are named from them: the last stack of a script
    was [unknown];[unknown] before.

    The module's EV_CODE can miss the pass over the ring that read the
    sample (a pass stops at a record BPF is still writing): CI saw
    [unknown];last_wait once.  PYSIGHT_RING_BATCH=1 ends every pass after one
    record, so that happens every time; the sample must wait for it."""
    out = os.path.join(workdir, "last.folded")
    run = run_pysight(procs, ["record", "-v", "--mode", "wall", "-o", out, "-r", RATE]
                      + OFFCPU + ["--"]
                      + interp.argv(staging.script(interp, "last_sleep.py"), 0.3), timeout=60,
                      env={"PYSIGHT_RING_BATCH": batch} if batch else None)
    assert_recorded(run)
    prof = Profile.load(out)
    sleeps = [(f, us) for f, us in prof.stacks if kind_of(f) == "sleep"]
    assert len(sleeps) == 1, prof.top()
    frames, us = sleeps[0]
    assert 0.297 <= us / 1e6 <= 0.33, prof.top()
    named = [(fr.name, os.path.basename(fr.file or ""), fr.line) for fr in frames
             if not fr.pseudo]
    assert named == [("<module>", "last_sleep.py", 23), ("last_wait", "last_sleep.py", 13)], (
        "%s\n%s" % (prof.top(), run.stderr[-600:]))


@pytest.mark.parametrize("how", ["exe", "shebang"])
def test_command_sampled_from_its_exec(how, procs, workdir):
    """record -- python: Debian's python3.11 (not position-independent)
    is made known to BPF before it runs, directly or through a script's
    "#!/usr/bin/env", so a sleep that starts with the program is there in
    full.  Found only after its exec, the process was still being looked
    at when the sleep began, and the sleep was lost."""
    interp = find_interp("3.11", "debian")
    if interp is None:
        pytest.skip("no Debian python3.11")
    code = "import time\ntime.sleep(0.5)\n"
    if how == "exe":
        argv = interp.argv("-I", "-S", "-c", code)
    else:
        script = os.path.join(workdir, "sleeper")
        with open(script, "w") as f:
            f.write("#!/usr/bin/env -S %s -I -S\n%s" % (interp.exe, code))
        os.chmod(script, 0o755)
        argv = [script]
    out = os.path.join(workdir, "first.folded")
    run = run_pysight(procs, ["record", "-v", "--mode", "wall", "-o", out, "-r", RATE]
                      + OFFCPU + ["--"] + argv, timeout=60)
    assert_recorded(run)
    assert "%s is Python 3.11, known before it runs" % interp.exe in run.stderr, \
        run.stderr[-2000:]
    prof = Profile.load(out)
    slept = sum(us for frames, us in prof.stacks if kind_of(frames) == "sleep") / 1e6
    assert 0.497 <= slept <= 0.52, "%.3f s of the 0.5 s sleep:\n%s\n%s" % (
        slept, prof.top(), run.stderr[-2000:])


def test_nested_walks_keep_their_own_stacks(procs, staging, workdir):
    """Walks of one thread's stack at 10 kHz, by perf samples and as it
    leaves the CPU every 0.4 ms, each keep their own frames: every stack
    of leaf() is <module>, 21 level() and leaf(), never one walk's frames
    spliced into another's. When the tracer took the stack at the syscall's
    exit, with interrupts on, a perf sample could interrupt that walk, and
    sharing one buffer per CPU gave 1 or 2 samples of 27 to 46 frames in
    each 4 s run. At the switch out interrupts are off, so a cpu-clock
    sample no longer nests; the walks there, and the checks that reuse the
    last one (same_stack()), still share the per-CPU buffers with the
    samples."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    out = os.path.join(workdir, "nested.folded")
    run = run_pysight(procs, ["record", "--mode", "wall", "-o", out, "-r", 10000] + TRACE
                      + ["--"]
                      + interp.argv(staging.script(interp, "nested_walk.py"), 4), timeout=60)
    assert_recorded(run)
    good, bad = 0, []
    for frames, us in Profile.load(out).stacks:
        names = [f.name for f in frames if f.file is not None]
        if "leaf" not in names:
            continue
        if names == ["<module>"] + ["level"] * 21 + ["leaf"]:
            good += 1
        else:
            bad.append(names)
    assert good and not bad, "%d stacks of leaf() of the wrong shape (%d right): %s" % (
        len(bad), good, [(len(b), b[:3]) for b in bad[:5]])


def test_reused_stack_follows_its_callers_lines(procs, staging, workdir):
    """The tracer reuses the stack of a thread's last switch out only
    when every frame is the same (offcpu.bpf.h, same_stack()). g() sleeps
    at one line, reached through two lines of f() and two of h(): its
    frame and f()'s come back at the same address with the same code and
    instruction, and only a caller's line tells the four stacks apart.
    Reused on the top frames alone, every sleep went to the first of
    them. Each must get a quarter of the sleep."""
    rounds = 100
    for interp in blocking_interpreters():
        script = staging.script(interp, "caller_lines.py")
        out = os.path.join(workdir, "callers-%s.folded" % interp.id)
        run = run_pysight(procs, ["record", "-v", "--mode", "wall", "-o", out, "-r", RATE]
                          + TRACE + ["--"] + interp.argv(script, rounds), timeout=60)
        assert_recorded(run)
        stacks = {}
        for frames, us in Profile.load(out).stacks:
            py = [f for f in frames if f.file is not None]
            if kind_of(frames) != "sleep" or not py or py[-1].name != "g":
                continue
            lines = tuple(f.line for f in py if f.name in ("h", "f"))
            stacks[lines] = stacks.get(lines, 0) + us / 1e6
        total = sum(stacks.values())
        print("%s: %s; %s" % (interp.id, {k: round(v / total, 3) for k, v in stacks.items()},
                              re.search(r"stacks as threads left.*reused", run.stderr).group(0)))
        assert len(stacks) == 4 and total >= 0.9 * rounds * 4 * 0.002, (stacks, run.stderr)
        assert all(0.18 <= v / total <= 0.32 for v in stacks.values()), stacks
        m = re.search(r"(\d+) reused", run.stderr)
        assert m and int(m.group(1)) >= rounds, run.stderr


def hooks_of(pid):
    """The tracepoints the BPF links pid holds are attached to, named by
    bpftool: its links are read from /proc, so other profilers on the
    host do not count."""
    names = set()
    for i in bpf_fd_ids(pid, "link_id"):
        out = subprocess.run(["bpftool", "link", "show", "id", str(i), "-j"],
                             capture_output=True, text=True)
        if out.returncode == 0:
            link = json.loads(out.stdout)
            names.add(link.get("tp_name") or link.get("type"))
    return names


@pytest.mark.parametrize("how", ["sweep", "trace"])
def test_sweep_attaches_nothing_to_switches(how, procs, workdir):
    """The sampled sweep runs nothing on sched_switch or sys_exit, so a
    context switch or a system call of any task costs nothing added (the
    tracing design's hooks alone cost a pipe ping-pong +9.6%).  The sweep
    is the default: no --offcpu option, so wall mode as users run it is
    what is checked.  The tracing design, listed the same way, shows
    sched_switch (the check sees it) but not sys_exit: attached, it set
    syscall tracing on every thread of the host, +116 ns a system call
    (issue #27)."""
    if shutil.which("bpftool") is None:
        pytest.skip("no bpftool")
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    out = os.path.join(workdir, "hooks.folded")
    args = SWEEP if how == "sweep" else TRACE
    rec = procs.start([PYSIGHT, "record", "--mode", "wall", "-o", out, "-d", "3"] + args
                      + ["--"] + interp.argv("-c", "import time; time.sleep(2.5)"),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hooks = set()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and rec.poll() is None:
        hooks |= hooks_of(rec.pid)
        if "sched_process_exec" in hooks:
            break
        time.sleep(0.1)
    _, err = rec.communicate(timeout=30)
    assert rec.returncode == 0, err
    assert "sched_process_exec" in hooks, "no links seen: %s" % hooks
    if how == "sweep":
        assert not hooks & {"sched_switch", "sys_exit"}, hooks
    else:
        assert "sched_switch" in hooks and "sys_exit" not in hooks, hooks


# The short-wait workload aims at 10,000 waits a second, each a 20 us
# sleep and the wake-up after it: it gets that when it wakes on an idle
# CPU.  On this 2-core host shared with three other jobs (load 6-9, CPU
# pressure 97%) the wake-up waited 70-270 us for a CPU and it made 2,800
# to 6,500 a second, alone or recorded.  Below this floor the workload no
# longer does what the test is about.
SHORT_WAITS_MIN = 2500


def test_short_blocks_keep_their_split(ointerp, procs, staging, workdir):
    """A thread that blocks 10,000 times a second for ~20 us, burning
    CPU in between: wall mode gives it its own on/off split, within 5
    points of its clocks (thread_time against perf_counter).  A sweep
    tick rarely sees one of these blocks, so their time must come from
    the scheduler's counts, not from ticks that catch the thread off."""
    if not ON_SWEEP:
        pytest.skip("the tracer keeps a wait under 1 ms with probability length/1 ms: "
                    "at 10,000 waits a second its split came out 8 points off "
                    "(on-CPU 65.9%, 74.2% by the thread's clocks, 7 Dec 2026)")
    prof, truth, _ = record(procs, staging, workdir, ointerp, "pingpong", 3)
    tid, t = [(int(k), v) for k, v in truth["threads"].items() if v["name"] == "blocker"][0]
    waits, switches = truth["phases"]["waits"], truth["phases"]["nvcsw"]
    kinds = by_thread(prof).get(tid, {})
    total = sum(kinds.values())
    on, clock_on = kinds.get("cpu", 0), t["cpu"]
    share, clock_share = 100 * on / max(total, 1e-9), 100 * clock_on / t["elapsed"]
    # where the sleeps went, by the last Python frame over them
    slept = {}
    for frames, us in prof.stacks:
        py = [f.name for f in frames if f.file is not None]
        if frames[0].name == "thread %d" % tid and kind_of(frames) == "sleep":
            slept[py[-1] if py else "-"] = slept.get(py[-1] if py else "-", 0) + us / 1e6
    print("%s: %d waits (%.0f a second, %.1f us off each), %d voluntary switches; "
          "profile %.3f s of %.3f s, on-CPU %.1f%% (thread says %.1f%%): %s; "
          "sleep under %s" % (
              ointerp.id, waits, waits / t["elapsed"],
              1e6 * (t["elapsed"] - clock_on) / max(waits, 1), switches, total,
              t["elapsed"], share, clock_share, kinds, slept))
    # each wait is a block of its own: a switch off the CPU
    assert switches >= 0.9 * waits and switches >= SHORT_WAITS_MIN * t["elapsed"], \
        "%d waits, %d voluntary switches in %.3f s" % (waits, switches, t["elapsed"])
    assert abs(share - clock_share) <= 5, \
        "%s: on-CPU %.1f%% in the profile, %.1f%% by the thread's clocks\n%s" % (
            ointerp.id, share, clock_share, prof.top(12))
    # all of its life, as test_cycle_burn_sleep_lock's worker: the sweep
    # counts it exactly (0.0-0.9% under in eight runs, for the end it
    # misses; 3.1% under once, sid 3.14 at load 9).  The tracer keeps a
    # wait under 1 ms with probability length/1 ms, as 1 ms: from T
    # seconds off it keeps N = T/1 ms, give or take sqrt(N), so three of
    # those are allowed on it too.  (It came out +2.1% to +6.9% over in
    # six runs, 1.1-1.9 s off, 7 Dec 2026: always over, which chance
    # does not do.)
    off = t["elapsed"] - clock_on
    allowed = 0.02 * t["elapsed"] + (0 if ON_SWEEP else 3 * (off * 1e-3) ** 0.5)
    assert abs(total - t["elapsed"]) <= allowed, \
        "%s: the blocker's time in the profile is %.3f s, it ran %.3f s\n%s" % (
            ointerp.id, total, t["elapsed"], prof.top(12))
    # every sleep is under the blocker's own code.  Not all of it under
    # short_wait: the sweep reads an off-CPU thread's stack from user
    # space after the tick's record, tens of microseconds later, and a
    # 20 us sleep is over by then, so the read finds the thread in pace()
    # or between the two (docs/DESIGN.md, "The sampled sweep").  A block
    # of a millisecond or more is read where it waits (the cycle test).
    own = {"short_wait", "pace", "pingpong.<locals>.blocker", "blocker"}
    assert slept and set(slept) <= own, \
        "%s: sleep by function %s" % (ointerp.id, slept)


# pysight's own CPU (user and system, the task iterator's included) over
# a 2,000-thread process at -r 100, the default: as a share of a core
# while it records (from "sampling" to the end of -d), and in seconds for
# the whole run, start and end included.  Measured 7 Dec 2026 (session
# 20, the sweep's duty a budget over time), -d 3, five runs, quiet and
# under three CPU hogs: 5-7% of a core while recording and 0.43-0.47 s
# of CPU in all.  Most of both is the first tick, which reads the stack
# of every blocked thread (0.2 s) and is left out of the duty; after it
# the sweep keeps under 1%.  (The first slice took 15% and 4.0 s, when a
# thread's first read walked the interpreter's thread list from its
# head.)  The limits leave 2x and 2.5x of that.
SWEEP_2000_CPU_LIMIT = 0.15
SWEEP_2000_TOTAL_CPU_LIMIT = 1.2
CROWD_SECONDS = 3


def cpu_seconds(pid):
    """utime + stime of a live process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_2000_threads(procs, staging, workdir):
    """2,000 threads, 1,990 of them waiting on an Event all along, 5
    burning, 5 sleeping 10 ms in a loop: every thread is in a --threads
    profile with the recording's length, the parked ones under their
    lock, and pysight's own CPU stays under a stated limit."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    script = staging.script(interp, "offcpu.py")
    result = staging.result_file(interp)
    target = procs.start(interp.argv(script, "crowd2000", 0, result), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().startswith("ready")
    out = os.path.join(workdir, "crowd.folded")
    err_path = os.path.join(workdir, "crowd.err")
    t0 = time.monotonic()
    with open(err_path, "w") as err:
        rec = procs.start([PYSIGHT, "record", "--mode", "wall", "--threads", "-o", out,
                           "-r", "100", "-d", str(CROWD_SECONDS), "-p", str(target.pid)]
                          + OFFCPU, stdout=subprocess.DEVNULL, stderr=err)
    # (when, CPU) at "sampling" and near the end of -d
    marks = []
    while True:
        pid, status, ru = os.wait4(rec.pid, os.WNOHANG)
        if pid:
            rec.returncode = os.waitstatus_to_exitcode(status)
            cpu = ru.ru_utime + ru.ru_stime
            break
        now = time.monotonic()
        if not marks:
            with open(err_path) as f:
                if "pysight: sampling" in f.read():
                    marks.append((now, cpu_seconds(rec.pid)))
        elif len(marks) == 1 and now >= marks[0][0] + CROWD_SECONDS - 0.3:
            marks.append((now, cpu_seconds(rec.pid)))
        assert now - t0 < 120, "pysight did not finish in 120 s"
        time.sleep(0.02)
    elapsed = time.monotonic() - t0
    with open(err_path) as f:
        stderr = f.read()
    target.stdin.write("\n")
    target.stdin.flush()
    assert target.wait(timeout=60) == 0
    truth = staging.read_result(interp, result)
    assert rec.returncode == 0 and len(marks) == 2, stderr
    how = re.search(r"(sampled sweep|off-CPU intervals).*", stderr)
    names = {int(k): v["name"] for k, v in truth["threads"].items()}
    assert len(names) == 2000, len(names)
    threads = by_thread(Profile.load(out))
    missing = [tid for tid in names if tid not in threads]
    totals = {tid: sum(threads[tid].values()) for tid in names if tid in threads}
    parked = sorted(totals[tid] for tid, n in names.items() if n == "parked" and tid in totals)
    others = sorted("%s %.3f" % (n, totals[tid]) for tid, n in names.items()
                    if n != "parked" and tid in totals)
    run_cpu = (marks[1][1] - marks[0][1]) / (marks[1][0] - marks[0][0])
    print("pysight: sampling after %.1f s and %.2f s of CPU, then %.0f%% of a core; %.2f s "
          "of CPU in all, %.1f s of wall time; %s\nparked: %d threads, %.4f-%.4f s "
          "(median %.4f s); others %s" % (
              marks[0][0] - t0, marks[0][1], 100 * run_cpu, cpu, elapsed,
              how.group(0) if how else "", len(parked), parked[0] if parked else 0,
              parked[-1] if parked else 0, parked[len(parked) // 2] if parked else 0,
              others))
    assert not missing, "%d of 2000 threads not in the profile: %s" % (len(missing),
                                                                       missing[:10])
    # every thread, there all along, has the recording's length: from the
    # first tick (or the intervals opened at the start) to the last.  As
    # test_blocked_whole_recording's: 2% and a pass over the threads (the
    # tracer's 2,000 came out 4.034-4.061 s of 4 s)
    wrong = {tid: round(v, 3) for tid, v in totals.items()
             if abs(v - CROWD_SECONDS) > 0.02 * CROWD_SECONDS + 0.05}
    assert not wrong, "%d threads with a total not %d s: %s" % (
        len(wrong), CROWD_SECONDS, sorted(wrong.items(), key=lambda kv: kv[1])[:3] +
        sorted(wrong.items(), key=lambda kv: kv[1])[-3:])
    # a parked thread is blocked on its lock, all of its time
    off_lock = [tid for tid, n in names.items()
                if n == "parked" and threads[tid].get("lock", 0) < 0.99 * totals[tid]]
    assert not off_lock, [(tid, threads[tid]) for tid in off_lock[:5]]
    assert run_cpu <= SWEEP_2000_CPU_LIMIT, "pysight took %.0f%% of a core" % (100 * run_cpu)
    assert cpu <= SWEEP_2000_TOTAL_CPU_LIMIT, \
        "pysight took %.2f s of CPU in all for %d s" % (cpu, CROWD_SECONDS)
