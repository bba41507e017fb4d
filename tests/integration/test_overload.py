"""Overload: at 10 kHz with a ring buffer too small for it, drops are
counted and reported, the samples kept stay right, and nothing stalls."""
import os
import re
import time

from conftest import INTERPRETERS, Profile, Recorder, find_interp, pct

RATE = 10000
SECONDS = 4
NAMES = {"alpha_work": "alpha_work", "beta_work": "Beta.beta_work", "gamma_work": "gamma_work"}


def test_ring_buffer_overflow(procs, staging, workdir):
    """Samples lost in bursts between drains are not a fair share (what ran
    just after each poll is kept), so pysight slows the sampling down until
    the ring buffer keeps up, and says so; the shares stay right."""
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    out = os.path.join(workdir, "over.folded")
    results = [staging.result_file(interp) for _ in range(2)]
    workers = [procs.start(interp.argv(staging.script(interp, "ratio.py"), SECONDS, r))
               for r in results]
    os.environ["PYSIGHT_RINGBUF_KB"] = "4"
    try:
        rec = Recorder(procs, ["-d", SECONDS - 1, "-r", RATE, "-o", out, "--group-by",
                               "process"] + [a for w in workers for a in ("-p", w.pid)])
    finally:
        del os.environ["PYSIGHT_RINGBUF_KB"]
    t0 = time.monotonic()
    rec.wait_sampling()
    assert rec.wait(30) == 0, rec.stderr
    # the duration held: no stall behind the flood
    assert time.monotonic() - t0 < SECONDS + 5, rec.stderr
    for w in workers:
        w.wait(30)
    m = re.search(r"lost (\d+) \(ring buffer full\)", rec.stderr)
    assert m and int(m.group(1)) > 0, "no drop was counted:\n%s" % rec.stderr
    slow = re.search(r"could not keep up: sampled at as little as (\d+)% of the rate, "
                     r"for ([\d.]+) s", rec.stderr)
    assert slow and int(slow.group(1)) < 50 and float(slow.group(2)) >= 1, rec.stderr
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
