"""The wall section: issue #27's targets for the sampled sweep
(--offcpu=sweep) beside the tracer (--offcpu=trace), py-spy --idle and
austin's wall mode, and no profiler.  Each part returns a JSON-able dict;
report.py writes the tables and checks the targets."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from . import common, profilers
from .common import log, summarize
from .sections import (SLOWDOWN_CONDS, _Sink, _bpf_window, _go, _kill, _pingpong_procs,
                       _prog_costs, _rotate, light_procs, offcpu_accuracy_run,
                       offcpu_slowdown, start_agent)

# pysight's options per condition.  --offcpu is always given, so that the
# figures mean the same before and after sweep becomes the default.
SWEEP = ["--mode", "wall", "--offcpu=sweep"]
TRACE = ["--mode", "wall", "--offcpu=trace"]

# (key, label, tool, pysight options) of the wall-mode profilers
WALL_CONDS = [
    ("sweep", "pysight --mode wall --offcpu=sweep", "pysight", SWEEP),
    ("trace", "pysight --mode wall --offcpu=trace", "pysight", TRACE),
    ("py-spy", "py-spy --idle", "py-spy", None),
    ("austin", "austin (wall mode, no -s)", "austin", None),
]
LABELS = {k: label for k, label, _, _ in WALL_CONDS}

# the ping-pongs, as sections.SLOWDOWN_CONDS: pysight host-wide on the C
# one (it is no target); every profiler -p the Python pair
PINGPONG_CONDS = {
    "c": [SLOWDOWN_CONDS["c"][0],
          ("cpu", "pysight --mode cpu, host-wide", ["--mode", "cpu"], "host"),
          ("sweep", "pysight --mode wall --offcpu=sweep, host-wide", SWEEP, "host"),
          ("trace", "pysight --mode wall --offcpu=trace, host-wide", TRACE, "host")],
    "py": [SLOWDOWN_CONDS["py"][0],
           ("cpu", "pysight --mode cpu -p it", ["--mode", "cpu"], "self"),
           ("sweep", "pysight --mode wall --offcpu=sweep -p it", SWEEP, "self"),
           ("trace", "pysight --mode wall --offcpu=trace -p it", TRACE, "self"),
           ("py-spy", "py-spy --idle -p it", "py-spy", "self"),
           ("austin", "austin (wall mode) -p it", "austin", "self")],
}

# programs that run on every switch or system call of the host
SWITCH_PROGS = ("pysight_switch", "pysight_sys_ex")
# task iterators run in pysight's read(): their time is in its own stime
# (pysight_sweep was counted as outside, twice, until 7 December)
ITER_PROGS = ("pysight_threads", "pysight_sweep")


def split_iter(costs, wall):
    """% of a core: the iterators' run time (in the process's CPU already)
    and the other programs' (in other tasks' context)."""
    inside = sum(c["run_time_ns"] for n, c in costs.items() if n in ITER_PROGS)
    outside = sum(c["run_time_ns"] for n, c in costs.items() if n not in ITER_PROGS)
    return 100 * inside / 1e9 / wall, 100 * outside / 1e9 / wall


# --------------------------------------------------------------------------
# Which programs run


PROGRAM_CONDS = [("default", "pysight record --mode wall (no --offcpu: the default)",
                  ["--mode", "wall"]),
                 ("sweep", "pysight record --mode wall --offcpu=sweep", SWEEP),
                 ("trace", "pysight record --mode wall --offcpu=trace", TRACE)]


def wall_programs(ctx, secs):
    """pysight host-wide in wall mode while a C pipe ping-pong switches
    and makes system calls: which of its programs are loaded and which
    ran.  bpf_stats must be on."""
    rows = []
    for key, label, extra in PROGRAM_CONDS:
        wl = _pingpong_procs(ctx, "c", secs + 30)
        try:
            _go([wl])
            w = _bpf_window(ctx, None, extra, secs, ctx.tag("progs-" + key), rate=100)
        finally:
            _kill([wl])
        costs, wall = w["progs"], w["wall"]
        ran = {n: c["run_cnt"] / wall for n, c in costs.items() if c["run_cnt"]}
        on_switch = sorted(n for n in ran if n.startswith(SWITCH_PROGS))
        rows.append({"cond": key, "label": label, "loaded": sorted(costs), "runs_per_s": ran,
                     "on_switch_or_sys_exit": on_switch})
        log("wall programs %s: loaded %s; on sched_switch/sys_exit: %s"
            % (key, ", ".join(sorted(costs)), ", ".join(on_switch) or "none"))
    return {"seconds": secs, "rows": rows}


# --------------------------------------------------------------------------
# Accuracy and per-thread totals on the 20/50/30 ms cycle


def wall_accuracy(ctx, rounds, seconds, rates):
    runs = []
    for rnd in range(rounds):
        for i, rate in enumerate(rates):
            for key, label, tool, extra in _rotate(WALL_CONDS, rnd + i):
                try:
                    r = offcpu_accuracy_run(ctx, tool, seconds, rate, extra=extra or (),
                                            threads=True)
                    r.update(cond=key, rate=rate, round=rnd)
                    runs.append(r)
                    log("wall accuracy %s %d Hz: error %.2f pp, worst thread %.2f%% off its "
                        "clock" % (key, rate, r["error_pp"] if r["error_pp"] is not None else -1,
                                   r["thread_err_pct"] if r["thread_err_pct"] is not None else -1))
                except Exception as e:
                    log("wall accuracy %s %d Hz FAILED: %s" % (key, rate, e))
                    runs.append({"cond": key, "rate": rate, "round": rnd, "error": str(e)})
    table = []
    for rate in rates:
        for key, label, _, _ in WALL_CONDS:
            rs = [r for r in runs if r["cond"] == key and r["rate"] == rate and "error" not in r]
            row = {"cond": key, "label": label, "rate": rate,
                   "error_pp": summarize([r["error_pp"] for r in rs]),
                   "thread_err_pct": summarize([r["thread_err_pct"] for r in rs]),
                   "total_over_truth": summarize([r["total_over_truth"] for r in rs])}
            for k in ("burn", "sleep", "lock"):
                row["share_" + k] = summarize([r["share"][k] for r in rs])
                row["truth_share_" + k] = summarize([r["truth_share"][k] for r in rs])
            table.append(row)
    return {"seconds": seconds, "rates": rates, "runs": runs, "table": table}


# --------------------------------------------------------------------------
# The sampler's cost with many threads


def _keeps_up(run, key, rate, nthreads, wall):
    """Share of the samples (py-spy, austin: one per thread a snapshot, over
    `wall` s from their start, attaching included) or of the ticks (the
    sweep) that the rate asks for; None if not known."""
    text = run.stderr
    if key == "sweep":
        s = profilers.parse_sweep_summary(text)
        secs = profilers.parse_pysight_summary(text).get("seconds")
        return (s["ticks"] / (rate * secs) if s.get("ticks") and secs else None), s
    if key == "py-spy":
        # raw counts: one per thread per snapshot (--idle keeps idle ones)
        n = sum(c for f in run.out_files for _, c, _ in profilers.load("py-spy", f))
        return n / (rate * wall * (nthreads + 1)), {"samples": n}
    if key == "austin":
        s = profilers.parse_austin_stderr(text)
        if s.get("samples") is None:
            return None, s
        return s["samples"] / (rate * wall * (nthreads + 1)), s
    return None, {}


def _cost_window(ctx, key, tool, extra, pid, nthreads, rate, secs, tag):
    """One profiler on the running process pid: its CPU (utime+stime of
    all its threads) and, for pysight, its programs' run time over `secs`.
    bpf_stats must be on."""
    out = "/dev/null" if tool == "austin" else None  # its wall file grows by the thread
    t_start = time.monotonic()
    run = profilers.attach(tool, [pid], rate, ctx.outdir, tag, extra=extra or (), wall=True,
                           out=out)
    progs = set()
    try:
        run.wait_ready(120)
        time.sleep(2.5)  # the first tick over all threads reads every stack once (~1 s in)
        if tool == "pysight":
            progs, _ = common.prog_ids_for(run.procs[0].pid)
        st0 = common.prog_stats(progs) if progs else {}
        c0, w0 = run.cpu_reading(), common.cpu_reading(pid)
        t0 = time.monotonic()
        time.sleep(secs)
        st1 = common.prog_stats(progs) if progs else {}
        c1, w1 = run.cpu_reading(), common.cpu_reading(pid)
        t1 = time.monotonic()
    finally:
        t_stop = time.monotonic()
        run.stop()
        # py-spy with 5,000 threads does not stop in a minute: SIGINT
        # again at 10 s, SIGKILL at 20 s
        ((rc, _),) = run.wait(10)
    wall = t1 - t0
    costs = _prog_costs(st0, st1)
    iter_pct, outside_pct = split_iter(costs, wall)
    d, dw = run.cpu_delta_ns(c0, c1), common.cpu_delta_ns(w0, w1)
    keep, detail = _keeps_up(run, key, rate, nthreads, time.monotonic() - run.t_start)
    res = {"cond": key, "wall": wall, "progs": costs,
           "process_cpu_pct": None if d is None else 100 * d / 1e9 / wall,
           # the iterator runs in pysight's read(), so its time is in the
           # process's; every other program runs in other tasks' context
           "bpf_outside_pct": outside_pct,
           "bpf_iter_pct": iter_pct,
           "workload_cpu_pct": None if dw is None else 100 * dw / 1e9 / wall,
           "keeps_up": keep, "detail": detail, "maxrss_kib": run.maxrss_kib,
           "rc": rc, "run_s": time.monotonic() - t_start, "stop_s": time.monotonic() - t_stop}
    if res["process_cpu_pct"] is not None:
        res["total_cpu_pct"] = res["process_cpu_pct"] + res["bpf_outside_pct"]
    return res


def _many_threads(ctx, mode, n, life):
    wl = common.start_ready([ctx.python, ctx.wl("many_threads.py"), life, n, mode], timeout=180)
    time.sleep(1.0)
    return wl


HOPELESS = 0.1  # kept up with less than this share: not run on more threads
ONE_ROUND = 5000  # this many threads take 90 s a round: the first round only


def wall_sampler_cost(ctx, rounds, secs, workloads, rate=100):
    """One process of N threads, blocked or sleeping 50 ms in a loop; each
    profiler in turn on the same process, at `rate`, bpf_stats on.  A
    profiler that kept up with under 10% of its samples is not run on
    more threads of that kind (py-spy with 5,000 threads writes nothing
    and must be killed); pysight's sweep always runs."""
    runs = []
    worst = {}  # (mode, cond) -> (threads, share kept up) below HOPELESS
    with common.BpfStats():
        for rnd in range(rounds):
            for mode, n in workloads:
                if rnd and n >= ONE_ROUND:
                    continue
                life = len(WALL_CONDS) * (secs + 30) + 120
                wl = _many_threads(ctx, mode, n, life)
                try:
                    for key, label, tool, extra in _rotate(WALL_CONDS, rnd):
                        tag = ctx.tag("cost-%s%d-%s" % (mode, n, key))
                        w = worst.get((mode, key))
                        if key != "sweep" and w and w[0] < n:
                            runs.append({"mode": mode, "threads": n, "cond": key, "round": rnd,
                                         "skipped": "kept up with %.0f%% at %d threads"
                                         % (100 * w[1], w[0])})
                            continue
                        try:
                            r = _cost_window(ctx, key, tool, extra, wl[0].pid, n, rate, secs, tag)
                        except Exception as e:
                            log("wall cost %s %d %s FAILED: %s" % (mode, n, key, e))
                            runs.append({"mode": mode, "threads": n, "cond": key, "round": rnd,
                                         "error": str(e)})
                            continue
                        r.update(mode=mode, threads=n, round=rnd)
                        runs.append(r)
                        if r["keeps_up"] is not None and r["keeps_up"] < HOPELESS:
                            worst.setdefault((mode, key), (n, r["keeps_up"]))
                        if r["rc"] == -9 or wl[0].poll() is not None:
                            # a tracer killed mid-snapshot may leave the
                            # threads stopped: the next profiler gets a new
                            # process
                            _kill([wl])
                            wl = _many_threads(ctx, mode, n, life)
                        log("wall cost %s %d threads, %s: process %.2f%% + BPF %.2f%% of a core "
                            "(iterator %.2f%%, in the process), keeps up %s"
                            % (mode, n, key, r["process_cpu_pct"] or -1, r["bpf_outside_pct"],
                               r["bpf_iter_pct"], "%.2f" % r["keeps_up"]
                               if r["keeps_up"] is not None else "n/a"))
                finally:
                    _kill([wl])
    return {"rate": rate, "seconds": secs, "runs": runs, "table": cost_table(runs, workloads)}


