"""Threads in every state, for `pysight dump`.

usage: dump_target.py SECONDS RESULT_JSON

- "getter" blocks in queue.get() on a queue nobody fills;
- "sleeper" sleeps in time.sleep();
- "burner" burns CPU in burn();
- "deep" recurses 300 frames into dive(), then waits on an Event.

The threads are named in Python only (Thread(name=...), and MainThread):
before 3.14 their OS names are all the process's, so dump shows the names
Python gives them.  RESULT_JSON gets each thread's native id once all are
in place; the process exits after SECONDS.
"""
import json
import queue
import sys
import threading
import time

DEPTH = 300
ready = threading.Barrier(5)
stop = threading.Event()
tids = {}


def name_me(name):
    assert threading.current_thread().name == name
    tids[name] = threading.get_native_id()


def getter():
    name_me("getter")
    # locals of known values, for dump --locals
    label, count, ratio, flag, nothing = "getter's label", 42, 0.5, True, None
    negative, big, data = -7, 2 ** 70, b"\x00ab"
    items, table = [1, 2, 3], {"a": 1}
    q = queue.Queue()
    ready.wait()
    q.get()
    return label, count, ratio, flag, nothing, negative, big, data, items, table


def sleeper():
    name_me("sleeper")
    ready.wait()
    while not stop.is_set():
        time.sleep(60)


def burn():
    x = 0
    while not stop.is_set():
        for i in range(1000):
            x += i
    return x


def burner():
    name_me("burner")
    ready.wait()
    burn()


def dive(n):
    if n:
        return dive(n - 1)
    ready.wait()
    stop.wait()


def deep():
    name_me("deep")
    dive(DEPTH)


def main():
    seconds, result = float(sys.argv[1]), sys.argv[2]
    sys.setrecursionlimit(DEPTH + 200)
    for fn in (getter, sleeper, burner, deep):
        threading.Thread(target=fn, name=fn.__name__, daemon=True).start()
    name_me("MainThread")
    ready.wait()
    with open(result + ".tmp", "w") as f:
        json.dump({"tids": tids}, f)
    import os
    os.rename(result + ".tmp", result)
    print("ready", flush=True)
    time.sleep(seconds)
    stop.set()


if __name__ == "__main__":
    main()
