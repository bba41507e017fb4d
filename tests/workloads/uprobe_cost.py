"""What one code-object dealloc costs: the hit of a profiler's uprobe on it.

usage: uprobe_cost.py N WAIT

Sleeps WAIT seconds (for a profiler to attach), then times N rounds of
CodeType.replace, each of which makes a new code object and frees the last
one (one call of PyCode_Type.tp_dealloc), best of 5.  Prints "NS ns".
"""
import sys
import time


def f():
    pass


def main(n, wait):
    code = f.__code__
    time.sleep(wait)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            code.replace(co_name="g")
        best = min(best, time.perf_counter() - t)
    print("%.1f ns" % (best / n * 1e9))


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
