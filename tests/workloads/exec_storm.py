"""Start a program COUNT times, as fast as WORKERS threads can.

usage: exec_storm.py [--seconds S] COUNT WORKERS PROGRAM [ARG...]

With --seconds, stops starting new ones after S seconds.  Prints how many
ran and how long it took.
"""
import os
import sys
import threading
import time


def worker(n, argv, deadline, ran):
    for _ in range(n):
        if time.monotonic() > deadline:
            break
        pid = os.posix_spawn(argv[0], argv, os.environ)
        os.waitpid(pid, 0)
        ran.append(1)


if __name__ == "__main__":
    args = sys.argv[1:]
    seconds = float("inf")
    if args[0] == "--seconds":
        seconds, args = float(args[1]), args[2:]
    count, workers, argv = int(args[0]), int(args[1]), args[2:]
    t0 = time.monotonic()
    ran = []
    threads = [threading.Thread(target=worker, args=(count // workers, argv, t0 + seconds, ran))
               for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("ran %d in %.1f s" % (len(ran), time.monotonic() - t0), flush=True)
