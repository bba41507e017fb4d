"""A busy thread whose Python stack is exactly DEPTH frames deep.

usage: fixed_depth.py SECONDS DEPTH

<module> calls descend() DEPTH-2 times, then spin() burns CPU until SECONDS
of wall time have passed: DEPTH frames in all.  Prints "ready PID" once
spinning would start.  For measuring the sampler's cost per frame.
"""
import os
import sys
import time


def spin(deadline):
    x = 0
    while time.monotonic() < deadline:
        for i in range(1000): x += i * i  # HOT:spin
    return x


def descend(n, deadline):
    if n > 0:
        return descend(n - 1, deadline)
    return spin(deadline)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    sys.setrecursionlimit(max(1000, depth + 100))
    print("ready %d" % os.getpid(), flush=True)
    descend(max(0, depth - 3), time.monotonic() + seconds)
