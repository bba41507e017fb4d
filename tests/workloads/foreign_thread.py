"""Python called back from a C thread, a new thread state each call.

usage: foreign_thread.py LIBRARY SECONDS RESULT_JSON

LIBRARY is foreign_thread.c built as a shared object.  Writes the CPU
seconds spent in callback_work (measured here) and in the C spin.
"""
import ctypes
import json
import sys
import time
from time import thread_time

busy = 0.0


def callback_work():
    global busy
    start = thread_time()
    x = 0
    while thread_time() - start < 0.002:
        x += 1
    busy += thread_time() - start


if __name__ == "__main__":
    lib = ctypes.CDLL(sys.argv[1])
    lib.foreign_stop.restype = ctypes.c_double
    cb = ctypes.CFUNCTYPE(None)(callback_work)
    assert lib.foreign_start(cb) == 0
    time.sleep(float(sys.argv[2]))
    spun = lib.foreign_stop()
    with open(sys.argv[3], "w") as f:
        json.dump({"callback": busy, "c_spin": spun}, f)
