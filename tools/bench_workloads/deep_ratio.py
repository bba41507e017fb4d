"""The known-ratio workload, with every hot function DEPTH frames down.

usage: deep_ratio.py SECONDS [RESULT_JSON] [DEPTH] [WALL_LIMIT]

Like tests/workloads/ratio.py (about 50/30/20 by thread_time among
deep_a, deep_b and deep_c, in slices of random length and order), but each
slice is reached through DEPTH-3 frames of dive(), so a complete stack is
<module>, main, dive x (DEPTH-3), deep_X: DEPTH frames.  Writes JSON with the seconds per
function, the hot lines and the depth.  WALL_LIMIT (seconds) ends the run
early if a profiler slows it down that much; the shares stay exact.
"""
import json
import random
import re
import sys
import time
from time import thread_time


def deep_a(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(1000): x += i * i  # HOT:deep_a
    return x


def deep_b(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(1000): x += i * i  # HOT:deep_b
    return x


def deep_c(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(1000): x += i * i  # HOT:deep_c
    return x


def dive(n, fn, budget):
    if n > 0:
        return dive(n - 1, fn, budget)
    t0 = thread_time()
    fn(budget)
    return thread_time() - t0


def marker_lines():
    lines = {}
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"#\sHOT:(\w+)\s*$", text)
            if m:
                lines[m.group(1)] = n
    return lines


def main(seconds, depth, wall_limit):
    funcs = {"deep_a": deep_a, "deep_b": deep_b, "deep_c": deep_c}
    weights = {"deep_a": 0.5, "deep_b": 0.3, "deep_c": 0.2}
    spent = dict.fromkeys(funcs, 0.0)
    rng = random.Random(1234)
    begin = thread_time()
    wall_end = time.monotonic() + wall_limit
    while thread_time() - begin < seconds and time.monotonic() < wall_end:
        order = list(weights)
        rng.shuffle(order)
        for name in order:
            budget = weights[name] * 0.010 * rng.uniform(0.2, 1.8)
            spent[name] += dive(depth - 4, funcs[name], budget)
    return spent


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    wall_limit = float(sys.argv[4]) if len(sys.argv) > 4 else 1e9
    sys.setrecursionlimit(max(1000, depth + 200))
    t0 = time.monotonic()
    spent = main(seconds, depth, wall_limit)
    text = json.dumps({"seconds": spent, "lines": marker_lines(), "depth": depth,
                       "wall": time.monotonic() - t0})
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
