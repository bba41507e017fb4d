"""The measurements of docs/BENCHMARKS.md, one function per section.  Each returns a JSON-able dict."""
import json
import os
import signal
import subprocess
import time

from . import common, profilers
from .common import WORKLOADS, TEST_WORKLOADS, log, summarize
from .profilers import TOOLS


class Ctx:
    def __init__(self, args, outdir):
        self.args = args
        self.python = args.python
        self.outdir = outdir
        self.quick = args.quick
        self.seq = 0

    def tag(self, name):
        self.seq += 1
        return "%04d-%s" % (self.seq, name)

    def wl(self, name):
        return os.path.join(WORKLOADS, name)


def _rotate(items, k):
    k %= len(items)
    return items[k:] + items[:k]


def _finish_profiler(run, timeout=60):
    if run is None:
        return
    run.wait(timeout)


# --------------------------------------------------------------------------
# Throughput runs (items 1 and 2a)


def throughput_run(ctx, tool, rate, threads, nproc, seconds, warmup, bpf=False):
    """nproc throughput.py processes with `threads` threads each; `tool` (or
    'none') attached.  Returns the workloads' rates and the profiler's cost."""
    argv = [ctx.python, ctx.wl("throughput.py"), seconds, threads, warmup]
    wls = [common.start_ready(argv, stdin=subprocess.PIPE) for _ in range(nproc)]
    pids = [p.pid for p, _ in wls]
    run = None
    res = {"tool": tool, "rate": rate, "threads": threads, "nproc": nproc}
    try:
        if tool != "none":
            run = profilers.attach(tool, pids, rate, ctx.outdir, ctx.tag("tp-%s-%s" % (tool, rate)))
            run.wait_ready()
        time.sleep(0.2)
        progs = {}
        counters_map = None
        if tool == "pysight" and bpf:
            progs, maps = common.prog_ids_for(run.procs[0].pid)
            st0 = common.prog_stats(progs)
        cpu0 = run.cpu_reading() if run else None
        t0 = time.monotonic()
        for p, _ in wls:
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = []
        for p, reader in wls:
            m = reader.wait_for(r'^(\{"units".*)$', seconds + 60)
            if not m:
                raise RuntimeError("throughput workload gave no result")
            outs.append(json.loads(m.group(1)))
        t1 = time.monotonic()
        cpu1 = run.cpu_reading() if run else None
        if progs:
            st1 = common.prog_stats(progs)
            on_cpu = [i for i in st1 if st1[i]["name"] == "pysight_on_cpu" and i in st0]
            res["bpf_run_time_ns"] = sum(st1[i]["run_time_ns"] - st0[i]["run_time_ns"] for i in on_cpu)
            res["bpf_run_cnt"] = sum(st1[i]["run_cnt"] - st0[i]["run_cnt"] for i in on_cpu)
            res["bpf_cpu"] = res["bpf_run_time_ns"] / 1e9 / (t1 - t0)
        for p, _ in wls:  # they wait for this to exit, so the readings above saw them alive
            p.stdin.write("exit\n")
            p.stdin.close()
        for p, _ in wls:
            p.wait(timeout=30)
        res["rates"] = [o["rate"] for o in outs]
        res["rate_total"] = sum(res["rates"])
        res["workload_cpu"] = sum(o["cpu"] for o in outs)
        # per CPU second of the target: less sensitive to other load on the
        # host; includes what runs in the target's context (BPF, page faults,
        # cache misses) but not the time py-spy keeps it stopped
        res["units_per_cpu_s"] = sum(o["units"] for o in outs) / res["workload_cpu"]
        if run:
            d = run.cpu_delta_ns(cpu0, cpu1)
            if d is not None:
                res["sampler_cpu"] = d / 1e9 / (t1 - t0)
            run.wait(30)
            res["sampler_cpu_total_s"] = run.cpu_total_s
            res["maxrss_kib"] = run.maxrss_kib
            res.update(_tool_summary(run))
    finally:
        for p, _ in wls:
            if p.poll() is None:
                common.kill_group(p)
                p.wait()
        if run:
            run.stop()
            run.wait(30)
    return res


def _tool_summary(run):
    text = run.stderr
    if run.tool == "pysight":
        s = profilers.parse_pysight_summary(text)
        return {"samples": s.get("samples"), "lost": s.get("lost"), "summary": s}
    if run.tool.startswith("py-spy"):
        # py-spy prints its "Samples: N Errors: N" only to a terminal
        vals = [profilers.parse_pyspy_stderr(r.text) for r in run.readers]
    else:
        vals = [profilers.parse_austin_stderr(r.text) for r in run.readers]
    written = sum(c for f in run.out_files for _, c, _ in profilers.load(run.tool, f))
    return {"samples": written, "errors": sum(v.get("errors", 0) for v in vals)}


def _slowdown_rounds(ctx, key, rounds, threads_list, nproc, rates, seconds, warmup, bpf):
    runs = []
    conds = [("none", 0)] + [(t, r) for r in rates for t in TOOLS]
    for rnd in range(rounds):
        for threads in threads_list:
            for tool, rate in _rotate(conds, rnd * 3 + threads):
                label = "%s %s round %d/%d: %s%s" % (key, "%d thr" % threads if nproc == 1 else
                                                     "%d procs" % nproc, rnd + 1, rounds, tool,
                                                     " %d Hz" % rate if rate else "")
                try:
                    res = throughput_run(ctx, tool, rate, threads, nproc, seconds, warmup, bpf)
                    res["round"] = rnd
                    runs.append(res)
                    log("%s: %.0f units/s%s" % (label, res["rate_total"],
                        ", sampler %.2f%% of a core" % (100 * res["sampler_cpu"])
                        if res.get("sampler_cpu") is not None else ""))
                except Exception as e:  # keep going: one bad run is not the benchmark
                    log("%s FAILED: %s" % (label, e))
                    runs.append({"tool": tool, "rate": rate, "threads": threads, "round": rnd,
                                 "nproc": nproc, "error": str(e)})
    return {"runs": runs, "table": _slowdown_table(runs, threads_list, rates)}


