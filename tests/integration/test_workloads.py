"""Many threads, deep recursion, code objects freed and reused."""
import os
import re

import pytest

from conftest import Profile, assert_recorded, fmt_frame, pct, python_frames, run_pysight

RATE = 200


def record(procs, staging, workdir, interp, workload, seconds, extra=(), wrap=()):
    """Record the workload, run under the command wrap when given."""
    script = staging.script(interp, workload)
    result = staging.result_file(interp)
    out = os.path.join(workdir, workload.replace(".py", ".folded"))
    run = run_pysight(procs, ["record", "-o", out, "-r", RATE] + list(extra) + ["--"]
                      + list(wrap) + interp.argv(script, seconds, result), timeout=90)
    assert_recorded(run)
    return Profile.load(out), staging.read_result(interp, result)


THREAD_ROOT = re.compile(r"^thread (\d+)$")


def test_threads50(interp, procs, staging, workdir):
    prof, truth = record(procs, staging, workdir, interp, "threads50.py", 4, ["--threads"])
    tids = {t["tid"] for t in truth["threads"]}
    assert len(tids) == 50, "workload problem: %d distinct native ids" % len(tids)

    roots = {frames[0].name for frames, _ in prof.stacks}
    no_root = sorted(r for r in roots if not THREAD_ROOT.match(r))
    assert not no_root, "%s: with --threads every stack must start with 'thread TID (NAME)'; " \
        "found roots %s" % (interp.id, no_root[:5])

    spin = prof.containing("spin_worker", "threads50.py")
    seen = {}
    for frames, count in spin.stacks:
        tid = int(THREAD_ROOT.match(frames[0].name).group(1))
        seen[tid] = seen.get(tid, 0) + count
    strangers = sorted(set(seen) - tids)
    assert not strangers, "%s: spin_worker samples attributed to tids %s that are not the " \
        "workload's threads %s" % (interp.id, strangers, sorted(tids)[:5])
    print("%s: spin_worker samples in %d of 50 threads, %d samples" % (
        interp.id, len(seen), spin.total))
    assert len(seen) >= 45, "%s: spin_worker seen in %d of 50 threads (need >= 45); " \
        "samples per thread: %s" % (interp.id, len(seen), sorted(seen.values()))

    leaf = spin.with_leaf("spin_worker")
    hot = leaf.select(lambda f: python_frames(f)[-1].line == truth["hot_line"])
    assert pct(hot.total, leaf.total) >= 80.0, "%s: spin_worker leaf on line %d in only " \
        "%.1f%% of %d samples:\n%s" % (interp.id, truth["hot_line"],
                                        pct(hot.total, leaf.total), leaf.total, leaf.top())


def test_recursion_600(interp, procs, staging, workdir):
    seconds = 2.5
    prof, truth = record(procs, staging, workdir, interp, "recursion.py", seconds)
    depth, lines = truth["depth"], truth["lines"]
    leaf = prof.with_leaf("hot_leaf")
    assert leaf.total >= 0.8 * seconds * RATE, "%s: %d samples in hot_leaf, expected about " \
        "%.0f" % (interp.id, leaf.total, seconds * RATE)

    def full(frames):
        py = python_frames(frames)
        names = [f.name for f in py]
        return (names == ["<module>"] + ["recurse"] * depth + ["hot_leaf"]
                and all(f.line == lines["call_recurse"] for f in py[1:depth])
                and py[depth].line == lines["call_leaf"]
                and py[-1].line == lines["hot_leaf"])

    good = leaf.select(full)
    depths = sorted({sum(1 for f in frames if f.name == "recurse") for frames, _ in leaf.stacks})
    roots = sorted({frames[0].name for frames, _ in leaf.stacks})
    assert pct(good.total, leaf.total) >= 80.0, (
        "%s: only %d of %d hot_leaf samples show the whole stack <module>;recurse x%d;hot_leaf "
        "with the right lines; recurse depths seen %s, root frames %s"
        % (interp.id, good.total, leaf.total, depth, depths[-5:], roots[:5]))


MAX_FRAMES = 1024   # PYSIGHT_MAX_FRAMES in bpf/pysight.h


def test_recursion_truncated(interp, procs, staging, workdir):
    """Deeper than the frame limit: the leaf end is kept, the root is marked."""
    seconds = 2.0
    script = staging.script(interp, "recursion.py")
    result = staging.result_file(interp)
    out = os.path.join(workdir, "deep.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", RATE, "--"]
                      + interp.argv(script, seconds, result) + ["1500"], timeout=90)
    assert_recorded(run)
    prof, truth = Profile.load(out), staging.read_result(interp, result)
    assert truth["depth"] == 1500
    leaf = prof.with_leaf("hot_leaf")
    assert leaf.total >= 0.8 * seconds * RATE, "%s: %d samples in hot_leaf" % (
        interp.id, leaf.total)

    def truncated(frames):
        py = python_frames(frames)
        return (frames[0].name == "[truncated]" and len(py) == MAX_FRAMES
                and [f.name for f in py] == ["recurse"] * (MAX_FRAMES - 1) + ["hot_leaf"]
                and py[-1].line == truth["lines"]["hot_leaf"])

    good = leaf.select(truncated)
    roots = sorted({frames[0].name for frames, _ in leaf.stacks})
    assert pct(good.total, leaf.total) >= 95.0, (
        "%s: %d of %d hot_leaf samples are '[truncated]' + %d frames ending in hot_leaf; "
        "roots seen %s" % (interp.id, good.total, leaf.total, MAX_FRAMES, roots[:5]))


