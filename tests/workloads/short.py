"""A short-lived process: 150 ms of CPU in short_lived_work, then exit.

usage: short.py [MILLISECONDS]

Prints one JSON line with the pid and the thread_time spent in
short_lived_work.
"""
import json
import os
import sys
from time import thread_time


def short_lived_work(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(1000): x += i * i
    return thread_time() - start


if __name__ == "__main__":
    ms = float(sys.argv[1]) if len(sys.argv) > 1 else 150.0
    busy = short_lived_work(ms / 1000.0)
    print(json.dumps({"pid": os.getpid(), "busy": busy}))
