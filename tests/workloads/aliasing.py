"""Periodic work whose cycle equals the sampling period.

usage: aliasing.py SECONDS PERIOD_MS [RESULT_JSON]

Every cycle of PERIOD_MS, aligned to the monotonic clock, spends its first
half in phase_a() and its second half in phase_b(), so each gets half of
the CPU time.  A sampler with a fixed period equal to the cycle lands in
the same phase every time; one with random intervals sees 50/50.  Pinned
to one CPU so migration between CPUs' timers cannot blur the phase.
"""
import json
import os
import sys
from time import perf_counter, thread_time


def phase_a(until):
    while perf_counter() < until:
        pass


def phase_b(until):
    while perf_counter() < until:
        pass


def main(seconds, period):
    spent = {"phase_a": 0.0, "phase_b": 0.0}
    start = perf_counter()
    k = 0
    while perf_counter() - start < seconds:
        t = start + k * period
        t0 = thread_time()
        phase_a(t + period / 2)
        t1 = thread_time()
        phase_b(t + period)
        t2 = thread_time()
        spent["phase_a"] += t1 - t0
        spent["phase_b"] += t2 - t1
        k += 1
    return spent


if __name__ == "__main__":
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    seconds = float(sys.argv[1])
    period = float(sys.argv[2]) / 1000.0
    text = json.dumps({"seconds": main(seconds, period)})
    if len(sys.argv) > 3 and sys.argv[3] != "-":
        with open(sys.argv[3], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
