"""A script whose last act is a sleep; then it exits.

usage: last_sleep.py SECONDS

The sleep's code objects are freed microseconds after it ends, and the
process exits: the profiler reads them after they are gone.
"""
import sys
import time


def last_wait(seconds):
    time.sleep(seconds)


# burn 0.1 s first, so the profiler knows the process is Python (user
# space reads its binary) before the sleep begins: the tracer takes a
# block's stack as it begins, and this script has no later walk to take
# it at
t = time.perf_counter()
while time.perf_counter() - t < 0.1:
    pass
last_wait(float(sys.argv[1]))
