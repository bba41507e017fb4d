"""A script whose last act is a sleep; then it exits.

usage: last_sleep.py SECONDS

A blocked interval's stack is taken when it ends, here microseconds
before the module's code object is freed and the process exits: the
profiler reads the code objects after they are gone.
"""
import sys
import time


def last_wait(seconds):
    time.sleep(seconds)


last_wait(float(sys.argv[1]))
