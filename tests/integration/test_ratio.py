"""Ground truth: a known CPU split among three functions, on every interpreter."""
import os

import pytest

from conftest import Profile, assert_recorded, pct, python_frames, run_pysight

RATE = 200          # Hz
SECONDS = 3.5       # CPU seconds of the workload
TOLERANCE = 5.0     # percentage points
LINE_SHARE = 80.0   # % of a function's leaf samples that must be on its hot line


def expected_names(interp):
    beta = "Beta.beta_work" if interp.minor_tuple >= (3, 11) else "beta_work"
    return {"alpha_work": "alpha_work", "beta_work": beta, "gamma_work": "gamma_work"}


@pytest.mark.all_interpreters
def test_ratio(interp, procs, staging, workdir, record_property):
    script = staging.script(interp, "ratio.py")
    result = staging.result_file(interp)
    out = os.path.join(workdir, "ratio.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", RATE, "--"]
                      + interp.argv(script, SECONDS, result), timeout=90)
    assert_recorded(run)
    truth = staging.read_result(interp, result)
    prof = Profile.load(out)
    names = expected_names(interp)
    lines = truth["lines"]
    measured = truth["seconds"]
    busy = sum(measured.values())

    # Names: every frame from ratio.py carries a name defined there, spelt
    # as this version spells it (Class.method from 3.11 on).
    allowed = {"<module>", "main", "marker_lines"} | set(names.values())
    wrong = sorted({fr.name for frames, _ in prof.stacks for fr in frames
                    if (fr.file or "").endswith("ratio.py") and fr.name not in allowed})
    assert not wrong, "%s: unexpected function names from ratio.py: %s (expected %s)\n%s" % (
        interp.id, wrong, sorted(allowed), prof.top())

    per_func = {key: prof.containing(name, "ratio.py") for key, name in names.items()}
    hot_total = sum(p.total for p in per_func.values())
    assert hot_total > 0, "%s: no sample in any of %s; profile:\n%s" % (
        interp.id, sorted(names.values()), prof.top())

    # Sample count: the three functions ran `busy` CPU seconds.
    expected = busy * RATE
    assert hot_total >= 0.8 * expected, (
        "%s: %d samples in the three functions, expected about %.0f (%.2f CPU s at %d Hz); "
        "fewer than 80%%" % (interp.id, hot_total, expected, busy, RATE))
    assert pct(hot_total, prof.total) >= 85.0, (
        "%s: only %.1f%% of the %d samples are in the three functions (startup is tiny); "
        "the rest:\n%s" % (interp.id, pct(hot_total, prof.total), prof.total,
                          prof.select(lambda f: not any(
                              fr.name in names.values() for fr in f)).top()))

    # Proportions against the workload's own thread_time measurement.
    report = []
    bad = []
    for key, name in names.items():
        got = pct(per_func[key].total, hot_total)
        want = pct(measured[key], busy)
        report.append("%s: profile %.1f%% (%d samples), thread_time %.1f%%"
                      % (name, got, per_func[key].total, want))
        if abs(got - want) > TOLERANCE:
            bad.append(name)
    assert not bad, "%s: share off by more than %.0f points for %s:\n  %s" % (
        interp.id, TOLERANCE, bad, "\n  ".join(report))

    for key, name in names.items():
        sub = per_func[key]
        # Whole stack: <module> -> main -> function, nothing else.
        exact = sub.select(lambda f: [fr.name for fr in python_frames(f)]
                           == ["<module>", "main", name])
        assert pct(exact.total, sub.total) >= 95.0, (
            "%s: only %d of %d samples in %s have the stack <module>;main;%s:\n%s"
            % (interp.id, exact.total, sub.total, name, name, sub.top()))
        # Leaf line: the one-line hot loop.
        hot_line = lines["hot_" + key.split("_")[0]]
        leaf = sub.with_leaf(name)
        on_line = leaf.select(lambda f: python_frames(f)[-1].line == hot_line)
        assert pct(on_line.total, leaf.total) >= LINE_SHARE, (
            "%s: %s leaf on its hot line ratio.py:%d in %.1f%% of %d samples (need %.0f%%):\n%s"
            % (interp.id, name, hot_line, pct(on_line.total, leaf.total), leaf.total,
               LINE_SHARE, leaf.top()))
        # Caller line: main() is at the call of this function.
        call_line = lines["call_" + key.split("_")[0]]
        at_call = exact.select(lambda f: python_frames(f)[1].line == call_line)
        assert pct(at_call.total, exact.total) >= LINE_SHARE, (
            "%s: main() shown at ratio.py:%d (the call of %s) in %.1f%% of %d samples:\n%s"
            % (interp.id, call_line, name, pct(at_call.total, exact.total), exact.total,
               exact.top()))

    print("%s: %s" % (interp.id, "; ".join(report)))
    record_property("ratio_minor", interp.minor)
    record_property("ratio_interp", interp.id)
