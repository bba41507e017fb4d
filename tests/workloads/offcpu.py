"""Where time goes off the CPU, with the workload's own ground truth.

usage: offcpu.py SCENARIO SECONDS RESULT_JSON

Scenarios:
  cycle     one thread repeats: 20 ms burning CPU (burn_phase), 50 ms in
            time.sleep (sleep_phase), 30 ms blocked on a Lock another
            thread holds (lock_phase).  The holder sleeps while it holds.
  gil       two threads burn CPU (spin) for SECONDS: each waits for the
            GIL while the other holds it.
  io        a thread blocks in recv on a socketpair (wait_data) until the
            end; an asyncio loop idles in its selector (idle_loop).
  runqueue  three processes burn CPU pinned to CPU 0 (crowd), so each
            waits two thirds of its time for the CPU.
  queue     a thread blocks in queue.get() (wait_item) for SECONDS.
  nogil     one thread spins in Python (spin), another hashes in C with
            the GIL released (hash_loop): both on a CPU, one holding it.
  churn     threads that sleep 0.5 ms in a loop (nap), about 10,000
            sleeps a second in all, some threads exiting and new ones
            starting all along.
  pingpong  one thread (blocker) blocks 10,000 times a second for about
            20 us each: it burns CPU to the next 100 us mark (pace) and
            sleeps 20 us (short_wait), with a timer slack of 1 us.  Writes
            its waits and its own voluntary switches under "phases".
            (A pipe to a partner does not block as often: the partner,
            woken on the writer's CPU, preempts it, and the reply is
            there before the read.)
  crowd2000 2,000 threads: 1,990 wait on an Event (parked), 5 burn CPU
            (spin) and 5 sleep 10 ms in a loop (nap).  Runs until a line
            (or EOF) on stdin, after "ready"; 64 KiB thread stacks.

Prints "ready" when the threads run.  Writes per thread (by native id)
its name, its elapsed time from start to end and its thread_time, and per
phase the time spent, all measured here.
"""
import asyncio
import json
import os
import queue
import resource
import socket
import sys
import threading
import time
from time import monotonic, perf_counter, thread_time

threads = {}
lock = threading.Lock()
ready = threading.Barrier(1)


def record_thread(fn):
    def run(*args):
        t0, c0 = monotonic(), thread_time()
        try:
            fn(*args)
        finally:
            with lock:
                threads[threading.get_native_id()] = {
                    "name": threading.current_thread().name,
                    "elapsed": monotonic() - t0,
                    "cpu": thread_time() - c0,
                }
    return run


