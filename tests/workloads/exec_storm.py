"""Start a program COUNT times, as fast as WORKERS threads can.

usage: exec_storm.py COUNT WORKERS PROGRAM [ARG...]

Prints how many ran and how long it took.
"""
import os
import sys
import threading
import time


def worker(n, argv):
    for _ in range(n):
        pid = os.posix_spawn(argv[0], argv, os.environ)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    count, workers, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(count // workers, argv))
               for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("ran %d in %.1f s" % (count // workers * workers, time.monotonic() - t0), flush=True)
