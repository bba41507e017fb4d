"""Markdown for docs/BENCHMARKS.md, and the targets check."""
from .common import summarize
from .profilers import LABELS
from .sections import WALL_LABELS


def _m(s, fmt="%.2f"):
    """median (min to max) of a summarize() dict."""
    if not s:
        return "n/a"
    if s["n"] == 1:
        return fmt % s["median"]
    return "%s (%s to %s)" % (fmt % s["median"], fmt % s["min"], fmt % s["max"])


def _med(s):
    return s["median"] if s else None


def _mib(kib):
    return "n/a" if kib is None else "%.1f MiB" % (kib / 1024.0)


def _table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def _slowdown_md(sec, busy=False):
    rows = []
    for r in sec["table"]:
        who = "%d process(es)" % 2 if busy else "%d thread%s" % (r["threads"], "s" if r["threads"] > 1 else "")
        if r["tool"] == "none":
            rows.append([who, LABELS["none"], "-", "%s units/s" % _m(r["throughput"], "%.0f"),
                         "spread: %s" % _m(_pct(r.get("ratio")), "%+.1f%%"),
                         "spread: %s" % _m(_pct(r.get("cpu_ratio")), "%+.1f%%"), "-", "-"])
            continue
        cpu = _m(r.get("sampler_cpu_pct"), "%.2f%%")
        if busy and r.get("bpf_cpu_pct"):
            cpu = "%s + BPF %s = %s" % (cpu, _m(r["bpf_cpu_pct"], "%.2f%%"),
                                        _m(r["total_cpu_pct"], "%.2f%%"))
        rows.append([who, LABELS[r["tool"]], "%d Hz" % r["rate"],
                     "%s units/s" % _m(r["throughput"], "%.0f"),
                     _m(r["slowdown_pct"], "%+.1f%%"), _m(r.get("slowdown_cpu_pct"), "%+.1f%%"),
                     cpu, _m(r["samples"], "%.0f")])
    return _table(["target", "profiler", "rate", "throughput (wall)", "slowdown (wall)",
                   "slowdown (per target CPU s)", "sampler CPU (% of a core)", "samples"], rows)


def _pct(s):
    """A ratio summary (1.0 = the median) as +-% around it."""
    if not s:
        return None
    return {k: (100 * (v - 1) if k != "n" else v) for k, v in s.items()}


