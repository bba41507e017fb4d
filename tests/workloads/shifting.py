"""A service whose hot function changes between releases, for `diff`.

usage: shifting.py RELEASE SECONDS

Each round spends CPU time in parse() and render(): release "v1" gives
parse 70% and render 30%, release "v2" the other way round.  The split is
measured by thread_time, so it holds however busy the machine is.
"""
import sys
from time import thread_time

SPLIT = {"v1": (0.7, 0.3), "v2": (0.3, 0.7)}
ROUND = 0.05


def spin(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        for i in range(500):
            x += i * i
    return x


def parse(seconds):
    return spin(seconds)


def render(seconds):
    return spin(seconds)


def main():
    release, seconds = sys.argv[1], float(sys.argv[2])
    p, r = SPLIT[release]
    start = thread_time()
    while thread_time() - start < seconds:
        parse(ROUND * p)
        render(ROUND * r)


if __name__ == "__main__":
    main()