def _slowdown_table(runs, threads_list, rates):
    """Per (threads, tool, rate): throughput ratio to 'none' of the same round."""
    ok = [r for r in runs if "error" not in r]
    table = []
    for threads in threads_list:
        none = {r["round"]: r["rate_total"] for r in ok
                if r["threads"] == threads and r["tool"] == "none"}
        none_cpu = {r["round"]: r["units_per_cpu_s"] for r in ok
                    if r["threads"] == threads and r["tool"] == "none"}
        nvals = list(none.values())
        ncvals = list(none_cpu.values())
        table.append({"threads": threads, "tool": "none", "rate": 0,
                      "throughput": summarize(nvals),
                      # the spread of 'none' against its own median: the noise floor
                      "ratio": summarize([v / summarize(nvals)["median"] for v in nvals])
                      if nvals else None,
                      "cpu_ratio": summarize([v / summarize(ncvals)["median"] for v in ncvals])
                      if ncvals else None})
        for rate in rates:
            for tool in TOOLS:
                rs = [r for r in ok if r["threads"] == threads and r["tool"] == tool
                      and r["rate"] == rate]
                ratios = [r["rate_total"] / none[r["round"]] for r in rs if r["round"] in none]
                cratios = [r["units_per_cpu_s"] / none_cpu[r["round"]] for r in rs
                           if r["round"] in none_cpu]
                row = {"threads": threads, "tool": tool, "rate": rate,
                       "throughput": summarize([r["rate_total"] for r in rs]),
                       "ratio": summarize(ratios),
                       "slowdown_pct": summarize([100 * (1 - x) for x in ratios]),
                       "slowdown_cpu_pct": summarize([100 * (1 - x) for x in cratios]),
                       "sampler_cpu_pct": summarize([100 * r["sampler_cpu"] for r in rs
                                                     if r.get("sampler_cpu") is not None]),
                       "samples": summarize([r.get("samples") for r in rs])}
                if tool == "pysight":
                    bc = [100 * r["bpf_cpu"] for r in rs if r.get("bpf_cpu") is not None]
                    if bc:
                        row["bpf_cpu_pct"] = summarize(bc)
                        row["total_cpu_pct"] = summarize(
                            [100 * (r["sampler_cpu"] + r["bpf_cpu"]) for r in rs
                             if r.get("bpf_cpu") is not None and r.get("sampler_cpu") is not None])
                    row["lost"] = sum(r.get("lost") or 0 for r in rs)
                table.append(row)
    return table


def section_slowdown(ctx):
    a = ctx.args
    seconds = 2.5 if ctx.quick else a.seconds
    return _slowdown_rounds(ctx, "slowdown", a.rounds, [1, 8], 1, [100, 1000], seconds, 0.5, False)


def section_busy(ctx):
    """Both CPUs busy in Python: two single-threaded processes; every profiler
    covers both (py-spy and austin: one instance each).  bpf_stats on, so
    pysight's in-kernel time is counted too."""
    a = ctx.args
    seconds = 2.5 if ctx.quick else a.busy_seconds
    with common.BpfStats():
        return _slowdown_rounds(ctx, "busy", a.rounds, [1], 2, [100, 1000], seconds, 0.5, True)


# --------------------------------------------------------------------------
# Item 2: BPF cost per sample, sustainable rate


def _pysight_window(ctx, pids, rate, seconds, tag, hostwide=False):
    """pysight -p PIDS (or host-wide) at rate; bpf stats and the sample
    counter over `seconds` after it attached.  bpf_stats must be on."""
    run = profilers.attach("pysight", None if hostwide else pids, rate, ctx.outdir, tag)
    try:
        run.wait_ready()
        time.sleep(0.3)
        progs, maps = common.prog_ids_for(run.procs[0].pid)
        st = common.prog_stats(progs)
        maps = set(maps) | {m for p in st.values() for m in p["map_ids"]}
        counters = [m["id"] for m in common.map_info(maps) if m.get("name") == "counters"]
        on_cpu = [i for i in st if st[i]["name"] == "pysight_on_cpu"]
        s0 = common.percpu_value(counters[0], 0)
        c0 = common.cpu_ns(run.procs[0].pid)
        t0 = time.monotonic()
        time.sleep(seconds)
        st1 = common.prog_stats(progs)
        s1 = common.percpu_value(counters[0], 0)
        t1 = time.monotonic()
        c1 = common.cpu_ns(run.procs[0].pid)
        run.stop()
        run.wait(30)
        rt = sum(st1[i]["run_time_ns"] - st[i]["run_time_ns"] for i in on_cpu)
        cnt = sum(st1[i]["run_cnt"] - st[i]["run_cnt"] for i in on_cpu)
        summ = profilers.parse_pysight_summary(run.stderr)
        return {"run_time_ns": rt, "run_cnt": cnt, "samples": s1 - s0, "wall": t1 - t0,
                "ns_per_run": rt / cnt if cnt else None,
                "user_cpu": (c1 - c0) / 1e9 / (t1 - t0),
                "lost": summ.get("lost"), "status": summ.get("status"),
                "maxrss_kib": run.maxrss_kib}
    finally:
        run.stop()
        run.wait(30)


def _busy_procs(ctx, script, args, n=2):
    return [common.start_ready([ctx.python, ctx.wl(script)] + list(args)) for _ in range(n)]


def _kill(procs):
    for p, _ in procs:
        if p.poll() is None:
            common.kill_group(p)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def section_bpf_cost(ctx):
    secs = 1.5 if ctx.quick else 3.0
    reps = 1 if ctx.quick else 3
    rate = 1000
    res = {"rate": rate, "seconds": secs, "rows": []}
    with common.BpfStats():
        # 1. The early return: busy Python processes that are not the target.
        early = []
        for rep in range(reps):
            busy = _busy_procs(ctx, "fixed_depth.py", [secs + 30, 50])
            idle = common.start_ready([ctx.python, ctx.wl("light.py"), secs + 30, 0.1, 1000])
            try:
                w = _pysight_window(ctx, [idle[0].pid], rate, secs, ctx.tag("early"))
            finally:
                _kill(busy + [idle])
            early.append(w)
            log("bpf early return (-p of another pid): %.0f ns/run over %d runs"
                % (w["ns_per_run"] or 0, w["run_cnt"]))
        early_ns = summarize([w["ns_per_run"] for w in early])["median"]
        res["early_return"] = {"runs": early, "ns_per_run": summarize([w["ns_per_run"] for w in early])}
        # 2. Full samples at fixed depths, both CPUs busy with targets.
        cases = [("depth %d" % d, "fixed_depth.py", [secs + 30, d], False) for d in (5, 10, 50, 200)]
        cases.append(("depth 50, host-wide (no -p)", "fixed_depth.py", [secs + 30, 50], True))
        cases.append(("new stack every sample (many_stacks)", "many_stacks.py", [secs + 30], False))
        for name, script, wargs, hostwide in cases:
            ws = []
            for rep in range(reps):
                busy = _busy_procs(ctx, script, wargs)
                try:
                    w = _pysight_window(ctx, [p.pid for p, _ in busy], rate, secs,
                                        ctx.tag("bpf"), hostwide=hostwide)
                finally:
                    _kill(busy)
                others = max(0, w["run_cnt"] - w["samples"])
                w["ns_per_sample"] = ((w["run_time_ns"] - others * early_ns) / w["samples"]
                                      if w["samples"] else None)
                ws.append(w)
                log("bpf %s: %.0f ns/run, %.0f ns/sample (%d runs, %d samples)"
                    % (name, w["ns_per_run"] or 0, w["ns_per_sample"] or 0, w["run_cnt"],
                       w["samples"]))
            res["rows"].append({
                "case": name, "runs": ws,
                "ns_per_run": summarize([w["ns_per_run"] for w in ws]),
                "ns_per_sample": summarize([w["ns_per_sample"] for w in ws]),
                "run_cnt": summarize([w["run_cnt"] for w in ws]),
                "samples": summarize([w["samples"] for w in ws])})
    return res