def test_exec_code_reuse(interp, procs, staging, workdir):
    seconds = 3.5
    prof, truth = record(procs, staging, workdir, interp, "exec_loop.py", seconds)
    measured, hot_lines = truth["seconds"], truth["hot_lines"]

    generated = sorted(n for n in prof.names() if n.startswith("fn_"))
    assert set(generated) <= {"fn_alpha", "fn_beta"}, (
        "%s: generated names that never ran (or are garbled) appear: %s"
        % (interp.id, [n for n in generated if n not in ("fn_alpha", "fn_beta")]))

    subs = {n: prof.with_leaf(n) for n in ("fn_alpha", "fn_beta")}
    total = sum(s.total for s in subs.values())
    busy = sum(measured.values())
    assert total >= 0.8 * busy * RATE, "%s: %d samples in the generated functions, " \
        "expected about %.0f; the profile:\n%s" % (interp.id, total, busy * RATE, prof.top(12))
    for name, sub in subs.items():
        got, want = pct(sub.total, total), pct(measured[name], busy)
        assert abs(got - want) <= 7.0, "%s: %s has %.1f%% of the samples, thread_time " \
            "says %.1f%% (tolerance 7 points)" % (interp.id, name, got, want)
        # file and line must belong to the same function as the name
        right = sub.select(lambda f: python_frames(f)[-1].line == hot_lines[name]
                           and (python_frames(f)[-1].file or "").endswith("<gen %s>" % name))
        assert pct(right.total, sub.total) >= 80.0, (
            "%s: only %.1f%% of %s samples read '%s (<gen %s>:%d)':\n%s"
            % (interp.id, pct(right.total, sub.total), name, name, name, hot_lines[name],
               sub.top()))


def test_same_name_other_lines(interp, procs, staging, workdir):
    """A recycled code object with the same name, file and first line but
    another line table must not be given the old table's lines."""
    seconds = 3.0
    script = staging.script(interp, "lines_reuse.py")
    result = staging.result_file(interp)
    out = os.path.join(workdir, "lines_reuse.folded")
    run = run_pysight(procs, ["record", "-o", out, "-r", RATE, "--"]
                      + interp.argv(script, seconds, result), timeout=90)
    assert_recorded(run)
    prof, truth = Profile.load(out), staging.read_result(interp, result)
    leaf = prof.with_leaf("fn")
    by_line = {}
    for frames, count in leaf.stacks:
        line = python_frames(frames)[-1].line
        by_line[line] = by_line.get(line, 0) + count
    busy = truth["seconds"]["A"] + truth["seconds"]["B"]
    assert leaf.total >= 0.7 * busy * RATE, "%s: %d samples in fn:\n%s" % (
        interp.id, leaf.total, prof.top())
    for variant, line in truth["hot"].items():
        got = pct(by_line.get(line, 0), leaf.total)
        want = pct(truth["seconds"][variant], busy)
        assert abs(got - want) <= 7.0, (
            "%s: fn on line %d (variant %s) has %.1f%% of the samples, thread_time says "
            "%.1f%%; lines seen %s" % (interp.id, line, variant, got, want, by_line))


def thread_roots(interp, prof, want):
    """The one root of each function of thread_names.py, which must have
    its thread's share of the samples."""
    roots = {}
    for fn in sorted(want):
        stacks = prof.containing(fn, "thread_names.py")
        # four threads share one GIL: a quarter of a CPU each
        assert stacks.total >= 0.5 * 3 * RATE / 4, "%s: %d samples of %s" % (
            interp.id, stacks.total, fn)
        got = {fmt_frame(frames[0]) for frames, _ in stacks.stacks}
        assert len(got) == 1, "%s: %s sampled under %s" % (interp.id, fn, sorted(got))
        roots[fn] = got.pop()
    return roots


@pytest.mark.all_interpreters
def test_python_thread_names(interp, procs, staging, workdir):
    """Threads carry the names Python gives them, as py-spy shows them: up
    to 3.13 the kernel calls every one "python3", and from 3.14 it keeps
    15 bytes of the name.  A long name, a non-ASCII one, a pool's and the
    main thread's, each on every sample of its thread."""
    prof, truth = record(procs, staging, workdir, interp, "thread_names.py", 3, ["--threads"])
    want = truth["threads"]
    assert want["in_pool"][1] == "pool_0" and want["in_main"][1] == "MainThread", want
    roots = thread_roots(interp, prof, want)
    for fn, (tid, name) in sorted(want.items()):
        assert roots[fn] == "thread %d (%s)" % (tid, name), "%s: %s sampled under %s" % (
            interp.id, fn, roots[fn])


NAMED_ROOT = re.compile(r"^thread (\d+) \((.*)\)$")


def test_python_thread_names_pid_namespace(interp, procs, staging, workdir):
    """The same names for a process in a PID namespace of its own (as in
    a container): its Threads know their native ids as the namespace
    numbers them, from 1, while the samples carry the host's tids.  Each
    root must be its thread's host tid with its Python name."""
    prof, truth = record(procs, staging, workdir, interp, "thread_names.py", 3, ["--threads"],
                         wrap=["unshare", "--pid", "--mount", "--fork"])
    want = truth["threads"]
    assert want["in_main"] == [1, "MainThread"], "not in a PID namespace: %s" % want
    roots = thread_roots(interp, prof, want)
    host = {}
    for fn, (ns_tid, name) in sorted(want.items()):
        m = NAMED_ROOT.match(roots[fn])
        assert m and m.group(2) == name and int(m.group(1)) != ns_tid, (
            "%s: %s (thread %d (%s) in its namespace) sampled under %s" % (
                interp.id, fn, ns_tid, name, roots[fn]))
        host[fn] = int(m.group(1))
    assert len(set(host.values())) == len(want), "%s: host tids %s" % (interp.id, host)
