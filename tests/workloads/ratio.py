"""Ground-truth CPU split among three functions.

usage: ratio.py SECONDS [RESULT_JSON]

Burns CPU in alpha_work, Beta.beta_work and gamma_work in interleaved slices
of random length (about 50/30/20 by time; random lengths and order so that a
fixed sampling period cannot alias with the slices).  Each call is timed with
time.thread_time by the caller, so the shares are the workload's own
measurement.  Writes one JSON object (to RESULT_JSON, else stdout) with the
measured seconds per function, the line of each function's hot loop and the
line of the call in main().  Stays 3.8-compatible.
"""
import json
import random
import re
import sys
from time import thread_time


def alpha_work(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(1000): x += i * i  # HOT:alpha
    return x


class Beta:
    def beta_work(self, budget):
        start = thread_time()
        x = 0
        while thread_time() - start < budget:
            for i in range(1000): x += i * i  # HOT:beta
        return x


def gamma_work(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(1000): x += i * i  # HOT:gamma
    return x


def marker_lines():
    """Line numbers of the HOT/CALL marker comments in this file."""
    pattern = re.compile(r"#\s(HOT|CALL):(\w+)\s*$")
    lines = {}
    with open(__file__) as f:
        for lineno, text in enumerate(f, 1):
            m = pattern.search(text)
            if m:
                lines[m.group(1).lower() + "_" + m.group(2)] = lineno
    return lines


def main(seconds):
    beta = Beta()
    spent = {"alpha_work": 0.0, "beta_work": 0.0, "gamma_work": 0.0}
    weights = {"alpha_work": 0.5, "beta_work": 0.3, "gamma_work": 0.2}
    rng = random.Random(1234)
    begin = thread_time()
    while thread_time() - begin < seconds:
        order = list(weights)
        rng.shuffle(order)
        for name in order:
            # mean slice 10 ms * weight, uniformly spread over [0.2, 1.8] x mean
            budget = weights[name] * 0.010 * rng.uniform(0.2, 1.8)
            t0 = thread_time()
            if name == "alpha_work":
                alpha_work(budget)  # CALL:alpha
            elif name == "beta_work":
                beta.beta_work(budget)  # CALL:beta
            else:
                gamma_work(budget)  # CALL:gamma
            spent[name] += thread_time() - t0
    return spent


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    spent = main(seconds)
    result = {
        "seconds": spent,
        "lines": marker_lines(),
        "process_cpu": thread_time(),
        "version": list(sys.version_info[:2]),
    }
    text = json.dumps(result)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