def section_sustain(ctx):
    secs = 2.0 if ctx.quick else 4.0
    rates = [1000, 5000, 10000] if ctx.quick else [1000, 2000, 5000, 10000]
    res = {"seconds": secs, "rows": []}
    for name, script, wargs in (("depth 50", "fixed_depth.py", [secs + 30, 50]),
                                ("new stack every sample", "many_stacks.py", [secs + 30])):
        for rate in rates:
            busy = _busy_procs(ctx, script, wargs)
            pids = [p.pid for p, _ in busy]
            try:
                run = profilers.attach("pysight", pids, rate, ctx.outdir, ctx.tag("sustain"),
                                       duration=secs)
                t0 = run.wait_ready()
                c0 = sum(common.cpu_ns(p) or 0 for p in pids)
                run.wait(secs + 60)
                c1 = sum(common.cpu_ns(p) or 0 for p in pids)
                t1 = time.monotonic()
            finally:
                _kill(busy)
            s = profilers.parse_pysight_summary(run.stderr)
            # rate x CPU seconds the targets ran while pysight sampled
            busy = (c1 - c0) / 1e9 / (t1 - t0)
            expected = rate * busy * s.get("seconds", secs)
            row = {"workload": name, "rate": rate, "samples": s.get("samples"),
                   "expected": expected, "lost": s.get("lost"), "stacks": s.get("stacks"),
                   "status": s.get("status"), "maxrss_kib": run.maxrss_kib,
                   "sampler_cpu_s": run.cpu_total_s}
            try:
                with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
                    row["perf_event_max_sample_rate_after"] = int(f.read())
            except OSError:
                pass
            row["sustained"] = bool(s.get("samples") and s.get("lost") == 0
                                    and s["samples"] >= 0.9 * expected)
            res["rows"].append(row)
            log("sustain %s %d Hz: %s samples (expected %.0f), lost %s"
                % (name, rate, s.get("samples"), expected, s.get("lost")))
    return res


# --------------------------------------------------------------------------
# Item 3: accuracy


def _spec(workload, truth):
    """(hot keys -> short leaf name, hot line per key, complete(names) check)."""
    if workload == "ratio":
        keys = {"alpha_work": "alpha_work", "beta_work": "beta_work", "gamma_work": "gamma_work"}
        lines = {k: truth["lines"]["hot_" + k.split("_")[0]] for k in keys}

        def complete(names, key):
            return names == ["<module>", "main", keys[key]]
    elif workload == "threads50":
        keys = {k: k for k in ("group_a", "group_b", "group_c")}
        lines = dict(truth["lines"])

        def complete(names, key):
            return names == ["_bootstrap", "_bootstrap_inner", "run", key]
    else:
        keys = {k: k for k in ("deep_a", "deep_b", "deep_c")}
        lines = dict(truth["lines"])
        depth = truth["depth"]

        def complete(names, key):
            return (len(names) == depth and names[:2] == ["<module>", "main"]
                    and names[-1] == key and all(n == "dive" for n in names[2:-1]))
    return keys, lines, complete


def evaluate(stacks, workload, truth, tool_errors=0):
    keys, lines, complete = _spec(workload, truth)
    by_leaf = {v: k for k, v in keys.items()}
    hot = dict.fromkeys(keys, 0)
    on_line = dict.fromkeys(keys, 0)
    good = 0
    bad_other = 0
    total = 0
    for frames, count, _ in stacks:
        total += count
        bad = any(profilers.is_bad_frame(f) for f in frames)
        if not frames:
            bad_other += count
            continue
        leaf = profilers.short_name(frames[-1][0])
        key = by_leaf.get(leaf)
        if key is None:
            if bad:
                bad_other += count
            continue
        hot[key] += count
        if frames[-1][2] == lines[key]:
            on_line[key] += count
        if not bad and complete([profilers.short_name(f[0]) for f in frames], key):
            good += count
    busy = sum(truth["seconds"].values())
    nhot = sum(hot.values())
    shares = {k: (100.0 * hot[k] / nhot if nhot else None) for k in keys}
    want = {k: 100.0 * truth["seconds"][k] / busy for k in keys}
    errs = {k: (abs(shares[k] - want[k]) if shares[k] is not None else None) for k in keys}
    denom = nhot + bad_other + tool_errors
    return {"samples": total, "hot_samples": nhot, "share": shares, "truth": want,
            "error_pp": max(errs.values()) if nhot else None,
            "complete_pct": 100.0 * good / denom if denom else None,
            "leaf_line_pct": 100.0 * sum(on_line.values()) / nhot if nhot else None,
            "incomplete_or_error": denom - good}


def accuracy_run(ctx, tool, workload, seconds, rate):
    tag = ctx.tag("acc-%s-%s" % (workload, tool))
    result = os.path.join(ctx.outdir, tag + ".json")
    if workload == "ratio":
        cmd = [ctx.python, os.path.join(TEST_WORKLOADS, "ratio.py"), seconds, result]
    elif workload == "threads50":
        cmd = [ctx.python, ctx.wl("threads_ratio.py"), seconds, result, 50]
    else:
        # py-spy's blocking mode slows a 600-frame stack ~30x: stop at 5x
        cmd = [ctx.python, ctx.wl("deep_ratio.py"), seconds, result, ctx.args.deep, seconds * 5]
    cmd = [str(c) for c in cmd]
    out = os.path.join(ctx.outdir, tag + (".austin" if tool == "austin" else ".folded"))
    argv = [str(a) for a in profilers.launch_argv(tool, rate, out, cmd)]
    proc = common.start(argv, stderr=subprocess.PIPE, text=True, errors="replace")
    reader = common.LineReader(proc.stderr)
    t0 = time.monotonic()
    rc, ru = common.wait_rusage(proc, seconds * 8 + 60)
    wall = time.monotonic() - t0
    reader.join()
    if not os.path.exists(result):
        raise RuntimeError("%s: workload wrote no result (rc %s):\n%s" % (tool, rc, reader.text[-2000:]))
    with open(result) as f:
        truth = json.load(f)
    stacks = profilers.load(tool, out)
    extra = {}
    if tool == "pysight":
        s = profilers.parse_pysight_summary(reader.text)
        errors = s.get("lost") or 0
        extra = {"summary": s}
    elif tool.startswith("py-spy"):
        s = profilers.parse_pyspy_stderr(reader.text)
        errors = s.get("errors", 0)
        extra = s
    else:
        s = profilers.parse_austin_stderr(reader.text)
        errors = s.get("errors", 0)
        extra = s
    ev = evaluate(stacks, workload, truth, errors)
    ev.update(tool=tool, workload=workload, rc=rc, tool_errors=errors, tool_report=extra,
              wall_s=wall, cpu_s=sum(truth["seconds"].values()))
    return ev


