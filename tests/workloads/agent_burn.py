"""Ground truth for the agent: CPU in two functions, 3:1 by time, in one
thread of a known name, for as long as the test says.

usage: agent_burn.py RESULT_JSON [DUTY] [MAX_CPU_SECONDS]

Starts a thread named "burner" (its OS name too, so a profiler reading
comm sees it), prints "ready PID TID" and waits for a line on stdin; then
the thread burns CPU in heavy() and light(), interleaved slices of random
length about 3:1 by time, idling between slices so that it is busy DUTY
of the time (default 1), until a second line (or EOF) on stdin or
MAX_CPU_SECONDS (default 120) of CPU.  Each slice is timed with
time.thread_time by the caller, so the split is the workload's own
measurement.  Writes one JSON object to RESULT_JSON: seconds per
function, the line of each hot loop, the thread's native id, and a
timeline of the thread's CPU time (wall clock ns, CPU seconds since go,
every 20 ms or so) to count what any span of time should hold.  Stays
3.8-compatible.
"""
import json
import os
import random
import re
import sys
import threading
import time
from time import thread_time


def heavy(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(500): x += i * i  # HOT:heavy
    return x


def light(budget):
    start = thread_time()
    x = 0
    while thread_time() - start < budget:
        for i in range(500): x += i * i  # HOT:light
    return x


def marker_lines():
    pattern = re.compile(r"#\s(HOT):(\w+)\s*$")
    lines = {}
    with open(__file__) as f:
        for lineno, text in enumerate(f, 1):
            m = pattern.search(text)
            if m:
                lines[m.group(2)] = lineno
    return lines


def set_comm(name):
    try:
        with open("/proc/self/task/%d/comm" % threading.get_native_id(), "w") as f:
            f.write(name)
    except OSError:
        pass


class Burner(threading.Thread):
    def __init__(self, duty, max_cpu):
        super().__init__(name="burner", daemon=True)
        self.duty, self.max_cpu = duty, max_cpu
        self.go, self.stop, self.named = threading.Event(), threading.Event(), threading.Event()
        self.spent = {"heavy": 0.0, "light": 0.0}
        self.tid = 0
        self.timeline = []      # (wall clock ns, CPU seconds since go)

    def run(self):
        set_comm("burner")
        self.tid = threading.get_native_id()
        self.named.set()
        self.go.wait()
        rng = random.Random(4321)
        weights = {"heavy": 0.75, "light": 0.25}
        funcs = {"heavy": heavy, "light": light}
        begin = thread_time()
        self.timeline.append((time.time_ns(), 0.0))
        while not self.stop.is_set() and thread_time() - begin < self.max_cpu:
            order = list(weights)
            rng.shuffle(order)
            for name in order:
                budget = weights[name] * 0.010 * rng.uniform(0.2, 1.8)
                t0 = thread_time()
                funcs[name](budget)
                took = thread_time() - t0
                self.spent[name] += took
                now = time.time_ns()
                if now - self.timeline[-1][0] >= 20000000:
                    self.timeline.append((now, thread_time() - begin))
                if self.duty < 1:
                    time.sleep(took * (1 - self.duty) / self.duty)
        self.timeline.append((time.time_ns(), thread_time() - begin))


def main():
    result = sys.argv[1]
    duty = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    max_cpu = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    b = Burner(duty, max_cpu)
    b.start()
    b.named.wait()
    print("ready %d %d" % (os.getpid(), b.tid), flush=True)
    sys.stdin.readline()
    b.go.set()
    sys.stdin.readline()
    b.stop.set()
    b.join()
    with open(result, "w") as f:
        json.dump({"seconds": b.spent, "lines": marker_lines(), "tid": b.tid,
                   "pid": os.getpid(), "timeline": b.timeline}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
