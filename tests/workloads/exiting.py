"""A Python process that burns CPU in about_to_exit_work, then exits.

usage: exiting.py SECONDS

Prints "ready PID" (flushed) once the interpreter runs this script, so a
test can attach with -p, then burns CPU for SECONDS of thread_time and exits
with status 0 after printing its busy time.
"""
import os
import sys
from time import thread_time


def about_to_exit_work(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(1000): x += i * i
    return thread_time() - start


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    print("ready %d" % os.getpid(), flush=True)
    busy = about_to_exit_work(seconds)
    print("busy %.6f" % busy, flush=True)