def cost_table(runs, workloads):
    """wall_sampler_cost's runs, each condition's figures summarized."""
    table = []
    for mode, n in workloads:
        for key, label, _, _ in WALL_CONDS:
            rs = [r for r in runs if r["mode"] == mode and r["threads"] == n and r["cond"] == key
                  and "error" not in r and "skipped" not in r]
            errs = [r.get("error") or "not run: " + r["skipped"] for r in runs
                    if r["mode"] == mode and r["threads"] == n and r["cond"] == key
                    and ("error" in r or "skipped" in r)]
            table.append({"mode": mode, "threads": n, "cond": key, "label": label,
                          "process_cpu_pct": summarize([r["process_cpu_pct"] for r in rs]),
                          "bpf_outside_pct": summarize([r["bpf_outside_pct"] for r in rs]),
                          "bpf_iter_pct": summarize([r["bpf_iter_pct"] for r in rs]),
                          "total_cpu_pct": summarize([r.get("total_cpu_pct") for r in rs]),
                          "keeps_up": summarize([r["keeps_up"] for r in rs]),
                          "tick_us": summarize([r["detail"].get("tick_us") for r in rs]),
                          "workload_cpu_pct": summarize([r["workload_cpu_pct"] for r in rs]),
                          "run_s": summarize([r["run_s"] for r in rs]),
                          "stop_s": summarize([r["stop_s"] for r in rs]),
                          "killed": sum(r["rc"] == -9 for r in rs),
                          "failed": errs[:1]})
    return table


