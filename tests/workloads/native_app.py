"""A Python program that calls native code, for --native
(tests/integration/test_native.py).

usage: native_app.py LIBBURN SECONDS RESULT_JSON [LATE_LIB SYMBOL ...]

Threads (their OS names too): worker calls burn_outer in a loop;
waiter blocks in burn_io's read(); sandwich calls burn_cb, which calls
back py_callback, which calls burn_outer.  Writes {"pid": ...,
"lines": {...}} to RESULT_JSON once they run.  With LATE_LIB SYMBOL
pairs, a second later the thread "late" dlopens each library (so it is
mapped after the profiler read the process's mappings) and calls each
SYMBOL(n) in turn.  Exits after SECONDS.  Stays 3.8-compatible.
"""
import ctypes
import json
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
seconds = float(sys.argv[2])
result = sys.argv[3]
late = list(zip(sys.argv[4::2], sys.argv[5::2]))
N = 2000000
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def name_thread(name):
    try:
        with open("/proc/self/task/%d/comm" % threading.get_native_id(), "w") as f:
            f.write(name)
    except (AttributeError, OSError):
        pass


def worker():
    name_thread("worker")
    while True:
        lib.burn_outer(N)  # LINE:worker


def waiter():
    name_thread("waiter")
    lib.burn_io()  # LINE:waiter


@CALLBACK
def py_callback(n):
    lib.burn_outer(n)  # LINE:callback
    return 0


def sandwich():
    name_thread("sandwich")
    while True:
        lib.burn_cb(py_callback, N)  # LINE:sandwich


def late_calls():
    name_thread("late")
    time.sleep(1)
    fns = [getattr(ctypes.CDLL(path), sym) for path, sym in late]
    while True:
        for fn in fns:
            fn(ctypes.c_ulong(N))  # LINE:late


def lines():
    out = {}
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if "# LINE:" in text and "out[" not in text:
                out[text.split("# LINE:")[1].strip()] = n
    return out


targets = [worker, waiter, sandwich] + ([late_calls] if late else [])
for fn in targets:
    threading.Thread(target=fn, daemon=True).start()
with open(result + ".tmp", "w") as f:
    json.dump({"lines": lines()}, f)
import os
os.rename(result + ".tmp", result)
time.sleep(seconds)
