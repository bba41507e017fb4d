"""NTHREADS threads, all spinning, all blocked or all sleeping in a loop.

usage: many_threads.py SECONDS NTHREADS [spin|block|sleep]

spin (the default): each runs thread_spin, a hot loop.  block: each waits
on one Event until the end (thread_block), as a pool's idle workers do.
sleep: each sleeps 50 ms in a loop (thread_nap), so NTHREADS x 20 wake-ups
a second.  Prints "ready PID" once every thread has started (all threads
then run until SECONDS after that).  Prints a JSON line with the hot line
and the threads' native ids at the end.
"""
import json
import os
import sys
import threading
import time


def thread_spin(deadline, ready):
    ready.wait()
    x = 0
    while time.monotonic() < deadline[0]:
        for i in range(300): x += i * i  # HOT:spin
    return x


def thread_block(deadline, ready):
    ready.wait()
    ready.stop.wait(max(0.0, deadline[0] - time.monotonic()))


def thread_nap(deadline, ready):
    ready.wait()
    while time.monotonic() < deadline[0]:
        time.sleep(0.05)


def hot_line():
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# HOT:spin"):
                return n


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    body = {"spin": thread_spin, "block": thread_block,
            "sleep": thread_nap}[sys.argv[3] if len(sys.argv) > 3 else "spin"]
    threading.stack_size(256 * 1024)
    deadline = [time.monotonic() + 3600]
    ready = threading.Event()
    ready.stop = threading.Event()
    threads = [threading.Thread(target=body, args=(deadline, ready), name="t%03d" % i)
               for i in range(nthreads)]
    for t in threads:
        t.start()
    deadline[0] = time.monotonic() + seconds
    ready.set()
    print("ready %d" % os.getpid(), flush=True)
    for t in threads:
        t.join()
    print(json.dumps({"hot_line": hot_line(), "tids": [t.native_id for t in threads]}), flush=True)
