"""Fifty threads all spinning in spin_worker.

usage: threads50.py SECONDS [RESULT_JSON] [NTHREADS]

Every thread runs the same function; the main thread only waits in join().
Writes JSON with each thread's native id (threading.get_native_id, 3.8+),
the hot line and each thread's own thread_time.
"""
import json
import re
import sys
import threading
import time
from time import thread_time


def spin_worker(shared, index):
    shared["record"][index] = {"tid": threading.get_native_id()}
    shared["gate"].wait()
    deadline = shared["deadline"]
    x = 0
    while time.monotonic() < deadline:
        for i in range(500): x += i * i  # HOT:spin
    shared["record"][index]["cpu"] = thread_time()
    return x


def hot_line(tag):
    with open(__file__) as f:
        for lineno, text in enumerate(f, 1):
            if re.search(r"#\sHOT:" + tag + r"\s*$", text):
                return lineno
    raise LookupError(tag)


def main(seconds, nthreads):
    shared = {"record": [None] * nthreads, "gate": threading.Barrier(nthreads + 1)}
    threads = [threading.Thread(target=spin_worker, args=(shared, i), name="spin-%02d" % i)
               for i in range(nthreads)]
    for t in threads:
        t.start()
    # Set before the main thread passes the gate, so before any worker reads it.
    shared["deadline"] = time.monotonic() + seconds
    shared["gate"].wait()
    for t in threads:
        t.join()
    return shared["record"]


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    nthreads = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    record = main(seconds, nthreads)
    text = json.dumps({"threads": record, "hot_line": hot_line("spin")})
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
