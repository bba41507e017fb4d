"""A process whose names are escape sequences: its comm, a thread's name,
a function's name and qualified name, and a file name each hold ESC,
BEL, a newline, a C1 control and a bidirectional override, and the comm
a byte that is not UTF-8, as a hostile target could.

usage: evil_names.py SECONDS

Prints "ready" once the thread burns, then burns for SECONDS.
"""
import ctypes
import sys
import threading
import time

# an OSC title, a clear-screen, a colour, then a forged line of dump's own
EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31mRED\nFAKE Thread 1 \"x\"\x9b\u202e"

SOURCE = """def burn(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(1000): x += i * i
    return x
"""


def hostile(seconds):
    ns = {"thread_time": time.thread_time}
    exec(compile(SOURCE, "evil" + EVIL + ".py", "exec"), ns)
    code = ns["burn"].__code__
    names = {"co_name": "burn" + EVIL}
    if sys.version_info >= (3, 11):
        names["co_qualname"] = "burn" + EVIL
    ns["burn"].__code__ = code.replace(**names)
    return ns["burn"]


if __name__ == "__main__":
    seconds = float(sys.argv[1])
    libc = ctypes.CDLL(None)
    libc.prctl(15, b"py\x1b[2Jevil\xff\n", 0, 0, 0)     # PR_SET_NAME: the comm
    fn = hostile(seconds)
    t = threading.Thread(target=fn, args=(seconds,), name="evil" + EVIL)
    t.start()
    print("ready", flush=True)
    t.join()
