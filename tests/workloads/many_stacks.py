"""Many distinct stacks: what makes an agent's exports and files big.

usage: many_stacks.py NFUNCS DEPTH NAMELEN

Compiles NFUNCS functions with distinct names NAMELEN characters long,
prints "ready", then until killed calls random chains of DEPTH of them,
each chain ending in about a millisecond of CPU: at a high sampling rate
nearly every sample is a stack not seen before.
"""
import random
import sys
from time import thread_time

SOURCE = """def {name}(path, i):
    if i < len(path):
        return path[i](path, i + 1)
    return burn()
"""


def burn():
    start = thread_time()
    x = 0
    while thread_time() - start < 0.001:
        for i in range(100): x += i
    return x


def main():
    nfuncs, depth, namelen = (int(a) for a in sys.argv[1:4])
    ns = {"burn": burn}
    funcs = []
    for k in range(nfuncs):
        name = ("f%05d_" % k).ljust(namelen, "x")
        exec(compile(SOURCE.format(name=name), "gen_%05d.py" % k, "exec"), ns)
        funcs.append(ns[name])
    rng = random.Random(99)
    print("ready", flush=True)
    while True:
        path = [rng.choice(funcs) for _ in range(depth)]
        path[0](path, 1)


if __name__ == "__main__":
    main()
