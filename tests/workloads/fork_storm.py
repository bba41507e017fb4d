"""Start COUNT short Python processes by fork, as fast as WORKERS forking
processes can: each child runs a function named after its own pid for
about a millisecond, then exits.  Forked children are Python processes
like any other (BPF configures them from their parent at fork), and cost
a millisecond where an exec costs fifteen, so ten thousand fit in a test.

usage: fork_storm.py COUNT WORKERS

Prints how many ran and how long it took.
"""
import os
import sys
import time


def child():
    n = os.getpid()
    exec("def p%d():\n    for i in range(20000): pass\np%d()" % (n, n))
    os._exit(0)


def forker(n):
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            child()
        os.waitpid(pid, 0)
    os._exit(0)


if __name__ == "__main__":
    count, workers = int(sys.argv[1]), int(sys.argv[2])
    t0 = time.monotonic()
    kids = []
    for w in range(workers):
        pid = os.fork()
        if pid == 0:
            forker(count // workers + (w < count % workers))
        kids.append(pid)
    ok = all(os.waitpid(k, 0)[1] == 0 for k in kids)
    print("ran %d in %.1f s" % (count if ok else 0, time.monotonic() - t0), flush=True)
    sys.exit(0 if ok else 1)
