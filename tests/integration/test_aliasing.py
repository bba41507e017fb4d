"""Random sampling intervals: work whose cycle equals the period is not aliased."""
import os

from conftest import Profile, assert_recorded, find_interp, pct, run_pysight

RATE = 100          # Hz: a 10 ms period
SECONDS = 4


def phase_shares(procs, staging, workdir, interp, env, tag):
    script = staging.script(interp, "aliasing.py")
    result = staging.result_file(interp)
    out = os.path.join(workdir, "alias-%s.folded" % tag)
    run = run_pysight(procs, ["record", "-o", out, "-r", RATE, "--"]
                      + interp.argv(script, SECONDS, 1000.0 / RATE, result),
                      timeout=60, env=env)
    assert_recorded(run)
    truth = staging.read_result(interp, result)["seconds"]
    prof = Profile.load(out)
    a = prof.containing("phase_a", "aliasing.py").total
    b = prof.containing("phase_b", "aliasing.py").total
    # the floor follows the CPU the workload got: a loaded host gives it
    # less than SECONDS, and thread_time says how much
    busy = truth["phase_a"] + truth["phase_b"]
    assert a + b >= 0.8 * busy * RATE, "%s: only %d samples in the phases, which ran " \
        "%.2f CPU s at %d Hz:\n%s" % (tag, a + b, busy, RATE, prof.top())
    measured = pct(truth["phase_a"], truth["phase_a"] + truth["phase_b"])
    return pct(a, a + b), measured, a + b


def test_random_intervals_defeat_aliasing(procs, staging, workdir):
    interp = find_interp("3.11", "debian") or find_interp("3.11")
    assert interp, "no Python 3.11 to run the aliasing workload"
    # Control: with the period fixed the workload must alias, or this test
    # could not tell random intervals from fixed ones.
    fixed, _, n = phase_shares(procs, staging, workdir, interp, {"PYSIGHT_JITTER": "0"},
                               "fixed")
    assert abs(fixed - 50) >= 25, (
        "control: with a fixed 10 ms period phase_a got %.1f%% of %d samples; the "
        "workload should alias (far from 50%%)" % (fixed, n))
    got, measured, n = phase_shares(procs, staging, workdir, interp, None, "random")
    assert abs(got - measured) <= 10, (
        "with random intervals phase_a got %.1f%% of %d samples, thread_time says %.1f%%: "
        "the sampler is aliased with a workload whose cycle equals its period"
        % (got, n, measured))
