"""Many distinct stacks: random call paths through generated functions.

usage: many_stacks.py SECONDS [NFUNCS]

NFUNCS functions gen_0 ... gen_N are compiled with exec (each in its own
pseudo-file).  Each call picks the next function at random and calls it from
one of four lines, until a random depth of 4 to 19, where a loop of about
25 us runs.  Nearly every sample lands on a stack never seen before,
which is the sampler's worst case (every stack travels to user space with
its frames) and fills its maps.  Prints "ready PID".
"""
import os
import random
import sys
import time

TEMPLATE = '''def gen_{k}(path, i):
    if i == len(path):
        x = 0
        for j in range(500): x += j * j
        return x
    nxt, site = path[i]
    if site == 0:
        return FUNCS[nxt](path, i + 1)
    if site == 1:
        return FUNCS[nxt](path, i + 1)
    if site == 2:
        return FUNCS[nxt](path, i + 1)
    return FUNCS[nxt](path, i + 1)
'''


def make(nfuncs):
    funcs = []
    namespace = {"FUNCS": funcs}
    for k in range(nfuncs):
        exec(compile(TEMPLATE.format(k=k), "<gen_%d.py>" % k, "exec"), namespace)
        funcs.append(namespace["gen_%d" % k])
    return funcs


def run(seconds, nfuncs):
    funcs = make(nfuncs)
    rng = random.Random(os.getpid())
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        for _ in range(50):
            # one C call for the randomness: the time goes to the gen_ frames
            b = rng.getrandbits(256)
            path = [((b >> (10 * k + 4)) % nfuncs, (b >> (10 * k + 12)) & 3)
                    for k in range(4 + (b & 15))]
            funcs[path[0][0]](path, 1)
            n += 1
    return n


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    nfuncs = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    print("ready %d" % os.getpid(), flush=True)
    print("calls %d" % run(seconds, nfuncs), flush=True)