def burn_phase(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        x += 1


def sleep_phase(seconds):
    time.sleep(seconds)


def lock_phase(m):
    with m:
        pass


def cycle(seconds, phases):
    m = threading.Lock()
    stop = threading.Event()
    handoff = threading.Event()

    @record_thread
    def holder():
        while not stop.is_set():
            handoff.wait()
            handoff.clear()
            with m:
                time.sleep(0.03)

    h = threading.Thread(target=holder, name="holder", daemon=True)
    h.start()

    @record_thread
    def worker():
        end = monotonic() + seconds
        while monotonic() < end:
            t = monotonic()
            burn_phase(0.02)
            phases["burn"] += monotonic() - t
            t = monotonic()
            sleep_phase(0.05)
            phases["sleep"] += monotonic() - t
            handoff.set()
            while not m.locked():
                time.sleep(0.0002)
            t = monotonic()
            lock_phase(m)
            phases["lock"] += monotonic() - t
        stop.set()
        handoff.set()

    w = threading.Thread(target=worker, name="worker")
    w.start()
    print("ready", flush=True)
    w.join()


def spin(seconds):
    end = monotonic() + seconds
    x = 0
    while monotonic() < end:
        for i in range(200):
            x += i


def gil(seconds, phases):
    ts = [threading.Thread(target=record_thread(spin), args=(seconds,),
                           name="spinner-%d" % i) for i in range(2)]
    for t in ts:
        t.start()
    print("ready", flush=True)
    for t in ts:
        t.join()


def wait_data(sock):
    return sock.recv(16)


async def idle_loop(seconds):
    await asyncio.sleep(seconds)


def io(seconds, phases):
    a, b = socket.socketpair()
    r = threading.Thread(target=record_thread(wait_data), args=(a,), name="reader")
    r.start()
    loop_thread = threading.Thread(
        target=record_thread(lambda: asyncio.run(idle_loop(seconds))), name="loop")
    loop_thread.start()
    print("ready", flush=True)
    time.sleep(seconds)
    b.send(b"x")
    r.join()
    loop_thread.join()


def crowd(seconds):
    os.sched_setaffinity(0, {0})
    spin(seconds)


def crowd_one(seconds, phases):
    t = threading.Thread(target=record_thread(crowd), args=(seconds,), name="crowd")
    t.start()
    t.join()


def runqueue(seconds, phases):
    import subprocess
    outs = ["%s.%d" % (sys.argv[3], i) for i in range(3)]
    kids = [subprocess.Popen([sys.executable, __file__, "crowd", str(seconds), o])
            for o in outs]
    print("ready", flush=True)
    for k, o in zip(kids, outs):
        k.wait()
        with open(o) as f:
            threads.update(json.load(f)["threads"])
        os.unlink(o)


def wait_item(q):
    return q.get()


def queue_wait(seconds, phases):
    q = queue.Queue()
    t = threading.Thread(target=record_thread(wait_item), args=(q,), name="consumer")
    t.start()
    print("ready", flush=True)
    time.sleep(seconds)
    q.put(1)
    t.join()


def hash_loop(seconds):
    import hashlib
    data = bytes(8 << 20)
    end = monotonic() + seconds
    while monotonic() < end:
        hashlib.sha256(data).digest()


def nogil(seconds, phases):
    ts = [threading.Thread(target=record_thread(spin), args=(seconds,), name="spinner"),
          threading.Thread(target=record_thread(hash_loop), args=(seconds,), name="hasher")]
    for t in ts:
        t.start()
    print("ready", flush=True)
    for t in ts:
        t.join()


def nap(seconds):
    end = monotonic() + seconds
    while monotonic() < end:
        time.sleep(0.0005)


def churn(seconds, phases):
    print("ready", flush=True)
    end = monotonic() + seconds
    while monotonic() < end:
        ts = [threading.Thread(target=nap, args=(0.5,)) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


def pace(deadline):
    while perf_counter() < deadline:
        pass


def short_wait():
    time.sleep(BLOCK)


def tight_timer_slack():
    """Sleeps of this thread end within a microsecond of their time, not
    the 50 us default slack later (prctl(PR_SET_TIMERSLACK), per thread)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(29, 1000, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass


BLOCK = 20e-6


def pingpong(seconds, phases, period=100e-6):
    @record_thread
    def blocker():
        tight_timer_slack()
        ru = resource.getrusage(resource.RUSAGE_THREAD)
        n = 0
        now = perf_counter()
        end, deadline = now + seconds, now
        while now < end:
            # the next mark, or now if the wait took longer: no catching
            # up by not burning
            deadline = max(deadline + period, now)
            pace(deadline)
            short_wait()
            n += 1
            now = perf_counter()
        phases["waits"] = n
        phases["nvcsw"] = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - ru.ru_nvcsw

    b = threading.Thread(target=blocker, name="blocker")
    b.start()
    print("ready", flush=True)
    b.join()


def parked(event):
    event.wait()


def crowd2000(seconds, phases, blocked=1990, spinners=5, nappers=5):
    threading.stack_size(64 * 1024)
    stop = threading.Event()

    def spin_until(event):
        x = 0
        while not event.is_set():
            for i in range(200):
                x += i

    def nap(event):
        while not event.is_set():
            time.sleep(0.01)

    ts = [threading.Thread(target=record_thread(parked), args=(stop,), name="parked")
          for _ in range(blocked)]
    ts += [threading.Thread(target=record_thread(spin_until), args=(stop,), name="spinner")
           for _ in range(spinners)]
    ts += [threading.Thread(target=record_thread(nap), args=(stop,), name="napper")
           for _ in range(nappers)]
    for t in ts:
        t.start()
    print("ready", flush=True)
    sys.stdin.readline()
    stop.set()
    for t in ts:
        t.join()


SCENARIOS = {"cycle": cycle, "gil": gil, "io": io, "runqueue": runqueue,
             "crowd": crowd_one, "nogil": nogil,
             "queue": queue_wait, "churn": churn, "pingpong": pingpong,
             "crowd2000": crowd2000}

if __name__ == "__main__":
    scenario, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    phases = {"burn": 0.0, "sleep": 0.0, "lock": 0.0}
    SCENARIOS[scenario](seconds, phases)
    with open(out, "w") as f:
        json.dump({"threads": threads, "phases": phases}, f)
