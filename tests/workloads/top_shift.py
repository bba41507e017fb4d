"""A process whose hot function changes halfway, for `top`.

usage: top_shift.py SECONDS MARKER

Burns SECONDS of thread_time in phase_one, then creates MARKER (so a
test knows when the change came), then burns SECONDS in phase_two.
Both burn in their own body, so each has own time, not a helper's.
"""
import sys
from time import thread_time


def phase_one(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        for i in range(500):
            x += i * i
    return x


def phase_two(seconds):
    end = thread_time() + seconds
    x = 0
    while thread_time() < end:
        for i in range(500):
            x += i * i
    return x


def main():
    seconds, marker = float(sys.argv[1]), sys.argv[2]
    phase_one(seconds)
    with open(marker, "w") as f:
        f.write("phase_two\n")
    phase_two(seconds)


if __name__ == "__main__":
    main()