def markdown(res):
    meta = res["meta"]
    L = []
    L.append("### Run of %s" % meta["date"])
    L.append("")
    L.append("Command: `%s`  " % meta["command"])
    f = meta["machine"]
    L.append("Machine: %s CPUs, %s, kernel %s, %s MiB RAM, load average %s at the start.  "
             % (f.get("nproc"), f.get("cpu"), f.get("kernel"), f.get("mem_mib"),
                " ".join(f.get("loadavg_at_start", []))))
    L.append("Target interpreter: `%s` (%s).  Tools: %s (pysight binary sha256 %s...).  "
             "Rounds: %d; wall time %.1f min."
             % (meta["python"], meta["python_version"],
                ", ".join("%s" % v for v in meta["versions"].values()),
                meta.get("pysight_sha256"), meta["rounds"], meta.get("elapsed_s", 0) / 60.0))
    if meta.get("pysight_changed_during"):
        L.append("")
        L.append("**Warning**: `.output/pysight` was rebuilt during this run (noticed after: %s); "
                 "those figures mix two builds." % ", ".join(meta["pysight_changed_during"]))
    L.append("")
    s = res.get("slowdown")
    if s:
        L.append("#### 1. Target slowdown (throughput.py, one process)")
        L.append("")
        L.append("Median over rounds (min to max); slowdown is 1 - throughput / throughput of "
                 "'none' in the same round.  Sampler CPU is the profiler process's own CPU "
                 "(all its threads) per second; pysight's BPF time runs in the target's "
                 "context and shows up as slowdown instead (see 2).")
        L.append("")
        L.append(_slowdown_md(s))
        L.append("")
    s = res.get("busy")
    if s:
        L.append("#### 2a. Both CPUs busy: two single-threaded processes, bpf_stats on")
        L.append("")
        L.append("Every profiler covers both processes (py-spy and austin take one pid: two "
                 "instances, CPU summed).  pysight's cost is its process plus the BPF "
                 "program's run time (bpf_stats), as % of one core.")
        L.append("")
        L.append(_slowdown_md(s, busy=True))
        L.append("")
    s = res.get("bpf_cost")
    if s:
        L.append("#### 2b. BPF run time per sample (%d Hz, two busy targets, `-p`)" % s["rate"])
        L.append("")
        L.append("`run_time_ns / run_cnt` of `pysight_on_cpu` over %.0f s windows.  The early "
                 "return (a task that is not a target) costs %s ns per run; ns/sample "
                 "subtracts that from the runs that were not samples of a target."
                 % (s["seconds"], _m(s["early_return"]["ns_per_run"], "%.0f")))
        L.append("")
        rows = [[r["case"], _m(r["ns_per_sample"], "%.0f"), _m(r["ns_per_run"], "%.0f"),
                 _m(r["run_cnt"], "%.0f"), _m(r["samples"], "%.0f")] for r in s["rows"]]
        L.append(_table(["stack", "ns per sample", "ns per run", "runs", "samples"], rows))
        L.append("")
    s = res.get("sustain")
    if s:
        L.append("#### 2c. Sustainable rate (two busy targets, `-p`, %.0f s)" % s["seconds"])
        L.append("")
        rows = [[r["workload"], "%d Hz" % r["rate"], r["samples"], "%.0f" % r["expected"],
                 r["lost"], r.get("stacks"), "yes" if r["sustained"] else "no"]
                for r in s["rows"]]
        L.append(_table(["workload", "rate per CPU", "samples", "expected (rate x target CPU s)",
                         "lost", "stacks written", "sustained"], rows))
        L.append("")
    s = res.get("accuracy")
    if s:
        L.append("#### 3. Accuracy against thread_time (%d Hz, %.0f s of CPU each, launched by "
                 "the profiler)" % (s["rate"], s["seconds"]))
        L.append("")
        L.append("Error: the largest gap, in percentage points, between a function's share of "
                 "the samples and its share of thread_time.  Complete: samples whose stack is "
                 "exactly the expected one (every frame named, root to leaf), over all samples "
                 "in the hot functions plus failed, partial or lost samples.  Leaf line: "
                 "samples on the hot loop's line.  deep = the ratio workload %d frames down."
                 % s["deep"])
        L.append("")
        rows = [[r["workload"], LABELS[r["tool"]], _m(r["error_pp"]), _m(r["complete_pct"]),
                 _m(r["leaf_line_pct"], "%.1f"), _m(r["samples"], "%.0f"),
                 _m(r.get("wall_per_cpu"), "%.1f")] for r in s["table"]]
        L.append(_table(["workload", "profiler", "error (points)", "complete %", "leaf line %",
                         "samples", "run wall s / workload CPU s"], rows))
        L.append("")
    s = res.get("scale")
    if s:
        L.append("#### 4. Scale")
        L.append("")
        mp = s.get("many_procs", {})
        if "error" in mp:
            L.append("Many processes: FAILED: %s" % mp["error"])
        elif mp:
            L.append("%d Python processes (each 1 ms of CPU every 200 ms), pysight host-wide at "
                     "100 Hz: attached (\"sampling\") %.2f s after launch, first sample "
                     "(the BPF sample counter > 0) %s s after launch; %s Python processes known "
                     "at the end; peak RSS %s; %s samples, %s stacks."
                     % (mp["processes_started"], mp["startup_to_attached_s"],
                        "%.2f" % mp["startup_to_first_sample_s"]
                        if mp.get("startup_to_first_sample_s") is not None else "n/a",
                        mp.get("python_processes_known"), _mib(mp.get("maxrss_kib")),
                        mp.get("samples"), mp.get("stacks")))
            L.append("")
            if mp.get("maps"):
                L.append(_table(["map", "type", "max entries", "entries in use", "memlock"],
                                [[m["name"], m["type"], m["max_entries"], m.get("entries", ""),
                                  "%.1f KiB" % (m["bytes_memlock"] / 1024.0)
                                  if m.get("bytes_memlock") else ""] for m in mp["maps"]]))
                L.append("")
        for key, title in (("threads", "one process with %s threads all spinning"),
                           ("deep", "one thread %s frames deep")):
            t = s.get(key)
            if not t or "error" in t:
                continue
            L.append("%s, %d Hz, %.0f s:" % (title % t.get("threads", t.get("depth")), t["rate"],
                                             t["seconds"]))
            L.append("")
            rows = []
            for r in t["rows"]:
                if "error" in r:
                    rows.append([LABELS[r["tool"]], "FAILED: " + r["error"][:60], "", "", "", ""])
                    continue
                rows.append([LABELS[r["tool"]], r.get("samples") or r.get("samples_written"),
                             "%.1f%%" % r["complete_pct"] if r.get("complete_pct") is not None else "n/a",
                             r.get("threads_seen") if key == "threads" else "-",
                             "%.1f%%" % r["sampler_cpu_pct"] if r.get("sampler_cpu_pct") is not None else "n/a",
                             _mib(r.get("maxrss_kib"))])
            L.append(_table(["profiler", "samples", "complete", "threads seen", "sampler CPU",
                             "peak RSS"], rows))
            L.append("")
        st = s.get("stacks")
        if st and "error" not in st:
            L.append("Distinct stacks: two processes making a new stack on nearly every sample, "
                     "pysight `-p` at %d Hz for %.0f s: %s distinct stacks written, %s samples, "
                     "%s lost, peak RSS %s."
                     % (st["rate"], st["seconds"], st.get("distinct_stacks"), st.get("samples"),
                        st.get("lost"), _mib(st.get("maxrss_kib"))))
            L.append("")
    if res.get("offcpu"):
        L += _offcpu_md(res["offcpu"])
    if res.get("cgroup"):
        L += _cgroup_md(res["cgroup"])
    if res.get("agent"):
        L += _agent_md(res["agent"])
    if res.get("wall"):
        L += _wall_md(res["wall"])
    if res.get("native"):
        L += _native_md(res["native"])
    L.append("#### Targets")
    L.append("")
    L.append(_table(["target", "measured", "met"], [[t, m, ok] for t, m, ok in targets(res)]))
    L.append("")
    return "\n".join(L)