def section_accuracy(ctx):
    seconds = 3.0 if ctx.quick else ctx.args.accuracy_seconds
    rounds = 1 if ctx.quick else ctx.args.accuracy_rounds
    rate = 1000
    runs = []
    for rnd in range(rounds):
        for workload in ("ratio", "threads50", "deep"):
            for tool in _rotate(list(TOOLS), rnd):
                try:
                    ev = accuracy_run(ctx, tool, workload, seconds, rate)
                    ev["round"] = rnd
                    runs.append(ev)
                    log("accuracy %s %s: error %.2f pp, complete %.2f%%, leaf line %.1f%%, "
                        "%d samples" % (workload, tool, ev["error_pp"] or -1,
                                        ev["complete_pct"] or -1, ev["leaf_line_pct"] or -1,
                                        ev["samples"]))
                except Exception as e:
                    log("accuracy %s %s FAILED: %s" % (workload, tool, e))
                    runs.append({"tool": tool, "workload": workload, "round": rnd, "error": str(e)})
    table = []
    for workload in ("ratio", "threads50", "deep"):
        for tool in TOOLS:
            rs = [r for r in runs if r["workload"] == workload and r["tool"] == tool
                  and "error" not in r]
            table.append({"workload": workload, "tool": tool,
                          "error_pp": summarize([r["error_pp"] for r in rs]),
                          "complete_pct": summarize([r["complete_pct"] for r in rs]),
                          "leaf_line_pct": summarize([r["leaf_line_pct"] for r in rs]),
                          "samples": summarize([r["samples"] for r in rs]),
                          "wall_per_cpu": summarize([r["wall_s"] / r["cpu_s"] for r in rs
                                                     if r.get("cpu_s")])})
    return {"rate": rate, "seconds": seconds, "deep": ctx.args.deep, "runs": runs, "table": table}


# --------------------------------------------------------------------------
# Item 4: scale


def _maps_of(pid):
    progs, maps = common.prog_ids_for(pid)
    st = common.prog_stats(progs)
    ids = set(maps) | {m for p in st.values() for m in p["map_ids"]}
    return common.map_info(ids)


def _map_report(infos, count=("procs", "tstates", "stacks_seen", "targets", "binaries")):
    rows = []
    for m in sorted(infos, key=lambda m: m.get("name", "")):
        row = {"name": m.get("name"), "type": m.get("type"), "max_entries": m.get("max_entries"),
               "bytes_memlock": m.get("bytes_memlock"), "key": m.get("bytes_key"),
               "value": m.get("bytes_value")}
        if m.get("name") in count:
            row["entries"] = common.map_entries(m["id"])
        rows.append(row)
    return rows


def scale_many_procs(ctx):
    n = 40 if ctx.quick else ctx.args.procs
    secs = 4.0 if ctx.quick else 8.0
    log("scale: starting %d Python processes" % n)
    procs = []
    try:
        for i in range(n):
            procs.append(common.start([ctx.python, ctx.wl("light.py"), 120, 1, 200],
                                      stdout=subprocess.PIPE, text=True))
        for p in procs:  # each prints "ready PID" once running
            p.stdout.readline()
        time.sleep(1.0)
        t0 = time.monotonic()
        run = profilers.attach("pysight", None, 100, ctx.outdir, ctx.tag("procs"), duration=secs)
        t_ready = run.wait_ready(60)
        counters = None
        t_first = None
        maps = None
        deadline = t0 + 30
        while time.monotonic() < deadline and t_first is None:
            if counters is None:
                infos = _maps_of(run.procs[0].pid)
                c = [m["id"] for m in infos if m.get("name") == "counters"]
                counters = c[0] if c else None
            if counters is not None and common.percpu_value(counters, 0) > 0:
                t_first = time.monotonic()
                break
            time.sleep(0.01)
        time.sleep(max(0.0, secs - 1.5 - (time.monotonic() - t_ready)))
        maps = _map_report(_maps_of(run.procs[0].pid))
        run.wait(secs + 60)
        s = profilers.parse_pysight_summary(run.stderr)
        return {"processes_started": n, "seconds": secs,
                "startup_to_attached_s": t_ready - t0,
                "startup_to_first_sample_s": (t_first - t0) if t_first else None,
                "python_processes_known": s.get("processes"), "samples": s.get("samples"),
                "stacks": s.get("stacks"), "maxrss_kib": run.maxrss_kib,
                "sampler_cpu_s": run.cpu_total_s, "maps": maps, "summary": s}
    finally:
        common.kill_groups(procs)


def _attached_run(ctx, tool, script, wargs, rate, secs, threads, check):
    """Every tool on a workload started by us; returns sampler cost and
    the completeness of its stacks by `check(names)`."""
    wl = common.start_ready([ctx.python, ctx.wl(script)] + list(wargs), timeout=120)
    try:
        t0 = time.monotonic()
        run = profilers.attach(tool, [wl[0].pid], rate, ctx.outdir, ctx.tag(script[:-3] + "-" + tool),
                               threads=threads)
        t_ready = run.wait_ready(60)
        c0 = run.cpu_reading()
        time.sleep(secs)
        c1 = run.cpu_reading()
        t1 = time.monotonic()
        run.stop()
        run.wait(60)
    finally:
        _kill([wl])
    stacks = []
    for f in run.out_files:
        stacks += profilers.load(tool, f)
    total = sum(c for _, c, _ in stacks)
    good = sum(c for frames, c, _ in stacks
               if not any(profilers.is_bad_frame(fr) for fr in frames)
               and check([profilers.short_name(fr[0]) for fr in frames]))
    summ = _tool_summary(run)
    row = {"tool": tool, "samples_written": total, "complete": good,
           "sampler_cpu_pct": (100 * run.cpu_delta_ns(c0, c1) / 1e9 / (t1 - t_ready)
                               if run.cpu_delta_ns(c0, c1) is not None else None),
           "maxrss_kib": run.maxrss_kib, "attach_s": t_ready - t0,
           "threads_seen": len({t for _, _, t in stacks if t})}
    row.update({k: v for k, v in summ.items() if k != "summary"})
    if tool == "pysight":
        s = summ["summary"]
        row["status"] = s.get("status")
        denom = s.get("samples") or 0
        row["complete_pct"] = 100.0 * (s.get("status") or {}).get("complete", 0) / denom if denom else None
        row["stacks"] = s.get("stacks")
    else:
        denom = total + (summ.get("errors") or 0)
        row["complete_pct"] = 100.0 * good / denom if denom else None
    return row


def scale_threads(ctx):
    n = 200 if ctx.quick else 500
    secs = 2.0 if ctx.quick else 4.0
    rows = []
    for tool in TOOLS:
        try:
            rows.append(_attached_run(ctx, tool, "many_threads.py", [secs + 40, n], 1000, secs, True,
                                      lambda names: names == ["_bootstrap", "_bootstrap_inner",
                                                              "run", "thread_spin"]))
            log("scale %d threads, %s: %s" % (n, tool, {k: rows[-1].get(k) for k in (
                "complete_pct", "threads_seen", "maxrss_kib", "sampler_cpu_pct")}))
        except Exception as e:
            log("scale threads %s FAILED: %s" % (tool, e))
            rows.append({"tool": tool, "error": str(e)})
    return {"threads": n, "rate": 1000, "seconds": secs, "rows": rows}


