"""Recursion 600 deep, then a hot leaf.

usage: recursion.py SECONDS [RESULT_JSON] [DEPTH]

recurse() calls itself until DEPTH frames of recurse() are on the stack, then
hot_leaf() burns CPU for SECONDS of thread_time.  Writes JSON with the depth
and the line numbers of the recursive call and of the hot loop.
"""
import json
import re
import sys
from time import thread_time


def hot_leaf(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(1000): x += i * i  # HOT:leaf
    return x


def recurse(depth, seconds):
    if depth > 1:
        return recurse(depth - 1, seconds)  # CALL:recurse
    return hot_leaf(seconds)  # CALL:leaf


def marker_lines():
    pattern = re.compile(r"#\s(HOT|CALL):(\w+)\s*$")
    lines = {}
    with open(__file__) as f:
        for lineno, text in enumerate(f, 1):
            m = pattern.search(text)
            if m:
                lines[m.group(1).lower() + "_" + m.group(2)] = lineno
    return lines


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + 200))
    recurse(depth, seconds)
    text = json.dumps({"depth": depth, "lines": marker_lines(), "cpu": thread_time()})
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
