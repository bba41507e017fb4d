"""Fifty threads in three groups with different duty cycles; ground truth
per function from each thread's own time.thread_time.

usage: threads_ratio.py SECONDS [RESULT_JSON] [NTHREADS]

Thread i runs group_a (i % 5 in 0, 1: always busy), group_b (i % 5 in 2, 3:
busy 4 ms, asleep 4 ms) or group_c (i % 5 == 4: busy 1 ms, asleep 6 ms).
The CPU each group got is the sum of its threads' thread_time (taken inside
the thread, so the GIL waits do not count).  Writes JSON with the seconds
per function and the hot line of each.
"""
import json
import re
import sys
import threading
import time
from time import thread_time


def group_a(deadline, out, i):
    t0 = thread_time()
    x = 0
    while time.monotonic() < deadline:
        for j in range(300): x += j * j  # HOT:a
    out[i] = ("group_a", thread_time() - t0)


def group_b(deadline, out, i):
    t0 = thread_time()
    x = 0
    while time.monotonic() < deadline:
        stop = thread_time() + 0.004
        while thread_time() < stop:
            for j in range(300): x += j * j  # HOT:b
        time.sleep(0.004)
    out[i] = ("group_b", thread_time() - t0)


def group_c(deadline, out, i):
    t0 = thread_time()
    x = 0
    while time.monotonic() < deadline:
        stop = thread_time() + 0.001
        while thread_time() < stop:
            for j in range(300): x += j * j  # HOT:c
        time.sleep(0.006)
    out[i] = ("group_c", thread_time() - t0)


def marker_lines():
    lines = {}
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"#\sHOT:(\w+)\s*$", text)
            if m:
                lines["group_" + m.group(1)] = n
    return lines


def main(seconds, nthreads):
    out = [None] * nthreads
    deadline = time.monotonic() + seconds
    funcs = [group_a, group_a, group_b, group_b, group_c]
    threads = [threading.Thread(target=funcs[i % 5], args=(deadline, out, i), name="w%02d" % i)
               for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spent = {"group_a": 0.0, "group_b": 0.0, "group_c": 0.0}
    for name, secs in out:
        spent[name] += secs
    return spent


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    nthreads = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    text = json.dumps({"seconds": main(seconds, nthreads), "lines": marker_lines()})
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