def scale_deep(ctx):
    depth = 500
    secs = 2.0 if ctx.quick else 4.0
    rows = []
    for tool in TOOLS:
        try:
            rows.append(_attached_run(ctx, tool, "fixed_depth.py", [secs + 40, depth], 1000, secs,
                                      False, lambda names: len(names) == depth
                                      and names[0] == "<module>" and names[-1] == "spin"))
            log("scale %d deep, %s: %s" % (depth, tool, {k: rows[-1].get(k) for k in (
                "complete_pct", "maxrss_kib", "sampler_cpu_pct")}))
        except Exception as e:
            log("scale deep %s FAILED: %s" % (tool, e))
            rows.append({"tool": tool, "error": str(e)})
    return {"depth": depth, "rate": 1000, "seconds": secs, "rows": rows}


def scale_stacks(ctx):
    rate = 5000
    secs = 3.0 if ctx.quick else ctx.args.stacks_seconds
    busy = _busy_procs(ctx, "many_stacks.py", [secs + 40])
    try:
        run = profilers.attach("pysight", [p.pid for p, _ in busy], rate, ctx.outdir,
                               ctx.tag("stacks"), duration=secs)
        run.wait_ready()
        hwm = []
        maps = None
        t0 = time.monotonic()
        while run.procs[0].poll() is None:
            v = common.vm_hwm_kib(run.procs[0].pid)
            if v:
                hwm.append(v)
            if maps is None and time.monotonic() - t0 > secs - 1.0:
                maps = _map_report(_maps_of(run.procs[0].pid))
            time.sleep(0.2)
        run.wait(120)
    finally:
        _kill(busy)
    s = profilers.parse_pysight_summary(run.stderr)
    return {"rate": rate, "seconds": secs, "distinct_stacks": s.get("stacks"),
            "samples": s.get("samples"), "lost": s.get("lost"), "maxrss_kib": run.maxrss_kib,
            "vmhwm_while_sampling_kib": max(hwm) if hwm else None,
            "sampler_cpu_s": run.cpu_total_s, "maps": maps, "summary": s}


def section_scale(ctx):
    res = {}
    for name, fn in (("many_procs", scale_many_procs), ("threads", scale_threads),
                     ("deep", scale_deep), ("stacks", scale_stacks)):
        try:
            res[name] = fn(ctx)
        except Exception as e:
            log("scale %s FAILED: %s" % (name, e))
            res[name] = {"error": str(e)}
    return res


# --------------------------------------------------------------------------
# Item 5: off-CPU tracing cost (--mode wall|off) and the cgroup filter

SWITCHER_SRC = os.path.join(WORKLOADS, "switcher.c")


def _switcher(ctx):
    """tools/bench_workloads/switcher.c, built once into the output dir."""
    exe = os.path.join(os.path.dirname(ctx.outdir), "switcher")
    if (not os.path.exists(exe)
            or os.path.getmtime(exe) < os.path.getmtime(SWITCHER_SRC)):
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-pthread", "-o", exe, SWITCHER_SRC],
                       check=True)
    return exe


def _empty_hooks(ctx):
    """Empty sched_switch and sys_exit programs and their loader
    (tools/bench_workloads/empty_hooks*.c), built once."""
    d = os.path.dirname(ctx.outdir)
    obj, exe = os.path.join(d, "empty_hooks.bpf.o"), os.path.join(d, "empty_hooks")
    arch = {"x86_64": "x86", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    if not os.path.exists(obj):
        subprocess.run(["clang", "-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_" + arch,
                        "-I" + os.path.join(common.REPO, "vmlinux", os.uname().machine), "-c",
                        os.path.join(WORKLOADS, "empty_hooks.bpf.c"), "-o", obj], check=True)
    src = os.path.join(WORKLOADS, "empty_hooks.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-Wall", "-o", exe, os.path.join(WORKLOADS, "empty_hooks.c"),
                        "-lbpf"], check=True)
    return exe, obj


def _empty_window(ctx, seconds):
    """The empty programs' run time over `seconds`.  bpf_stats must be on."""
    exe, obj = _empty_hooks(ctx)
    loader = common.start_ready([exe, obj], stdin=subprocess.PIPE)
    try:
        progs, _ = common.prog_ids_for(loader[0].pid)
        st0 = common.prog_stats(progs)
        t0 = time.monotonic()
        time.sleep(seconds)
        st1 = common.prog_stats(progs)
        t1 = time.monotonic()
    finally:
        _kill([loader])
    costs = _prog_costs(st0, st1)
    # named as pysight's, so that the tables read them in the same columns
    named = {("pysight_switch" if n.startswith("empty_switch") else "pysight_sys_exit"): c
             for n, c in costs.items()}
    total = sum(c["run_time_ns"] for c in costs.values())
    return {"wall": t1 - t0, "progs": named, "bpf_cpu_pct": 100.0 * total / 1e9 / (t1 - t0)}


def _prog_costs(st0, st1):
    """{prog name: {run_time_ns, run_cnt, ns_per_run}} between two
    prog_stats() readings; names summed (one program each per pysight)."""
    res = {}
    for i, p in st1.items():
        if i not in st0:
            continue
        r = res.setdefault(p["name"], {"run_time_ns": 0, "run_cnt": 0})
        r["run_time_ns"] += p["run_time_ns"] - st0[i]["run_time_ns"]
        r["run_cnt"] += p["run_cnt"] - st0[i]["run_cnt"]
    for r in res.values():
        r["ns_per_run"] = r["run_time_ns"] / r["run_cnt"] if r["run_cnt"] else None
    return res


def _prog(costs, prefix):
    """The program whose name starts with prefix (bpftool may cut names at
    15 characters: pysight_sys_exi)."""
    for name, c in costs.items():
        if name and name.startswith(prefix):
            return c
    return None


def _bpf_window(ctx, pids, extra, seconds, tag, rate=1000):
    """pysight (-p pids, or host-wide) at rate with extra options; run time
    and count of each of its programs over `seconds`.  bpf_stats must be
    on."""
    run = profilers.attach("pysight", pids, rate, ctx.outdir, tag, extra=extra)
    try:
        run.wait_ready()
        time.sleep(0.3)
        progs, _ = common.prog_ids_for(run.procs[0].pid)
        st0 = common.prog_stats(progs)
        t0 = time.monotonic()
        time.sleep(seconds)
        st1 = common.prog_stats(progs)
        t1 = time.monotonic()
    finally:
        run.stop()
        run.wait(30)
    costs = _prog_costs(st0, st1)
    wall = t1 - t0
    total = sum(c["run_time_ns"] for c in costs.values())
    return {"wall": wall, "progs": costs, "bpf_cpu_pct": 100.0 * total / 1e9 / wall,
            "summary": profilers.parse_pysight_summary(run.stderr)}


def _go(procs):
    for p, _ in procs:
        p.stdin.write("go\n")
        p.stdin.flush()


def _pingpong_procs(ctx, kind, seconds):
    # both sides on the last CPU: a cross-CPU hand-off's wake-up and idle
    # exit spread unpinned runs on this VM from -50% to +25% of their median
    cpu = os.cpu_count() - 1
    if kind == "c":
        argv = [_switcher(ctx), "pingpong", seconds, cpu]
    else:
        argv = [ctx.python, ctx.wl("queue_pingpong.py"), seconds, cpu]
    return common.start_ready(argv, stdin=subprocess.PIPE)