def _offcpu_md(s):
    L = ["#### 5. Off-CPU tracing cost (`--mode wall|off`)", ""]
    ps = s.get("per_switch") or {}
    if "error" in ps:
        L += ["Per switch: FAILED: %s" % ps["error"], ""]
    elif ps:
        L.append("5a. BPF run time per run of pysight's programs, `--mode wall -r 1000`, bpf_stats "
                 "on, %.0f s windows, median over rounds (min to max).  `sched_switch` runs on "
                 "every context switch of the host, `sys_exit` on every system call's return."
                 % ps["seconds"])
        L.append("")
        rows = [[r["label"], _m(r["switch_ns"], "%.0f"), _m(r["switch_per_s"], "%.0f"),
                 _m(r["sys_exit_ns"], "%.0f"), _m(r["sys_exit_per_s"], "%.0f"),
                 _m(r["on_cpu_ns"], "%.0f"), _m(r["bpf_cpu_pct"], "%.2f%%")]
                for r in ps["table"]]
        L.append(_table(["switches of", "sched_switch ns/run", "switches/s", "sys_exit ns/run",
                         "sys_exits/s", "perf_event ns/run", "all programs, % of a core"], rows))
        L.append("")
    sd = s.get("slowdown") or {}
    if "error" in sd:
        L += ["Slowdown: FAILED: %s" % sd["error"], ""]
    elif sd:
        L.append("5b. Ping-pong round trips per second, %.0f s runs, bpf_stats off, pysight at "
                 "`-r 100`.  Slowdown is 1 - rate / rate of 'no profiler' in the same round; "
                 "for 'no profiler' it is the spread of its own runs around their median."
                 % sd["seconds"])
        L.append("")
        rows = [["C pipe ping-pong" if r["kind"] == "c" else "Python queue.Queue ping-pong",
                 r["label"], _m(r["rate"], "%.0f"), _m(r["slowdown_pct"], "%+.1f%%")]
                for r in sd["table"]]
        L.append(_table(["workload", "condition", "round trips/s", "slowdown"], rows))
        L.append("")
    ac = s.get("accuracy") or {}
    if "error" in ac:
        L += ["Accuracy: FAILED: %s" % ac["error"], ""]
    elif ac:
        L.append("5c. Wall time against the workload's own clock: `tests/workloads/offcpu.py "
                 "cycle %.0f` (20 ms burn, 50 ms sleep, 30 ms lock wait), launched by each "
                 "profiler at %d Hz.  Share: the phase's share of the three phases' time in the "
                 "profile (truth in brackets).  Seen/truth: the phase's time in the profile over "
                 "its time measured by the workload.  Error: the largest gap in points."
                 % (ac["seconds"], ac["rate"]))
        L.append("")
        rows = []
        for r in ac["table"]:
            rows.append([WALL_LABELS[r["tool"]], _m(r["error_pp"])]
                        + ["%s [%s]" % (_m(r["share_" + k], "%.1f"),
                                        _m(r["truth_share_" + k], "%.1f"))
                           for k in ("burn", "sleep", "lock")]
                        + [_m(r["over_" + k]) for k in ("burn", "sleep", "lock")]
                        + [_m(r["total_over_truth"])])
        L.append(_table(["profiler", "error (points)", "burn share %", "sleep share %",
                         "lock share %", "burn seen/truth", "sleep seen/truth",
                         "lock seen/truth", "total seen/truth"], rows))
        L.append("")
    return L


