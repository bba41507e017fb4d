"""One function sleeping at one line, reached through two lines of each
of its two callers: four stacks that differ only in a caller's line.
Each time g() and f() are called again their frames are pushed where
the last ones were (3.11+: the same slot of the data stack; up to 3.10,
the code object's zombie frame), with the same code and instruction, so
only the callers' lines tell the stacks apart: the tracer must not
reuse the stack of the last switch out because its top frames match.

usage: caller_lines.py ROUNDS
"""
import sys
import time


def g():
    time.sleep(0.002)


def f(n):
    for _ in range(n):
        g()     # f first
    for _ in range(n):
        g()     # f second


def h(n):
    f(n)        # h first
    f(n)        # h second


if __name__ == "__main__":
    h(int(sys.argv[1]))