PER_SWITCH_CASES = [
    # (key, label, workload, how pysight is pointed)
    ("nonpy_p", "non-Python tasks: C pipe ping-pong, pysight -p another (idle) Python process",
     "c", "other"),
    ("nonpy_host", "non-Python tasks: C pipe ping-pong, pysight host-wide", "c", "host"),
    ("py_target", "Python threads: queue.Queue ping-pong, pysight -p it", "py", "self"),
    ("empty", "reference: empty programs on the same hooks, C pipe ping-pong", "c", "empty"),
]


def offcpu_per_switch(ctx, rounds, secs):
    """ns per run of the sched_switch program for switches of tasks that
    are not wanted (non-Python) and of Python threads that are."""
    runs = []
    with common.BpfStats():
        for rnd in range(rounds):
            for key, label, kind, how in _rotate(PER_SWITCH_CASES, rnd):
                wl = _pingpong_procs(ctx, kind, secs + 30)
                idle = None
                try:
                    if how == "other":
                        idle = common.start_ready([ctx.python, ctx.wl("light.py"), secs + 30,
                                                   0.1, 1000])
                        pids = [idle[0].pid]
                    else:
                        pids = None if how == "host" else [wl[0].pid]
                    _go([wl])
                    if how == "empty":
                        w = _empty_window(ctx, secs)
                    else:
                        w = _bpf_window(ctx, pids, ["--mode", "wall"], secs, ctx.tag("sw-" + key))
                finally:
                    _kill([wl] + ([idle] if idle else []))
                w.update(case=key, round=rnd)
                sw = _prog(w["progs"], "pysight_switch") or {}
                sx = _prog(w["progs"], "pysight_sys_ex") or {}
                log("offcpu per switch %s round %d: switch %.0f ns x %d/s, sys_exit %.0f ns x "
                    "%d/s" % (key, rnd + 1, sw.get("ns_per_run") or -1,
                              (sw.get("run_cnt") or 0) / w["wall"], sx.get("ns_per_run") or -1,
                              (sx.get("run_cnt") or 0) / w["wall"]))
                runs.append(w)
    table = []
    for key, label, _, _ in PER_SWITCH_CASES:
        ws = [w for w in runs if w["case"] == key]
        row = {"case": key, "label": label, "bpf_cpu_pct": summarize([w["bpf_cpu_pct"] for w in ws])}
        for prog, prefix in (("switch", "pysight_switch"), ("sys_exit", "pysight_sys_ex"),
                             ("on_cpu", "pysight_on_cpu")):
            cs = [(_prog(w["progs"], prefix), w["wall"]) for w in ws]
            row[prog + "_ns"] = summarize([c["ns_per_run"] for c, _ in cs if c])
            row[prog + "_per_s"] = summarize([c["run_cnt"] / wall for c, wall in cs if c])
        table.append(row)
    return {"seconds": secs, "runs": runs, "table": table}


SLOWDOWN_CONDS = {
    # workload -> [(condition key, label, pysight options, how it is pointed)]
    "c": [("none", "no profiler", None, None),
          ("cpu_host", "pysight --mode cpu, host-wide", ["--mode", "cpu"], "host"),
          ("wall_p", "pysight --mode wall -p another Python process", ["--mode", "wall"], "other"),
          ("wall_host", "pysight --mode wall, host-wide", ["--mode", "wall"], "host"),
          ("empty", "empty programs on the same two hooks (the floor)", "empty", None),
          ("empty_switch", "an empty sched_switch program alone", "empty", ["empty_switch"]),
          ("empty_sys_exit", "an empty sys_exit program alone", "empty", ["empty_sys_exit"])],
    "py": [("none", "no profiler", None, None),
           ("cpu_p", "pysight --mode cpu -p it", ["--mode", "cpu"], "self"),
           ("wall_p", "pysight --mode wall -p it", ["--mode", "wall"], "self"),
           ("off_p", "pysight --mode off -p it", ["--mode", "off"], "self")],
}


def _pingpong_run(ctx, kind, key, opts, how, secs):
    """One ping-pong run.  opts: None (no profiler), "empty" (the empty
    programs), "py-spy" or "austin" (in wall mode, -p it), else pysight's
    options, pointed as `how` says."""
    wl = _pingpong_procs(ctx, kind, secs)
    idle = run = loader = None
    try:
        if opts == "empty":
            exe, obj = _empty_hooks(ctx)
            loader = common.start_ready([exe, obj] + list(how or []), stdin=subprocess.PIPE)
            time.sleep(0.3)
        elif opts in ("py-spy", "austin"):
            run = profilers.attach(opts, [wl[0].pid], 100, ctx.outdir,
                                   ctx.tag("pp-%s-%s" % (kind, key)), wall=True)
            run.wait_ready()
            time.sleep(0.3)
        elif opts is not None:
            if how == "other":
                idle = common.start_ready([ctx.python, ctx.wl("light.py"), secs + 60, 0.1, 1000])
                pids = [idle[0].pid]
            else:
                pids = None if how == "host" else [wl[0].pid]
            run = profilers.attach("pysight", pids, 100, ctx.outdir,
                                   ctx.tag("pp-%s-%s" % (kind, key)), extra=opts)
            run.wait_ready()
            time.sleep(0.3)
        _go([wl])
        m = wl[1].wait_for(r'^(\{"round_trips".*)$', secs + 60)
        if not m:
            raise RuntimeError("ping-pong gave no result")
        out = json.loads(m.group(1))
    finally:
        if run:
            run.stop()
            run.wait(30)
        _kill([wl] + [p for p in (idle, loader) if p])
    return {"kind": kind, "cond": key, "rate": out["rate"], "round_trips": out["round_trips"]}


def offcpu_slowdown(ctx, rounds, secs, conds=None, what="offcpu", c_rounds=0):
    """Round trips per second of a pipe ping-pong (C) and a queue.Queue
    ping-pong (Python), with no profiler and with pysight in each mode
    (or `conds`, as SLOWDOWN_CONDS); the C one for c_rounds if more.
    bpf_stats off: it adds its own cost to every run."""
    conds = conds or SLOWDOWN_CONDS
    runs = []
    for rnd in range(max(rounds, c_rounds)):
        for kind in ("c", "py") if rnd < rounds else ("c",):
            for key, label, opts, how in _rotate(conds[kind], rnd):
                try:
                    r = _pingpong_run(ctx, kind, key, opts, how, secs)
                    r["round"] = rnd
                    runs.append(r)
                    log("%s slowdown %s round %d %s: %.0f round trips/s"
                        % (what, kind, rnd + 1, key, r["rate"]))
                except Exception as e:
                    log("%s slowdown %s %s FAILED: %s" % (what, kind, key, e))
                    runs.append({"kind": kind, "cond": key, "round": rnd, "error": str(e)})
    table = []
    for kind in ("c", "py"):
        ok = [r for r in runs if r["kind"] == kind and "error" not in r]
        none = {r["round"]: r["rate"] for r in ok if r["cond"] == "none"}
        nmed = summarize(list(none.values()))
        for key, label, _, _ in conds[kind]:
            rs = [r for r in ok if r["cond"] == key]
            if key == "none":
                sd = summarize([100 * (1 - v / nmed["median"]) for v in none.values()]) if nmed else None
            else:
                sd = summarize([100 * (1 - r["rate"] / none[r["round"]]) for r in rs
                                if r["round"] in none])
            table.append({"kind": kind, "cond": key, "label": label,
                          "rate": summarize([r["rate"] for r in rs]), "slowdown_pct": sd})
    return {"seconds": secs, "runs": runs, "table": table}