# --------------------------------------------------------------------------
# --asyncio: the cost of reading tasks


ASYNC_CHROOT = "/var/cache/pysight/chroots/sid"   # python3.14 (make pythons)
ASYNC_ROWS = [("idle", 100), ("idle", 1000), ("idle", 10000), ("moving", 100),
              ("moving", 1000)]
ASYNC_CONDS = [("wall", "pysight --mode wall", ["--mode", "wall"]),
               ("asyncio", "pysight --mode wall --asyncio", ["--mode", "wall", "--asyncio"])]


def asyncio_cost(ctx, secs, workloads, rate=100, python=None):
    """One Python process of N tasks, idle or moving (many_tasks.py): 3.14
    in the sid chroot, or the host's python (before 3.14 tasks are read
    another way: asyncio's WeakSet, the edges rebuilt); pysight in wall
    mode with and without --asyncio on it at `rate`: its CPU and its
    programs' time, bpf_stats on."""
    if python:
        guest, argv = ctx.wl("many_tasks.py"), [python]
    else:
        if not os.path.exists(os.path.join(ASYNC_CHROOT, "usr/bin/python3.14")):
            return {"error": "no Python 3.14 chroot in %s" % ASYNC_CHROOT}
        guest, argv = "/tmp/pysight-bench-many_tasks.py", ["chroot", ASYNC_CHROOT, "python3.14"]
        shutil.copy(ctx.wl("many_tasks.py"), os.path.join(ASYNC_CHROOT, guest.lstrip("/")))
    runs = []
    try:
        with common.BpfStats():
            for mode, n in workloads:
                life = len(ASYNC_CONDS) * (secs + 20) + 60
                wl = common.start_ready(argv + [guest, life, n, mode], timeout=120)
                try:
                    for key, label, extra in ASYNC_CONDS:
                        tag = ctx.tag("async-%s%d-%s" % (mode, n, key))
                        r = _cost_window(ctx, "sweep", "pysight", extra, wl[0].pid, 1, rate,
                                         secs, tag)
                        r.update(cond=key, mode=mode, tasks=n, label=label)
                        r.pop("progs", None)
                        runs.append(r)
                        log("asyncio cost %s %d tasks, %s: process %.2f%% + BPF %.2f%% of a core"
                            % (mode, n, key, r["process_cpu_pct"] or -1, r["bpf_outside_pct"]))
                finally:
                    _kill([wl])
    finally:
        if not python:
            os.unlink(os.path.join(ASYNC_CHROOT, guest.lstrip("/")))
    return {"rate": rate, "seconds": secs, "runs": runs}


