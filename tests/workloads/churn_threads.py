"""Create and join short threads in a loop, as fast as it can.

usage: churn_threads.py SECONDS [WIDTH]

Prints "ready", waits for a line on stdin, then for SECONDS starts WIDTH
threads at a time (each runs thread_work briefly) and joins them.  Prints
"done N" with the number of threads it ran, then stays alive, blocked on
stdin, until stdin closes: the profiler can be asked what it still holds
for threads that are gone while their process lives on.
"""
import sys
import threading
import time


def thread_work():
    x = 0
    for i in range(200):
        x += i * i
    return x


def churn(seconds, width):
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        threads = [threading.Thread(target=thread_work) for _ in range(width)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        n += width
    return n


if __name__ == "__main__":
    seconds = float(sys.argv[1])
    width = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    print("ready", flush=True)
    sys.stdin.readline()
    print("done %d" % churn(seconds, width), flush=True)
    sys.stdin.read()