WALL_TOOLS = ["pysight", "py-spy", "py-spy-nb", "austin"]
WALL_LABELS = {"pysight": "pysight --mode wall", "py-spy": "py-spy --idle",
               "py-spy-nb": "py-spy --idle --nonblocking", "austin": "austin (wall mode)"}
PHASES = {"burn_phase": "burn", "sleep_phase": "sleep", "lock_phase": "lock"}


def offcpu_accuracy_run(ctx, tool, seconds, rate, extra=("--mode", "wall"), threads=False):
    """The cycle launched by `tool` in wall mode (pysight with `extra`).
    With threads, also each thread's time in the profile against its own
    clock (the threads the workload timed: its worker)."""
    tag = ctx.tag("wall-%s" % tool)
    result = os.path.join(ctx.outdir, tag + ".json")
    out = os.path.join(ctx.outdir, tag + (".austin" if tool == "austin" else ".folded"))
    cmd = [ctx.python, os.path.join(TEST_WORKLOADS, "offcpu.py"), "cycle", str(seconds), result]
    argv = profilers.launch_argv(tool, rate, out, cmd, wall=True, threads=threads,
                                 extra=extra if tool == "pysight" else ())
    proc = common.start([str(a) for a in argv], stderr=subprocess.PIPE, text=True,
                        errors="replace")
    reader = common.LineReader(proc.stderr)
    rc, _ = common.wait_rusage(proc, seconds * 8 + 60)
    reader.join()
    if not os.path.exists(result):
        raise RuntimeError("%s: workload wrote no result (rc %s):\n%s"
                           % (tool, rc, reader.text[-2000:]))
    with open(result) as f:
        doc = json.load(f)
    truth = doc["phases"]
    funcs, by_tid = profilers.wall_totals(tool, out, rate, PHASES)
    seen = {PHASES[fn]: v for fn, v in funcs.items()}
    per_thread = {}
    if threads:
        for tid, t in doc["threads"].items():
            got = by_tid.get(int(tid))
            per_thread[t["name"]] = {"clock_s": t["elapsed"], "seen_s": got,
                                     "seen_over_clock": got / t["elapsed"] if got else None}
    tsum, ssum = sum(truth.values()), sum(seen.values())
    share = {k: 100.0 * v / ssum if ssum else None for k, v in seen.items()}
    want = {k: 100.0 * v / tsum for k, v in truth.items()}
    errs = [abs(share[k] - want[k]) for k in truth if share[k] is not None]
    errs_t = [abs(100 * (v["seen_over_clock"] - 1)) if v["seen_over_clock"] else 100.0
              for v in per_thread.values()]
    return {"tool": tool, "rc": rc, "truth_s": truth, "seen_s": seen, "share": share,
            "threads": per_thread, "thread_err_pct": max(errs_t) if errs_t else None,
            "summary": profilers.parse_pysight_summary(reader.text) if tool == "pysight" else None,
            "truth_share": want, "error_pp": max(errs) if errs else None,
            "seen_over_truth": {k: seen[k] / truth[k] if truth[k] else None for k in truth},
            "total_over_truth": ssum / tsum if tsum else None}


def offcpu_accuracy(ctx, rounds, seconds, rate):
    runs = []
    for rnd in range(rounds):
        for tool in _rotate(list(WALL_TOOLS), rnd):
            try:
                r = offcpu_accuracy_run(ctx, tool, seconds, rate)
                r["round"] = rnd
                runs.append(r)
                log("offcpu accuracy %s: error %.2f pp, seen/truth burn %.2f sleep %.2f lock %.2f"
                    % (tool, r["error_pp"] if r["error_pp"] is not None else -1,
                       *[r["seen_over_truth"][k] or 0 for k in ("burn", "sleep", "lock")]))
            except Exception as e:
                log("offcpu accuracy %s FAILED: %s" % (tool, e))
                runs.append({"tool": tool, "round": rnd, "error": str(e)})
    table = []
    for tool in WALL_TOOLS:
        rs = [r for r in runs if r["tool"] == tool and "error" not in r]
        row = {"tool": tool, "error_pp": summarize([r["error_pp"] for r in rs]),
               "total_over_truth": summarize([r["total_over_truth"] for r in rs])}
        for k in ("burn", "sleep", "lock"):
            row["share_" + k] = summarize([r["share"][k] for r in rs])
            row["truth_share_" + k] = summarize([r["truth_share"][k] for r in rs])
            row["over_" + k] = summarize([r["seen_over_truth"][k] for r in rs])
        table.append(row)
    return {"seconds": seconds, "rate": rate, "runs": runs, "table": table}


def section_offcpu(ctx):
    """--mode wall|off: the sched_switch program's cost per switch, the
    slowdown of switch-heavy workloads, and wall-time accuracy."""
    q = ctx.quick
    res = {}
    for name, fn in (("per_switch", lambda: offcpu_per_switch(ctx, 1 if q else 3, 1.5 if q else 3.0)),
                     ("slowdown", lambda: offcpu_slowdown(ctx, 2 if q else max(5, ctx.args.rounds),
                                                          1.5 if q else 3.0)),
                     ("accuracy", lambda: offcpu_accuracy(ctx, 1 if q else 3, 2.0 if q else 4.0,
                                                          1000))):
        try:
            res[name] = fn()
        except Exception as e:
            log("offcpu %s FAILED: %s" % (name, e))
            res[name] = {"error": str(e)}
    return res


