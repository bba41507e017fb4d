"""Deterministic work whose output is a checksum of everything it built.

usage: checksum.py ITERATIONS

Builds lists, dicts, bytearrays and strings, mutates them for ITERATIONS
rounds in two threads (joined in order, so the result does not depend on
scheduling), compiles and frees a function each round (so a profiler's
code-dealloc uprobe fires) and prints one line per phase and a SHA-256 of
the final state.  Run with and without a profiler, its output must be the
same: a profiler that wrote into it would show here.
"""
import hashlib
import random
import sys
import threading


def mutate(seed, rounds, out):
    rng = random.Random(seed)
    data = bytearray(rng.randbytes(4096)) if hasattr(rng, "randbytes") else \
        bytearray(rng.getrandbits(8) for _ in range(4096))
    table = {i: str(i) * 3 for i in range(512)}
    items = list(range(1024))
    for r in range(rounds):
        i = rng.randrange(len(data))
        data[i] = (data[i] * 31 + r) & 0xff
        key = rng.randrange(512)
        table[key] = table[key][1:] + chr(65 + r % 26)
        rng.shuffle(items)
        items[r % len(items)] ^= r
        # a new code object each round, freed at the end of it
        ns = {}
        exec("def f_%d(x):\n    return x * %d + %d\n" % (r % 7, r, seed), ns)
        items[0] = ns["f_%d" % (r % 7)](items[0]) & 0xffffffff
    h = hashlib.sha256(bytes(data))
    for k in sorted(table):
        h.update(table[k].encode())
    h.update(repr(items).encode())
    out[seed] = h.hexdigest()


def main(rounds):
    out = {}
    for phase in range(3):
        threads = [threading.Thread(target=mutate, args=(phase * 10 + t, rounds, out))
                   for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("phase %d: %s" % (phase, " ".join(out[phase * 10 + t][:16] for t in range(2))))
    total = hashlib.sha256("".join(out[k] for k in sorted(out)).encode())
    print("checksum %s" % total.hexdigest())


if __name__ == "__main__":
    main(int(sys.argv[1]))