# --------------------------------------------------------------------------
# The agent in wall mode, host-wide


# --mode cpu beside them: what the agent costs before any off-CPU work
AGENT_CONDS = [("sweep", "pysight agent --mode wall --offcpu=sweep", SWEEP),
               ("trace", "pysight agent --mode wall --offcpu=trace", TRACE),
               ("cpu", "pysight agent --mode cpu", ["--mode", "cpu"])]


def wall_agent(ctx, nprocs, warm, secs):
    """pysight agent (19 Hz, its default) in wall mode host-wide over
    nprocs mostly idle Python processes: its CPU and its programs' run
    time outside it, bpf_stats on."""
    rows = []
    procs, sink = [], _Sink()
    tmp = tempfile.mkdtemp(prefix="pysight-bench-wall-agent-")
    try:
        log("wall agent: starting %d Python processes" % nprocs)
        procs += light_procs(ctx, nprocs, len(AGENT_CONDS) * (warm + secs + 30) + 120)
        with common.BpfStats():
            for key, label, extra in AGENT_CONDS:
                d = os.path.join(tmp, key)
                os.mkdir(d)
                agent = start_agent(sink, d, extra)
                try:
                    time.sleep(warm)  # every process found, code objects named
                    if agent.poll() is not None:
                        raise RuntimeError("agent exited: rc %s" % agent.returncode)
                    progs, _ = common.prog_ids_for(agent.pid)
                    st0, r0, t0 = common.prog_stats(progs), common.cpu_reading(agent.pid), \
                        time.monotonic()
                    time.sleep(secs)
                    st1, r1, t1 = common.prog_stats(progs), common.cpu_reading(agent.pid), \
                        time.monotonic()
                    rss = common.vm_hwm_kib(agent.pid)
                finally:
                    common.kill_group(agent, signal.SIGTERM)
                    try:
                        agent.wait(30)
                    except subprocess.TimeoutExpired:
                        common.kill_group(agent)
                        agent.wait(10)
                with open(os.path.join(d, "agent.log"), errors="replace") as f:
                    health = [ln.strip() for ln in f if "agent:" in ln and "samples" in ln]
                costs = _prog_costs(st0, st1)
                wall = t1 - t0
                dn = common.cpu_delta_ns(r0, r1)
                _, outside = split_iter(costs, t1 - t0)
                row = {"cond": key, "label": label, "wall": wall, "progs": costs,
                       "process_cpu_pct": None if dn is None else 100 * dn / 1e9 / wall,
                       "bpf_outside_pct": outside, "vm_hwm_kib": rss,
                       "last_health": health[-1] if health else None}
                if row["process_cpu_pct"] is not None:
                    row["total_cpu_pct"] = row["process_cpu_pct"] + row["bpf_outside_pct"]
                rows.append(row)
                log("wall agent %s: process %.2f%% + BPF %.2f%% of a core"
                    % (key, row["process_cpu_pct"] or -1, row["bpf_outside_pct"]))
    finally:
        common.kill_groups(procs)
        sink.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"processes": nprocs, "warm_s": warm, "seconds": secs, "rate_hz": 19, "rows": rows}


