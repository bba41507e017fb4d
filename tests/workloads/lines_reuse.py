"""One function name, two bodies, compiled and freed in turn.

usage: lines_reuse.py SECONDS RESULT_JSON

Each round compiles fn in "<gen>", with its first line on line 1 either
way, but its hot loop on line 5 (variant A) or line 7 (variant B): the
same name, file and first line, other line tables.  The code object is
freed after each round, so the next one often gets its address.  Writes
the thread_time spent in each variant.
"""
import json
import random
import sys
from time import thread_time

SOURCE = """def fn(budget):
    start = thread_time()
    x = 0
{pad}    while thread_time() - start < budget:
        for i in range(1000): x += i * i
    return x
"""
HOT = {"A": 5, "B": 7}   # the inner loop's line


def make(variant):
    code = compile(SOURCE.format(pad="\n" * (HOT[variant] - 5)), "<gen>", "exec")
    ns = {"thread_time": thread_time}
    exec(code, ns)
    return ns.pop("fn")


if __name__ == "__main__":
    seconds, out = float(sys.argv[1]), sys.argv[2]
    rng = random.Random(99)
    spent = {"A": 0.0, "B": 0.0}
    begin = thread_time()
    while thread_time() - begin < seconds:
        variant = "A" if rng.random() < 0.6 else "B"
        fn = make(variant)
        t0 = thread_time()
        fn(rng.uniform(0.001, 0.005))
        spent[variant] += thread_time() - t0
        del fn
    with open(out, "w") as f:
        json.dump({"seconds": spent, "hot": HOT}, f)
