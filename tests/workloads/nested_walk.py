"""A stack of known shape, 23 frames deep, that burns 0.3 ms then sleeps
0.1 ms, for SECONDS: at 10 kHz perf samples walk it between the walks
the tracer takes as it leaves the CPU to sleep.

usage: nested_walk.py SECONDS
"""
import sys
import time

DEPTH = 20


def leaf():
    t = time.perf_counter()
    while time.perf_counter() - t < 0.0003:
        pass
    time.sleep(0.0001)


def level(d):
    if d == 0:
        return leaf()
    return level(d - 1)


if __name__ == "__main__":
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        level(DEPTH)
