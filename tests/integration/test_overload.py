"""Overload: at 10 kHz with a ring buffer too small for it, drops are
counted and reported, the samples kept stay right, and nothing stalls:
two processes whose split is known, and a process of 50 busy threads."""
import os
import re
import time

from conftest import (INTERPRETERS, Profile, Recorder, cpu_s, find_interp, pct,
                      python_frames)
from test_formats import go_top

RATE = 10000
SECONDS = 4
NAMES = {"alpha_work": "alpha_work", "beta_work": "Beta.beta_work", "gamma_work": "gamma_work"}


def test_ring_buffer_overflow(procs, staging, workdir):
    """Samples lost in bursts between drains are not a fair share (what ran
    just after each poll is kept), so pysight slows the sampling down until
    the ring buffer keeps up, and says so; the shares stay right, and the
    pprof's CPU time too: its period is the rate as sampled, not -r."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    out = os.path.join(workdir, "over.folded")
    pb = os.path.join(workdir, "over.pb.gz")
    results = [staging.result_file(interp) for _ in range(2)]
    # 8 s, not 4: what is kept comes in bursts, one a drain (20 a second),
    # so a share's spread goes with the number of drains, not of samples;
    # over 3 s its worst seen was 8 points in about 20 runs
    secs = 2 * SECONDS
    workers = [procs.start(interp.argv(staging.script(interp, "ratio.py"), secs, r))
               for r in results]
    os.environ["PYSIGHT_RINGBUF_KB"] = "4"
    try:
        rec = Recorder(procs, ["-d", secs - 1, "-r", RATE, "-o", out, "-o", pb, "--group-by",
                               "process"] + [a for w in workers for a in ("-p", w.pid)])
    finally:
        del os.environ["PYSIGHT_RINGBUF_KB"]
    t0 = time.monotonic()
    rec.wait_sampling()
    cpu0 = sum(cpu_s(w.pid) for w in workers)
    assert rec.wait(30) == 0, rec.stderr
    cpu = sum(cpu_s(w.pid) for w in workers) - cpu0
    # the duration held: no stall behind the flood
    assert time.monotonic() - t0 < secs + 5, rec.stderr
    for w in workers:
        w.wait(30)
    m = re.search(r"lost (\d+) \(ring buffer full\)", rec.stderr)
    assert m and int(m.group(1)) > 0, "no drop was counted:\n%s" % rec.stderr
    slow = re.search(r"could not keep up: sampled at as little as (\d+)% of the rate, "
                     r"for ([\d.]+) s", rec.stderr)
    assert slow and int(slow.group(1)) < 80 and float(slow.group(2)) >= 1, rec.stderr
    prof = Profile.load(out)
    # what was kept is still right: each process's split against its own
    for w, r in zip(workers, results):
        truth = staging.read_result(interp, r)["seconds"]
        mine = prof.select(lambda f, pid=w.pid: f[0].name.endswith(" %d" % pid))
        work = {k: mine.containing(n, "ratio.py").total for k, n in NAMES.items()}
        assert sum(work.values()) > 500, (work, rec.stderr)
        for k in NAMES:
            got, want = pct(work[k], sum(work.values())), pct(truth[k], sum(truth.values()))
            assert abs(got - want) < 6, (w.pid, k, got, want, work)
    # go tool pprof's total: samples times the period it states
    top = go_top(pb)
    m = re.search(r"of ([\d.]+)(ms|s) total", top)
    total = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    print("pprof says %.2f CPU s, the workers used %.2f s" % (total, cpu))
    assert abs(total - cpu) <= 0.15 * cpu, ("pprof says %.2f CPU s, the workers used %.2f s"
                                            % (total, cpu), top[:600], rec.stderr)



THREAD_ROOT = re.compile(r"^thread (\d+)$")


def test_many_threads_overflow(procs, staging, workdir):
    """50 busy threads at 10 kHz through a ring buffer too small for
    them: drops counted, the rate lowered and said, no stall, and every
    sample kept on one of the workload's own threads, in its spin loop, on
    its hot line; nearly every thread is seen."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    out = os.path.join(workdir, "threads.folded")
    result = staging.result_file(interp)
    spinners = procs.start(interp.argv(staging.script(interp, "threads50.py"), SECONDS + 1,
                                       result, 50))
    os.environ["PYSIGHT_RINGBUF_KB"] = "4"
    try:
        rec = Recorder(procs, ["-d", SECONDS - 1, "-r", RATE, "-o", out, "--threads",
                               "-p", spinners.pid])
    finally:
        del os.environ["PYSIGHT_RINGBUF_KB"]
    t0 = time.monotonic()
    rec.wait_sampling()
    assert rec.wait(30) == 0, rec.stderr
    assert time.monotonic() - t0 < SECONDS + 5, rec.stderr
    assert spinners.wait(30) == 0
    truth = staging.read_result(interp, result)
    m = re.search(r"lost (\d+) \(ring buffer full\)", rec.stderr)
    assert m and int(m.group(1)) > 0, "no drop was counted:\n%s" % rec.stderr
    assert re.search(r"could not keep up: sampled at as little as \d+% of the rate",
                     rec.stderr), rec.stderr

    prof = Profile.load(out)
    tids = {t["tid"] for t in truth["threads"]}
    spin = prof.containing("spin_worker", "threads50.py")
    assert spin.total >= 0.9 * prof.total, prof.top()
    seen = {}
    for frames, count in spin.stacks:
        root = THREAD_ROOT.match(frames[0].name)
        assert root, frames[0].name
        seen[int(root.group(1))] = seen.get(int(root.group(1)), 0) + count
    assert not set(seen) - tids, "samples on threads not the workload's: %s" % (
        sorted(set(seen) - tids))
    assert len(seen) >= 45, "spin_worker seen in %d of 50 threads: %s" % (
        len(seen), sorted(seen.values()))
    leaf = spin.with_leaf("spin_worker")
    hot = leaf.select(lambda f: python_frames(f)[-1].line == truth["hot_line"])
    print("%d samples kept, %d threads seen, %.1f%% on the hot line" % (
        prof.total, len(seen), pct(hot.total, leaf.total)))
    assert pct(hot.total, leaf.total) >= 80.0, leaf.top()
