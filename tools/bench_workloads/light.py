"""A mostly idle Python process: burns BURN_MS in light_burn every PERIOD_MS.

usage: light.py SECONDS [BURN_MS] [PERIOD_MS]

Prints "ready PID" at start.  Two hundred of these make the host-wide
start-up benchmark.
"""
import os
import sys
import time
from time import thread_time


def light_burn(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(200): x += i * i
    return x


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    burn = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.001
    period = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.2
    print("ready %d" % os.getpid(), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        light_burn(burn)
        time.sleep(period)