def _cgroup2_mount():
    """Where cgroup v2 is mounted: /sys/fs/cgroup, or .../unified on a
    hybrid host."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split()[:1] == ["cgroup2"]:
                return pre.split()[4]
    return None


CGROUP_CONDS = [
    ("pid", "-p another process, no cgroup filter (the early return before the filter)", "pid"),
    ("cgroup", "--cgroup of an empty cgroup, host-wide", "cgroup"),
    ("none", "no filter at all, host-wide (what the filter avoids)", None),
]


def section_cgroup(ctx):
    """--cgroup: with many busy tasks outside the filter, the early return
    of the perf_event and sched_switch programs, against the -p one."""
    q = ctx.quick
    rounds = 2 if q else 7
    secs = 1.5 if q else 3.0
    nthreads, spin_us, sleep_us = 500, 5, 20000
    mount = _cgroup2_mount()
    if not mount:
        return {"error": "no cgroup v2 mount"}
    cg = os.path.join(mount, "pysight-bench-%d" % os.getpid())
    os.mkdir(cg)
    runs = []
    busy = idle = None
    try:
        total = rounds * len(CGROUP_CONDS) * (secs + 5) + 60
        busy = common.start_ready([_switcher(ctx), "busy", nthreads, spin_us, sleep_us, total])
        idle = common.start_ready([ctx.python, ctx.wl("light.py"), total, 0.1, 1000])
        time.sleep(1.0)
        with common.BpfStats():
            for rnd in range(rounds):
                for key, label, how in _rotate(CGROUP_CONDS, rnd):
                    pids, extra = None, ["--mode", "wall"]
                    if how == "pid":
                        pids = [idle[0].pid]
                    elif how == "cgroup":
                        extra += ["--cgroup", cg]
                    try:
                        w = _bpf_window(ctx, pids, extra, secs, ctx.tag("cg-" + key))
                    except Exception as e:
                        log("cgroup %s FAILED: %s" % (key, e))
                        runs.append({"case": key, "round": rnd, "error": str(e)})
                        continue
                    w.update(case=key, round=rnd)
                    runs.append(w)
                    oc = _prog(w["progs"], "pysight_on_cpu") or {}
                    sw = _prog(w["progs"], "pysight_switch") or {}
                    log("cgroup %s round %d: on_cpu %.0f ns x %d, switch %.0f ns x %d, BPF %.2f%%"
                        % (key, rnd + 1, oc.get("ns_per_run") or -1, oc.get("run_cnt") or 0,
                           sw.get("ns_per_run") or -1, sw.get("run_cnt") or 0, w["bpf_cpu_pct"]))
    finally:
        _kill([p for p in (busy, idle) if p])
        try:
            os.rmdir(cg)
        except OSError as e:
            log("could not remove %s: %s" % (cg, e))
    table = []
    for key, label, _ in CGROUP_CONDS:
        ws = [w for w in runs if w["case"] == key and "error" not in w]
        row = {"case": key, "label": label, "bpf_cpu_pct": summarize([w["bpf_cpu_pct"] for w in ws])}
        for prog, prefix in (("on_cpu", "pysight_on_cpu"), ("switch", "pysight_switch"),
                             ("sys_exit", "pysight_sys_ex")):
            cs = [(_prog(w["progs"], prefix), w["wall"]) for w in ws]
            row[prog + "_ns"] = summarize([c["ns_per_run"] for c, _ in cs if c])
            row[prog + "_per_s"] = summarize([c["run_cnt"] / wall for c, wall in cs if c])
            # paired with the -p run of the same round: the load of the
            # shared host moves both together
            pid_ns = {w["round"]: (_prog(w["progs"], prefix) or {}).get("ns_per_run")
                      for w in runs if w["case"] == "pid" and "error" not in w}
            row[prog + "_vs_pid_ns"] = summarize(
                [c["ns_per_run"] - pid_ns[w["round"]] for (c, _), w in zip(cs, ws)
                 if c and c["ns_per_run"] is not None and pid_ns.get(w["round"]) is not None])
        table.append(row)
    return {"tasks": nthreads, "spin_us": spin_us, "sleep_us": sleep_us, "seconds": secs,
            "rounds": rounds, "cgroup": cg, "runs": runs, "table": table}


class _Sink:
    """An OTLP/HTTP endpoint on loopback that takes every export (200) and
    counts them: the agent's cost without a collector's noise."""

    def __init__(self):
        import http.server
        import threading as th
        sink = self
        self.requests = 0
        self.bytes = 0

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self.rfile.read(n)
                sink.requests += 1
                sink.bytes += n
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        self.thread = th.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def start_agent(sink, tmp, extra=()):
    """pysight agent at its defaults (and `extra`), exporting to sink, its
    files under tmp, its log in tmp/agent.log."""
    with open(os.path.join(tmp, "agent.log"), "w") as logf:
        return common.start([profilers.PYSIGHT, "agent", "-v",
                             "--otlp", "http://127.0.0.1:%d" % sink.port,
                             "--spool", os.path.join(tmp, "spool"),
                             "--socket", os.path.join(tmp, "sock"),
                             "--snapshot-dir", os.path.join(tmp, "snaps")] + list(extra),
                            stderr=logf)


def light_procs(ctx, n, secs):
    """n mostly idle Python processes (1 ms of work every 200 ms), running."""
    procs = []
    for i in range(n):
        procs.append(common.start([ctx.python, ctx.wl("light.py"), secs, 1, 200],
                                  stdout=subprocess.PIPE, text=True))
    for p in procs:  # each prints "ready PID" once running
        p.stdout.readline()
    return procs


def section_agent(ctx):
    """pysight agent at its defaults (19 Hz host-wide, OTLP every 15 s) on a
    host with --procs mostly idle Python processes: its own CPU share of
    one core and its RSS, read every export interval, so a long run is the
    soak (--agent-seconds)."""
    import tempfile
    n = 40 if ctx.quick else ctx.args.procs
    secs = 45.0 if ctx.quick else ctx.args.agent_seconds
    log("agent: starting %d Python processes" % n)
    procs, agent, sink = [], None, _Sink()
    tmp = tempfile.mkdtemp(prefix="pysight-bench-agent-")
    try:
        procs += light_procs(ctx, n, secs + 120)
        agent = start_agent(sink, tmp)
        time.sleep(20)              # start-up: every process found, code objects named
        points = []
        r0, t0 = common.cpu_reading(agent.pid), time.monotonic()
        last_r, last_t = r0, t0
        while time.monotonic() - t0 < secs and agent.poll() is None:
            time.sleep(15)
            r, t = common.cpu_reading(agent.pid), time.monotonic()
            d = common.cpu_delta_ns(last_r, r)
            points.append({"t_s": round(t - t0, 1), "rss_kib": _rss_kib(agent.pid),
                           "cpu_pct": None if d is None else 100 * d / 1e9 / (t - last_t)})
            last_r, last_t = r, t
        d = common.cpu_delta_ns(r0, common.cpu_reading(agent.pid))
        wall = time.monotonic() - t0
        hwm = common.vm_hwm_kib(agent.pid)
        common.kill_group(agent, signal.SIGTERM)
        agent.wait(30)
        with open(os.path.join(tmp, "agent.log")) as f:
            health = [l.strip() for l in f if "agent:" in l and "samples" in l]
        rss = [p["rss_kib"] for p in points if p["rss_kib"]]
        return {"processes": n, "seconds": wall, "rate_hz": 19,
                "cpu_pct_of_one_core": None if d is None else 100 * d / 1e9 / wall,
                "rss_kib_first": rss[0] if rss else None, "rss_kib_last": rss[-1] if rss else None,
                "rss_kib_max": max(rss) if rss else None, "vm_hwm_kib": hwm,
                "exports_received": sink.requests, "export_bytes": sink.bytes,
                "points": points, "last_health": health[-1] if health else None}
    finally:
        if agent is not None and agent.poll() is None:
            common.kill_group(agent)
        common.kill_groups(procs)
        sink.close()
        subprocess.run(["rm", "-rf", tmp])