# --------------------------------------------------------------------------


def section_wall(ctx):
    """Issue #27's targets, one part after another; a part that fails is
    reported and the others still run."""
    q = ctx.quick
    if q:
        workloads = [("block", 10), ("block", 100), ("block", 1000), ("sleep", 100)]
    else:
        workloads = [("block", 10), ("block", 100), ("block", 1000), ("block", 5000),
                     ("sleep", 10), ("sleep", 100), ("sleep", 1000)]
    parts = (
        ("programs", lambda: _with_stats(wall_programs, ctx, 1.0)),
        # 15 rounds of the C one: 5 of 2 s spread -3% to +12% with no
        # profiler, too wide to tell 1%
        ("pingpong", lambda: offcpu_slowdown(ctx, 2 if q else max(5, ctx.args.rounds),
                                             1.5 if q else 2.0, PINGPONG_CONDS, "wall",
                                             c_rounds=0 if q else 15)),
        ("accuracy", lambda: wall_accuracy(ctx, 1 if q else 2, 2.0 if q else 4.0,
                                           [100, 200, 1000])),
        ("cost", lambda: wall_sampler_cost(ctx, 1 if q else 2, 1.5 if q else 2.5, workloads)),
        ("agent", lambda: wall_agent(ctx, ctx.args.procs, 8.0 if q else 15.0,
                                     12.0 if q else 30.0)),
        ("asyncio", lambda: asyncio_cost(ctx, 1.5 if q else 4.0, ASYNC_ROWS)),
        # 3.11: the host's, read through asyncio's WeakSet
        ("asyncio_311", lambda: asyncio_cost(ctx, 1.5 if q else 4.0, ASYNC_ROWS,
                                             python="/usr/bin/python3.11")),
    )
    res = {}
    for name, fn in parts:
        t0 = time.monotonic()
        try:
            res[name] = fn()
        except Exception as e:
            log("wall %s FAILED: %s" % (name, e))
            res[name] = {"error": str(e)}
        res[name]["elapsed_s"] = time.monotonic() - t0
        log("wall %s took %.0f s" % (name, time.monotonic() - t0))
    return res


def _with_stats(fn, *args):
    with common.BpfStats():
        return fn(*args)
