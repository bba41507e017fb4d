"""CPU-bound pure-Python throughput, single- or multi-threaded.

usage: throughput.py SECONDS THREADS WARMUP

A fixed set of small pure-Python kernels in the spirit of pyperformance
(recursive fib, n-body floats, a word count over dicts and strings, a sort
with a key function, a generator pipeline, a small object-graph walk),
each a "unit" of 0.1 to 0.3 ms.  THREADS threads run units round-robin
over the kernels and count them.

Prints "ready PID" (flushed), then waits for one line on stdin, so that a
profiler can attach first.  Then it runs for SECONDS; the units completed
after WARMUP seconds are the throughput.  Prints one JSON line:
{"units": N, "window": SECONDS_MEASURED, "rate": N/window, "cpu": ...}, and
exits at the next line on stdin (or its end).
"""
import json
import os
import sys
import threading
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def kernel_fib():
    return fib(15)


BODIES = [[1.0, 0.0, 0.0, 0.0, 0.01, 0.0, 1.0], [0.0, 1.0, 0.0, -0.01, 0.0, 0.0, 0.5],
          [-1.0, 0.0, 0.5, 0.0, -0.01, 0.0, 0.3], [0.0, -1.0, -0.5, 0.01, 0.0, 0.0, 0.2],
          [0.5, 0.5, 0.5, 0.0, 0.0, 0.01, 0.1]]


def kernel_nbody(steps=40):
    bodies = [list(b) for b in BODIES]
    dt = 0.01
    for _ in range(steps):
        for i in range(len(bodies)):
            bi = bodies[i]
            for j in range(i + 1, len(bodies)):
                bj = bodies[j]
                dx, dy, dz = bi[0] - bj[0], bi[1] - bj[1], bi[2] - bj[2]
                d2 = dx * dx + dy * dy + dz * dz + 0.01
                mag = dt / (d2 * d2 ** 0.5)
                bi[3] -= dx * bj[6] * mag
                bi[4] -= dy * bj[6] * mag
                bi[5] -= dz * bj[6] * mag
                bj[3] += dx * bi[6] * mag
                bj[4] += dy * bi[6] * mag
                bj[5] += dz * bi[6] * mag
        for b in bodies:
            b[0] += dt * b[3]
            b[1] += dt * b[4]
            b[2] += dt * b[5]
    return bodies[0][0]


WORDS = ("the quick brown fox jumps over the lazy dog and then some more words "
         "appear here so that the dictionary has a few entries to count").split()


def kernel_words():
    counts = {}
    text = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(300))
    for w in text.split():
        w = w.upper().lower()
        counts[w] = counts.get(w, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def kernel_sort():
    data = [((i * 7919) % 1009, str(i)) for i in range(400)]
    data.sort(key=lambda t: (t[0] % 17, t[1]))
    return data[0]


def kernel_gen():
    return sum(x * x for x in range(3000) if x % 3)


class Node:
    __slots__ = ("value", "children")

    def __init__(self, value):
        self.value = value
        self.children = []


def build(depth, width, counter):
    node = Node(counter[0])
    counter[0] += 1
    if depth:
        node.children = [build(depth - 1, width, counter) for _ in range(width)]
    return node


def walk(node):
    total = node.value
    for c in node.children:
        total += walk(c)
    return total


def kernel_tree():
    return walk(build(5, 3, [0]))


KERNELS = [kernel_fib, kernel_nbody, kernel_words, kernel_sort, kernel_gen, kernel_tree]


def worker(state, index):
    count = 0
    kernels = KERNELS
    n = len(kernels)
    k = index
    while not state["stop"]:
        kernels[k % n]()
        k += 1
        count += 1
        state["counts"][index] = count


def main(seconds, nthreads, warmup):
    state = {"stop": False, "counts": [0] * nthreads}
    threads = [threading.Thread(target=worker, args=(state, i), name="bench-%d" % i)
               for i in range(nthreads)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(warmup)
    c0, w0, cpu0 = sum(state["counts"]), time.monotonic(), time.process_time()
    time.sleep(max(0.0, seconds - (w0 - t0)))
    c1, w1, cpu1 = sum(state["counts"]), time.monotonic(), time.process_time()
    state["stop"] = True
    for t in threads:
        t.join()
    return {"units": c1 - c0, "window": w1 - w0, "rate": (c1 - c0) / (w1 - w0),
            "cpu": cpu1 - cpu0, "threads": nthreads}


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    warmup = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    print("ready %d" % os.getpid(), flush=True)
    sys.stdin.readline()
    print(json.dumps(main(seconds, nthreads, warmup)), flush=True)
    sys.stdin.readline()  # stay until told, so a profiler's CPU can be read while we live
