"""Two Python threads handing one item back and forth through queue.Queue.

usage: queue_pingpong.py SECONDS [CPU]

Every hand-off wakes the other thread through a condition variable (a
futex), so each round trip is at least two context switches of Python
threads: the Python counterpart of a pipe ping-pong.  Prints "ready PID",
waits for a line on stdin so that a profiler can attach first, runs
SECONDS and prints {"round_trips": N, "wall": S, "rate": N/S}.  With CPU,
both threads run there (as switcher.c's ping-pong does).
"""
import json
import os
import queue
import sys
import threading
import time


def echo(ping, pong):
    while True:
        item = ping.get()
        if item is None:
            return
        pong.put(item)


def main():
    seconds = float(sys.argv[1])
    if len(sys.argv) > 2:
        os.sched_setaffinity(0, {int(sys.argv[2])})
    ping, pong = queue.Queue(), queue.Queue()
    t = threading.Thread(target=echo, args=(ping, pong), name="echo")
    t.start()
    print("ready %d" % os.getpid(), flush=True)
    sys.stdin.readline()
    n = 0
    t0 = time.monotonic()
    t1 = t0
    while t1 - t0 < seconds:
        for _ in range(64):
            ping.put(1)
            pong.get()
        n += 64
        t1 = time.monotonic()
    ping.put(None)
    t.join()
    print(json.dumps({"round_trips": n, "wall": t1 - t0, "rate": n / (t1 - t0)}), flush=True)


if __name__ == "__main__":
    main()