def _cgroup_md(s):
    L = ["#### 6. The cgroup filter's early return (`--cgroup`)", ""]
    if "error" in s:
        return L + ["FAILED: %s" % s["error"], ""]
    L.append("%d threads outside the filter (a C program: each spins %d us, then sleeps %d ms), "
             "pysight `--mode wall -r 1000`, bpf_stats on, %.0f s windows, %d rounds, median "
             "(min to max).  The cgroup is an empty one made for the run."
             % (s["tasks"], s["spin_us"], s["sleep_us"] // 1000, s["seconds"], s["rounds"]))
    L.append("")
    rows = [[r["label"], _m(r["on_cpu_ns"], "%.0f"),
             "-" if r["case"] == "pid" else _m(r.get("on_cpu_vs_pid_ns"), "%+.0f"),
             _m(r["on_cpu_per_s"], "%.0f"), _m(r["switch_ns"], "%.0f"),
             "-" if r["case"] == "pid" else _m(r.get("switch_vs_pid_ns"), "%+.0f"),
             _m(r["switch_per_s"], "%.0f"), _m(r["sys_exit_ns"], "%.0f"),
             _m(r["bpf_cpu_pct"], "%.2f%%")] for r in s["table"]]
    L.append("\"vs -p\": the difference from the `-p` run of the same round, ns.")
    L.append("")
    L.append(_table(["pysight pointed at", "perf_event ns/run", "vs -p", "perf_event runs/s",
                     "sched_switch ns/run", "vs -p", "switches/s", "sys_exit ns/run",
                     "all programs, % of a core"], rows))
    L.append("")
    return L


def _row(sec, **kw):
    for r in (sec or {}).get("table", []):
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def _yes(ok):
    return "n/a" if ok is None else ("yes" if ok else "**no**")


def targets(res):
    out = []
    sd = res.get("slowdown")
    for rate, limit in ((100, 0.5), (1000, 3.0)):
        for threads in (1, 8):
            r = _row(sd, threads=threads, tool="pysight", rate=rate)
            if not r or not r.get("slowdown_pct"):
                continue
            mine = _med(r["slowdown_pct"])
            others = {t: _med((_row(sd, threads=threads, tool=t, rate=rate) or {}).get("slowdown_pct"))
                      for t in ("py-spy", "py-spy-nb", "austin")}
            below = all(v is None or mine < v for v in others.values())
            out.append(["slowdown at %d Hz <= %.1f%%, %d thread(s), below py-spy's and austin's"
                        % (rate, limit, threads),
                        "%+.2f%% (py-spy %s, --nonblocking %s, austin %s)"
                        % (mine, *["n/a" if v is None else "%+.2f%%" % v for v in others.values()]),
                        _yes(mine <= limit and below)])
    bc = res.get("bpf_cost")
    if bc:
        for case, limit in (("depth 5", 1000), ("depth 50", 3000)):
            r = [x for x in bc["rows"] if x["case"] == case]
            if r and r[0]["ns_per_sample"]:
                v = _med(r[0]["ns_per_sample"])
                out.append(["BPF <= %.0f us per sample at %s frames" % (limit / 1000, case.split()[1]),
                            "%.2f us" % (v / 1000), _yes(v <= limit)])
    b = res.get("busy")
    r = _row(b, tool="pysight", rate=100)
    if r:
        tot = r.get("total_cpu_pct") or r.get("sampler_cpu_pct")
        if tot:
            out.append(["sampler CPU <= 1% of a core at 100 Hz, both CPUs busy (process + BPF)",
                        "%.2f%%" % _med(tot), _yes(_med(tot) <= 1.0)])
    acc = res.get("accuracy")
    if acc:
        r = _row(acc, workload="ratio", tool="pysight")
        if r and r.get("error_pp"):
            out.append(["ground-truth error <= 1 point at 5000 samples (ratio workload)",
                        "%.2f points at %.0f samples" % (_med(r["error_pp"]), _med(r["samples"])),
                        _yes(_med(r["error_pp"]) <= 1.0)])
        for w in ("ratio", "threads50", "deep"):
            r = _row(acc, workload=w, tool="pysight")
            if r and r.get("complete_pct"):
                out.append([">= 99.5%% of samples complete (%s)" % w,
                            "%.2f%%" % _med(r["complete_pct"]), _yes(_med(r["complete_pct"]) >= 99.5)])
    sc = res.get("scale") or {}
    mp = sc.get("many_procs") or {}
    if mp.get("startup_to_first_sample_s") is not None:
        v = mp["startup_to_first_sample_s"]
        out.append(["startup to first sample < 1 s (%d processes)" % mp["processes_started"],
                    "%.2f s" % v, _yes(v < 1.0)])
    st = sc.get("stacks") or {}
    if st.get("maxrss_kib"):
        ok = st["maxrss_kib"] < 64 * 1024
        n = st.get("distinct_stacks") or 0
        out.append(["RSS < 64 MiB with 100k distinct stacks",
                    "%s with %d distinct stacks" % (_mib(st["maxrss_kib"]), n),
                    _yes(ok) if n >= 100000 else _yes(ok) + " (only %d stacks)" % n])
    out += _offcpu_targets(res.get("offcpu") or {})
    out += _cgroup_targets(res.get("cgroup") or {})
    out += _agent_targets(res.get("agent") or {})
    out += _wall_targets(res.get("wall") or {})
    out += _native_targets(res.get("native") or {})
    return out


def _native_md(s):
    """The native section (issue #29)."""
    L = ["#### 7. Native frames (`--native`)", ""]
    if s.get("error"):
        return L + ["failed: %s" % s["error"], ""]
    L.append("7a. `pysight_on_cpu`'s BPF time a sample, one target calling "
             "`burn_deep(DEPTH)` through ctypes at 997 Hz, bpf_stats on. Frames: the native "
             "frames of the heaviest stack under `--native-all` (all the walk passes: "
             "ctypes and libffi glue, the interpreter down to `_start`); the same target "
             "without `--native` beside it.")
    L.append("")
    rows = []
    by = {}
    for r in s.get("per_frame", []):
        by.setdefault(r["depth"], {})[r["native"]] = r
    for depth in sorted(by):
        n, p = by[depth].get(True, {}), by[depth].get(False, {})
        rows.append([depth, n.get("frames", "n/a"),
                     "%.2f" % n["us_per_run"] if n.get("us_per_run") else "n/a",
                     "%.2f" % p["us_per_run"] if p.get("us_per_run") else "n/a"])
    L.append(_table(["DEPTH", "native frames walked", "µs a sample, --native-all",
                     "µs a sample, Python only"], rows))
    L.append("")
    c = s.get("cost") or {}
    if c:
        L.append("7b. Two target processes, each calling native code in a loop (both CPUs "
                 "busy), 100 Hz. Sampler CPU as % of one core: the profiler's process, plus "
                 "for pysight its BPF run time. py-spy `--native` is one instance per target, "
                 "summed.")
        L.append("")
        rows = []
        for tool in ("pysight", "pysight --native", "py-spy --native"):
            t = c.get(tool)
            if t:
                rows.append([tool] + [_m({k: (100 * v if k != "n" else v)
                                          for k, v in t[part].items()} if t[part] else None)
                                      for part in ("process", "bpf", "total")])
        L.append(_table(["profiler", "process %", "BPF %", "total %"], rows))
        whole = [r.get("whole_pct") for r in (c.get("pysight --native") or {}).get("rows", [])]
        if any(w is not None for w in whole):
            L.append("")
            L.append("Walks that reached the thread's first frame (pysight's summary): %s%%."
                     % ", ".join("%.1f" % w for w in whole if w is not None))
        L.append("")
    t = s.get("tables") or {}
    if t:
        L.append("7c. Unwind tables of this host's binaries (`tools/native-tables`, %d "
                 "distinct ELF files under /usr and /opt): rows are 16 bytes in the pool BPF "
                 "searches and 16 in pysight's own copy; names as pysight keeps them."
                 % t.get("files", 0))
        L.append("")
        rows = []
        for key, label in (("largest_50", "the 50 largest"), ("largest_500", "the 500 largest"),
                           ("median_500", "500 of median size")):
            m = t.get(key)
            if m:
                rows.append([label, m["binaries"], "%.2f Mi" % (m["rows"] / 2**20),
                             "%.1f MiB" % (2 * m["row_bytes"] / 2**20),
                             "%.1f MiB" % (m["name_bytes"] / 2**20),
                             "%.0f ms" % m["read_ms"]])
        L.append(_table(["binaries", "n", "rows", "rows (pool + copy)", "names", "read in"],
                        rows))
        L.append("")
    return L


def _native_targets(s):
    c = s.get("cost") or {}
    t = c.get("pysight --native")
    if not t or not t.get("total"):
        return []
    total = _med(t["total"]) * 100
    out = [["--native at 100 Hz, two busy targets: sampler <= 2% of a core",
            "%.2f%%" % total, _yes(total <= 2.0)]]
    whole = [r.get("whole_pct") for r in t.get("rows", []) if r.get("whole_pct") is not None]
    if whole:
        w = min(whole)
        out.append([">= 99% of native walks whole", "%.1f%% (least of the rounds)" % w,
                    _yes(w >= 99.0)])
    return out


def _find(table, **kw):
    for r in table or []:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def _offcpu_targets(s):
    out = []
    ps = (s.get("per_switch") or {}).get("table")
    floor = _med((_find(ps, case="empty") or {}).get("switch_ns"))
    for case, what in (("nonpy_p", "-p another process"), ("nonpy_host", "host-wide")):
        r = _find(ps, case=case)
        if r and r.get("switch_ns"):
            v = _med(r["switch_ns"])
            out.append(["--mode wall: <= 150 ns added per switch of a non-Python task (%s)" % what,
                        "%.0f ns per sched_switch run%s, plus %s ns per sys_exit run"
                        % (v, "" if floor is None else
                           " (%.0f above an empty program's %.0f)" % (v - floor, floor),
                           _m(r.get("sys_exit_ns"), "%.0f")), _yes(v <= 150)])
    r = _find(ps, case="py_target")
    if r and r.get("switch_ns"):
        out.append(["--mode wall: per switch, Python threads that are the target (no target set)",
                    "%.0f ns per sched_switch run" % _med(r["switch_ns"]), "-"])
    sd = (s.get("slowdown") or {}).get("table")
    for kind, cond, limit, what in (("c", "wall_p", 3.0, "non-Python, -p another process"),
                                    ("c", "wall_host", 3.0, "non-Python, host-wide"),
                                    ("py", "wall_p", 10.0, "Python, -p it")):
        r = _find(sd, kind=kind, cond=cond)
        nr = _find(sd, kind=kind, cond="none")
        if r and r.get("slowdown_pct"):
            v = _med(r["slowdown_pct"])
            out.append(["--mode wall: ping-pong slowdown <= %.0f%% (%s)" % (limit, what),
                        "%+.1f%% (no-profiler spread %s)"
                        % (v, _m((nr or {}).get("slowdown_pct"), "%+.1f%%")), _yes(v <= limit)])
    return out


def _cgroup_targets(s):
    out = []
    pid = _find(s.get("table"), case="pid")
    cg = _find(s.get("table"), case="cgroup")
    if not pid or not cg:
        return out
    for prog in ("on_cpu", "switch"):
        a, b = _med(cg.get(prog + "_ns")), _med(pid.get(prog + "_ns"))
        if a is None or b is None:
            continue
        d = cg.get(prog + "_vs_pid_ns")
        # within the spread of the paired differences, it is not resolved
        ok = None if d and d["min"] < 0 < d["max"] else a <= b
        out.append(["--cgroup: %s early return with %d busy tasks outside <= the -p one"
                    % ("perf_event" if prog == "on_cpu" else "sched_switch", s["tasks"]),
                    "%.0f ns against %.0f ns; paired difference %s ns"
                    % (a, b, _m(d, "%+.0f")),
                    _yes(ok) if ok is not None else "not resolved: the paired difference "
                    "straddles 0"])
    return out


def _agent_md(a):
    if "error" in a:
        return ["Agent: failed: %s" % a["error"], ""]
    L = ["#### pysight agent", "",
         "`pysight agent` at its defaults (19 Hz host-wide, an OTLP export every 15 s to "
         "a loopback endpoint) with %d mostly idle Python processes (1 ms of work every "
         "200 ms each), for %.0f s after a 20 s start: %.2f%% of one core, RSS %s at the "
         "first reading, %s at the last, %s at most (VmHWM %s); %d exports, %.0f KiB in all."
         % (a["processes"], a["seconds"], a["cpu_pct_of_one_core"] or 0,
            _mib(a["rss_kib_first"]), _mib(a["rss_kib_last"]), _mib(a["rss_kib_max"]),
            _mib(a["vm_hwm_kib"]), a["exports_received"], a["export_bytes"] / 1024), ""]
    pts = a.get("points") or []
    if pts:
        L.append(_table(["t (s)", "RSS", "CPU % of one core (last 15 s)"],
                        [["%.0f" % p["t_s"], _mib(p["rss_kib"]),
                          "%.2f" % p["cpu_pct"] if p["cpu_pct"] is not None else "-"]
                         for p in pts[:: max(1, len(pts) // 12)]]))
        L.append("")
    if a.get("last_health"):
        L += ["Its last health line: `%s`" % a["last_health"], ""]
    return L


def _agent_targets(a):
    if not a or "error" in a or a.get("cpu_pct_of_one_core") is None:
        return []
    cpu, rss = a["cpu_pct_of_one_core"], a.get("rss_kib_max") or 0
    grew = (a.get("rss_kib_last") or 0) - (a.get("rss_kib_first") or 0)
    return [["agent < 0.5%% of one core at 19 Hz, %d processes" % a["processes"],
             "%.2f%%" % cpu, _yes(cpu < 0.5)],
            ["agent < 64 MiB RSS", _mib(rss), _yes(rss < 64 * 1024)],
            ["agent RSS flat over %.0f s" % a["seconds"],
             "%+.1f MiB from the first reading to the last" % (grew / 1024),
             _yes(grew < 2 * 1024)]]


# --------------------------------------------------------------------------
# The wall section (issue #27): --offcpu=sweep against trace, py-spy, austin


def _failed(part, name):
    if not part:
        return []
    if "error" in part:
        return ["%s: FAILED: %s" % (name, part["error"]), ""]
    return None


def _wall_md(s):
    if "error" in s:
        return ["#### 7. Wall mode: FAILED: %s" % s["error"], ""]
    L = ["#### 7. Wall mode: the sampled sweep (`--offcpu=sweep`) against the tracer "
         "(`--offcpu=trace`), py-spy `--idle` and austin's wall mode", ""]
    pg = s.get("programs")
    f = _failed(pg, "7a. Programs")
    if f is not None:
        L += f
    else:
        L.append("7a. The programs pysight loads in wall mode (host-wide, `-r 100`), and those "
                 "that ran on a switch or a system call's return while a C pipe ping-pong "
                 "switched (bpf_stats on, %.0f s)." % pg["seconds"])
        L.append("")
        L.append(_table(["pysight", "programs loaded", "on sched_switch / sys_exit, runs/s"],
                        [[r["label"], ", ".join(r["loaded"]),
                          ", ".join("%s %.0f" % (n, r["runs_per_s"][n])
                                    for n in r["on_switch_or_sys_exit"]) or "none"]
                         for r in pg["rows"]]))
        L.append("")
    pp = s.get("pingpong")
    f = _failed(pp, "7b. Ping-pong")
    if f is not None:
        L += f
    else:
        L.append("7b. Ping-pong round trips per second, %.1f s runs, both sides pinned to one "
                 "CPU, every profiler at 100 Hz, bpf_stats off.  Slowdown is 1 - rate / rate "
                 "of 'no profiler' in the same round; for 'no profiler' it is the spread of "
                 "its own runs around their median.  py-spy and austin can only attach to "
                 "Python, so the C ping-pong has pysight alone.  Rounds: C %d, Python %d."
                 % (pp["seconds"], len({r["round"] for r in pp["runs"] if r.get("kind") == "c"}),
                    len({r["round"] for r in pp["runs"] if r.get("kind") == "py"})))
        L.append("")
        L.append(_table(["workload", "condition", "round trips/s", "slowdown"],
                        [["C pipe ping-pong" if r["kind"] == "c" else "Python queue.Queue "
                          "ping-pong", r["label"], _m(r["rate"], "%.0f"),
                          _m(r["slowdown_pct"], "%+.1f%%")] for r in pp["table"]]))
        L.append("")
    ac = s.get("accuracy")
    f = _failed(ac, "7c. Accuracy")
    if f is not None:
        L += f
    else:
        L.append("7c. `tests/workloads/offcpu.py cycle %.0f` (20 ms burn, 50 ms sleep, 30 ms "
                 "lock wait) launched by each profiler, per thread (`--threads`).  Error: the "
                 "largest gap in points between a phase's share of the profile and its share "
                 "of the workload's own clock (truth in brackets).  Thread: the worker's time "
                 "in the profile against its own clock, %% off." % ac["seconds"])
        L.append("")
        rows = []
        for r in ac["table"]:
            rows.append(["%d Hz" % r["rate"], r["label"], _m(r["error_pp"])]
                        + ["%s [%s]" % (_m(r["share_" + k], "%.1f"),
                                        _m(r["truth_share_" + k], "%.1f"))
                           for k in ("burn", "sleep", "lock")]
                        + [_m(r["total_over_truth"]), _m(r["thread_err_pct"], "%.2f%%")])
        L.append(_table(["rate", "profiler", "error (points)", "burn share %", "sleep share %",
                         "lock share %", "phases seen/truth", "thread off its clock"], rows))
        L.append("")
    co = s.get("cost")
    f = _failed(co, "7d. Sampler CPU")
    if f is not None:
        L += f
    else:
        L.append("7d. Sampler CPU, %% of one core, at %d Hz on one process of N threads "
                 "(`bench_workloads/many_threads.py`: blocked on an Event, or each sleeping "
                 "50 ms in a loop), %.1f s windows, bpf_stats on.  Process: the profiler's "
                 "utime+stime, which holds the task iterator's run time (it runs in pysight's "
                 "read(); shown apart as \"of it, iterator\").  BPF: pysight's other programs' "
                 "run time, which runs in other tasks' context.  Keeps up: ticks (sweep) or "
                 "thread samples (py-spy, austin) over what the rate asks for; a profiler "
                 "that kept up with under 10%% is not run on more threads of that kind.  "
                 "Stop: from SIGINT to its exit (SIGINT again at 10 s, SIGKILL at 20 s).  "
                 "5,000 threads: the first round only."
                 % (co["rate"], co["seconds"]))
        L.append("")
        rows = []
        for r in co["table"]:
            if not r["process_cpu_pct"]:
                why = r["failed"][0][:80] if r["failed"] else "no run"
                rows.append(["%d %s" % (r["threads"], r["mode"]), r["label"],
                             why if why.startswith("not run") else "FAILED: " + why,
                             "", "", "", "", "", "", ""])
                continue
            rows.append(["%d %s" % (r["threads"], r["mode"]), r["label"],
                         _m(r["process_cpu_pct"], "%.2f"), _m(r["bpf_outside_pct"], "%.2f"),
                         _m(r["total_cpu_pct"], "%.2f"), _m(r["bpf_iter_pct"], "%.2f")
                         if r["cond"] in ("sweep", "trace") else "-",
                         _m(r["keeps_up"]), _m(r["tick_us"], "%.0f"),
                         _m(r["workload_cpu_pct"], "%.1f"),
                         "killed at 20 s" if r.get("killed") else _m(r.get("stop_s"), "%.1f")])
        L.append(_table(["threads", "profiler", "process", "BPF", "total", "of it, iterator",
                         "keeps up", "sweep tick (us)", "workload CPU", "stop (s)"], rows))
        L.append("")
    ag = s.get("agent")
    f = _failed(ag, "7e. Agent")
    if f is not None:
        L += f
    else:
        L.append("7e. `pysight agent` in wall mode (%d Hz, its default, host-wide, an OTLP "
                 "export every 15 s to a loopback endpoint) over %d mostly idle Python "
                 "processes (1 ms of work every 200 ms each): %% of one core over %.0f s after "
                 "%.0f s to start, bpf_stats on."
                 % (ag["rate_hz"], ag["processes"], ag["seconds"], ag["warm_s"]))
        L.append("")
        L.append(_table(["agent", "process", "BPF", "total", "peak RSS"],
                        [[r["label"], "%.2f%%" % r["process_cpu_pct"]
                          if r["process_cpu_pct"] is not None else "n/a",
                          "%.2f%%" % r["bpf_outside_pct"],
                          "%.2f%%" % r["total_cpu_pct"] if r.get("total_cpu_pct") is not None
                          else "n/a", _mib(r.get("vm_hwm_kib"))] for r in ag["rows"]]))
        L.append("")
    return L


def _paired(runs, kind, a, b):
    """Per round, slowdown of condition a less that of condition b, points."""
    ok = [r for r in runs if r["kind"] == kind and "error" not in r]
    none = {r["round"]: r["rate"] for r in ok if r["cond"] == "none"}
    by = {}
    for r in ok:
        if r["cond"] in (a, b) and r["round"] in none:
            by.setdefault(r["round"], {})[r["cond"]] = 100 * (1 - r["rate"] / none[r["round"]])
    return summarize([v[a] - v[b] for v in by.values() if a in v and b in v])


def _wall_targets(s):
    if not s or "error" in s:
        return []
    out = []
    pg = (s.get("programs") or {}).get("rows")
    for cond, what in (("default", "the default"), ("sweep", "--offcpu=sweep")):
        r = _find(pg, cond=cond)
        if r:
            on = r["on_switch_or_sys_exit"]
            out.append(["wall: no program on sched_switch or sys_exit (%s)" % what,
                        ", ".join(on) + " ran" if on else "none ran", _yes(not on)])
    pp = s.get("pingpong") or {}
    t = pp.get("table")
    med = {}
    for kind in ("c", "py"):
        for cond in ("none", "cpu", "sweep", "trace", "py-spy", "austin"):
            r = _find(t, kind=kind, cond=cond)
            med[kind, cond] = _med((r or {}).get("slowdown_pct"))
    spread = lambda kind: _m((_find(t, kind=kind, cond="none") or {}).get("slowdown_pct"),
                             "%+.1f%%")
    f = lambda v: "n/a" if v is None else "%+.1f%%" % v
    v = med["c", "sweep"]
    if v is not None:
        d = _paired(pp["runs"], "c", "sweep", "cpu")
        # not above --mode cpu beyond the noise: some round has it at or below
        same = d is not None and d["min"] <= 0
        out.append(["wall (sweep): pipe ping-pong slowdown <= 1%, no more than --mode cpu's "
                    "beyond noise (a round's paired difference <= 0)",
                    "%s; --mode cpu %s, paired difference %s points; trace %s (no-profiler "
                    "spread %s)" % (f(v), f(med["c", "cpu"]), _m(d, "%+.1f"), f(med["c", "trace"]),
                                    spread("c")),
                    _yes(v <= 1.0 and same)])
    v = med["py", "sweep"]
    if v is not None:
        out.append(["wall (sweep): queue.Queue ping-pong slowdown <= 3%, the pair recorded",
                    "%s; --mode cpu %s, trace %s, py-spy --idle %s, austin %s (no-profiler "
                    "spread %s)" % (f(v), f(med["py", "cpu"]), f(med["py", "trace"]),
                                    f(med["py", "py-spy"]), f(med["py", "austin"]), spread("py")),
                    _yes(v <= 3.0)])
    at = (s.get("accuracy") or {}).get("table")
    r = _find(at, cond="sweep", rate=100)
    if r and r.get("error_pp"):
        v = _med(r["error_pp"])
        others = ", ".join("%s %s" % (k, _m(((_find(at, cond=k, rate=100) or {}).get("error_pp"))))
                           for k in ("trace", "py-spy", "austin"))
        more = ", ".join("%d Hz %s" % (hz, _m((_find(at, cond="sweep", rate=hz) or {})
                                              .get("error_pp"))) for hz in (200, 1000))
        out.append(["wall (sweep): <= 0.5 points on the burn/sleep/lock cycle at 100 Hz",
                    "%.2f points (%s; at 100 Hz %s)" % (v, more, others), _yes(v <= 0.5)])
    errs = [(hz, _med((_find(at, cond="sweep", rate=hz) or {}).get("thread_err_pct")))
            for hz in (100, 200, 1000)]
    errs = [(hz, v) for hz, v in errs if v is not None]
    if errs:
        worst = max(v for _, v in errs)
        out.append(["wall (sweep): each thread's wall total within 1% of its own clock",
                    ", ".join("%.2f%% at %d Hz" % (v, hz) for hz, v in errs)
                    + " (100 Hz: " + ", ".join(
                        "%s %s" % (k, _m((_find(at, cond=k, rate=100) or {}).get("thread_err_pct"),
                                         "%.2f%%")) for k in ("trace", "py-spy", "austin")) + ")",
                    _yes(worst <= 1.0)])
    ct = (s.get("cost") or {}).get("table")
    for mode in ("block", "sleep"):
        r = _find(ct, cond="sweep", threads=100, mode=mode)
        if r and r.get("total_cpu_pct"):
            v = _med(r["total_cpu_pct"])
            others = ", ".join("%s %s" % (k, _m((_find(ct, cond=k, threads=100, mode=mode) or {})
                                                .get("total_cpu_pct"), "%.2f%%"))
                               for k in ("trace", "py-spy", "austin"))
            out.append(["wall (sweep): sampler <= 1%% of a core at 100 Hz, 100 threads %s"
                        % ("blocked" if mode == "block" else "sleeping 50 ms in a loop"),
                        "%.2f%% (process %s + BPF %s; %s)"
                        % (v, _m(r["process_cpu_pct"], "%.2f%%"), _m(r["bpf_outside_pct"], "%.2f%%"),
                           others), _yes(v <= 1.0)])
    ag = _find((s.get("agent") or {}).get("rows"), cond="sweep")
    if ag and ag.get("total_cpu_pct") is not None:
        tr = _find(s["agent"]["rows"], cond="trace") or {}
        cpu = _find(s["agent"]["rows"], cond="cpu") or {}
        out.append(["wall (sweep): agent <= 0.5%% of a core, %d processes" % s["agent"]["processes"],
                    "%.2f%% (process %.2f%% + BPF %.2f%%; trace %s, --mode cpu %s)"
                    % (ag["total_cpu_pct"], ag["process_cpu_pct"], ag["bpf_outside_pct"],
                       "%.2f%%" % tr["total_cpu_pct"] if tr.get("total_cpu_pct") is not None
                       else "n/a",
                       "%.2f%%" % cpu["total_cpu_pct"] if cpu.get("total_cpu_pct") is not None
                       else "n/a"), _yes(ag["total_cpu_pct"] <= 0.5)])
    return out
