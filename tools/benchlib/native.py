"""The native section of tools/bench (issue #29, docs/BENCHMARKS.md):
what --native costs a sample by the native frames walked, what the
sampler costs with two busy targets against Python alone and py-spy
--native, how many walks reach the thread's first frame, and what the
unwind tables of a host's binaries take."""
import os
import re
import subprocess
import time

from . import common, profilers
from .common import REPO, log, summarize

BURN_SRC = os.path.join(REPO, "tests", "workloads", "native", "burn.c")
TABLES = os.path.join(REPO, ".output", "native-tables")


def _libburn(ctx):
    lib = os.path.join(ctx.outdir, "libburn.so")
    if not os.path.exists(lib):
        subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-shared", "-fPIC", BURN_SRC,
                        "-o", lib], check=True)
    return lib


def _targets(ctx, lib, depth, n, seconds):
    argv = [ctx.python, ctx.wl("native_burn.py"), lib, depth, seconds]
    return [common.start_ready(argv) for _ in range(n)]


def _stop(wls):
    for p, _ in wls:
        if p.poll() is None:
            common.kill_group(p)
            p.wait()


def _native_frames(folded):
    """Native frames of the heaviest stack of a --native-all profile: every
    frame that is neither Python's (name (file:line)) nor a pseudo-frame."""
    best, weight = [], -1
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack and int(count) > weight:
                best, weight = stack.split(";"), int(count)
    return sum(1 for fr in best if fr.endswith("]") and not fr.startswith("["))


def per_frame(ctx, lib, seconds):
    """BPF time of pysight_on_cpu a sample at several native depths, with
    and without --native (one busy target, 997 Hz, bpf_stats on)."""
    out = []
    for depth in (0, 10, 40, 100):
        for native in (["--native-all"], []):
            wls = _targets(ctx, lib, depth, 1, seconds + 10)
            try:
                run = profilers.attach("pysight", [wls[0][0].pid], 997, ctx.outdir,
                                       ctx.tag("native-frames"), extra=native)
                run.wait_ready()
                progs, _ = common.prog_ids_for(run.procs[0].pid)
                time.sleep(1)
                st0 = common.prog_stats(progs)
                time.sleep(seconds)
                st1 = common.prog_stats(progs)
                run.stop()
                run.wait(60)
            finally:
                _stop(wls)
            on = [i for i in st1 if st1[i]["name"] == "pysight_on_cpu" and i in st0]
            ns = sum(st1[i]["run_time_ns"] - st0[i]["run_time_ns"] for i in on)
            cnt = sum(st1[i]["run_cnt"] - st0[i]["run_cnt"] for i in on)
            row = {"depth": depth, "native": bool(native), "runs": cnt,
                   "us_per_run": ns / 1e3 / cnt if cnt else None}
            if native:
                row["frames"] = _native_frames(run.out_files[0])
            log("native per frame: %s" % row)
            out.append(row)
    return out


def sampler_cost(ctx, lib, seconds, rounds):
    """Two busy targets calling native code, 100 Hz: the sampler's CPU
    (process + BPF for pysight) with and without --native, and py-spy
    --native's, in alternating rounds."""
    res = {"pysight": [], "pysight --native": [], "py-spy --native": []}
    for r in range(rounds):
        for tool in list(res):
            wls = _targets(ctx, lib, 5, 2, seconds + 15)
            pids = [p.pid for p, _ in wls]
            try:
                if tool.startswith("pysight"):
                    run = profilers.attach("pysight", pids, 100, ctx.outdir,
                                           ctx.tag("native-cost"),
                                           extra=["--native"] if "native" in tool else [])
                else:
                    procs, readers, outs = [], [], []
                    for i, pid in enumerate(pids):
                        o = os.path.join(ctx.outdir, "%s-%d.raw" % (ctx.tag("pyspy-native"), i))
                        argv = [profilers.PYSPY, "record", "--native", "-r", 100, "-f", "raw",
                                "-o", o, "-p", pid]
                        p, rd = profilers._start("py-spy", argv, o)
                        procs.append(p)
                        readers.append(rd)
                        outs.append(o)
                    run = profilers.Running("py-spy", procs, readers, outs, [])
                run.wait_ready()
                progs = common.prog_ids_for(run.procs[0].pid)[0] if "pysight" in tool else {}
                time.sleep(1)
                st0 = common.prog_stats(progs) if progs else {}
                c0, t0 = run.cpu_reading(), time.monotonic()
                time.sleep(seconds)
                c1, t1 = run.cpu_reading(), time.monotonic()
                st1 = common.prog_stats(progs) if progs else {}
                run.stop()
                run.wait(60)
            finally:
                _stop(wls)
            d = run.cpu_delta_ns(c0, c1)
            bpf = sum(st1[i]["run_time_ns"] - st0[i]["run_time_ns"] for i in st1 if i in st0)
            row = {"round": r, "process": d / 1e9 / (t1 - t0) if d is not None else None,
                   "bpf": bpf / 1e9 / (t1 - t0)}
            row["total"] = (row["process"] or 0) + row["bpf"]
            if tool == "pysight --native":
                m = re.search(r"native: (\d+) stacks walked, ([\d.]+)% to their thread's first "
                              r"frame", run.stderr)
                row["walked"], row["whole_pct"] = (int(m.group(1)), float(m.group(2))) if m \
                    else (None, None)
            if tool == "py-spy --native":
                row["errors"] = [profilers.parse_pyspy_stderr(rd.text) for rd in run.readers]
            log("native cost %s: %s" % (tool, row))
            res[tool].append(row)
    return {k: {"rows": v, "total": summarize([x["total"] for x in v]),
                "process": summarize([x["process"] for x in v]),
                "bpf": summarize([x["bpf"] for x in v])} for k, v in res.items()}


def tables(ctx):
    """Unwind rows and names of the host's ELF files, by tools/native-tables."""
    subprocess.run(["make", "-C", REPO, "-s", ".output/native-tables"], check=True)
    found = subprocess.run("find /usr /opt -xdev -type f -size +20k 2>/dev/null | "
                           "xargs file -L 2>/dev/null | grep -E 'ELF 64-bit.*(shared object|"
                           "executable)' | cut -d: -f1", shell=True, capture_output=True,
                           text=True).stdout.split()
    seen, files = set(), []
    for path in found:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            files.append((st.st_size, path))
    files.sort(reverse=True)

    def measure(paths):
        out = subprocess.run([TABLES], input="\n".join(paths) + "\n", capture_output=True,
                             text=True, check=True).stdout
        rows = rb = nb = 0
        ms = 0.0
        n = 0
        for line in out.splitlines():
            f = line.rsplit(" ", 4)
            n += 1
            rows += int(f[1])
            rb += int(f[2])
            nb += int(f[3])
            ms += float(f[4])
        return {"binaries": n, "rows": rows, "row_bytes": rb, "name_bytes": nb, "read_ms": ms}
    mid = len(files) // 2
    return {"files": len(files),
            "largest_50": measure([p for _, p in files[:50]]),
            "largest_500": measure([p for _, p in files[:500]]),
            "median_500": measure([p for _, p in files[max(0, mid - 250):mid + 250]])}


def section_native(ctx):
    seconds = 3 if ctx.quick else 8
    lib = _libburn(ctx)
    res = {}
    with common.BpfStats():
        res["per_frame"] = per_frame(ctx, lib, seconds)
        res["cost"] = sampler_cost(ctx, lib, seconds, 1 if ctx.quick else ctx.args.rounds)
    res["tables"] = tables(ctx)
    return res
