"""A CPython that lies in its own memory, for pysight's hostile-target tests.

usage: liar.py MODE SECONDS

Corrupts, through ctypes, interpreter state that a profiler reads and that
this process itself never uses again, prints "ready", keeps burning CPU in
Python code for SECONDS and leaves with os._exit (no cleanup, which would
walk what was corrupted).  Modes:

  frame_loop    two frames of a burning thread point at each other:
                inner.previous = outer and outer.previous = inner
                (_PyInterpreterFrame.previous; neither ever returns)
  code_name     the burning function's code object has co_name pointing at
                unmapped memory and co_qualname at readable junk bytes
  huge_str      co_name and co_qualname point at a str whose length field
                says 2**62
  thread_cycle  three burning threads B0, B1, B2 (list: B2, B1, B0, main);
                B1.next = B2, so the thread list cycles and B0 is unreachable

Layouts are CPython 3.11's (x86_64 and aarch64 alike), from
Include/internal/pycore_frame.h, Include/cpython/code.h,
Include/cpython/pystate.h and Include/cpython/frameobject.h of 3.11; the
tests run this under Debian's /usr/bin/python3.11 only, since the point is
pysight's robustness, not this file's portability.
"""
import ctypes
import os
import sys
import threading
import time

assert sys.version_info[:2] == (3, 11), "liar.py hard-codes CPython 3.11 layouts"

FRAMEOBJ_F_FRAME = 24      # PyFrameObject.f_frame -> _PyInterpreterFrame
IFRAME_PREVIOUS = 48       # _PyInterpreterFrame.previous
CODE_NAME = 120            # PyCodeObject.co_name
CODE_QUALNAME = 128        # PyCodeObject.co_qualname
STR_LENGTH = 16            # PyASCIIObject.length
TSTATE_NEXT = 8            # PyThreadState.next

KEEP = []                  # objects the lies point at, never freed


def poke(addr, value):
    ctypes.c_void_p.from_address(addr).value = value


def peek(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def iframe_of(frame):
    return peek(id(frame) + FRAMEOBJ_F_FRAME)


def spin():
    # compiled with this module: runs without touching what was corrupted
    while True:
        pass


def frame_loop(ready):
    outer = iframe_of(sys._getframe())

    def frame_loop_inner():
        inner = iframe_of(sys._getframe())
        poke(inner + IFRAME_PREVIOUS, outer)
        poke(outer + IFRAME_PREVIOUS, inner)
        ready.set()
        while True:
            pass
    frame_loop_inner()


def lie_about_name(fn, name, qualname):
    code = fn.__code__
    KEEP.append(code)
    poke(id(code) + CODE_NAME, name)
    poke(id(code) + CODE_QUALNAME, qualname)


def code_name_target(ready):
    ready.set()
    while True:
        pass


def code_name(ready):
    junk = bytes(range(256)) * 16
    KEEP.append(junk)
    # an address below mmap_min_addr is never mapped
    lie_about_name(code_name_target, 0x1000, id(junk) + 32 + 64)
    code_name_target(ready)


def huge_str_target(ready):
    ready.set()
    while True:
        pass


def huge_str(ready):
    s = "".join(["huge", "_str_name"])     # not interned: only we hold it
    KEEP.append(s)
    poke(id(s) + STR_LENGTH, 1 << 62)
    lie_about_name(huge_str_target, id(s), id(s))
    huge_str_target(ready)


def tstate_get():
    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = ctypes.c_void_p
    return get()


def thread_cycle(ready):
    tstates = {}
    started = [threading.Event() for _ in range(3)]
    go = threading.Event()

    def burner(i):
        tstates[i] = tstate_get()
        started[i].set()
        go.wait()
        spin()

    for i in range(3):
        threading.Thread(target=burner, args=(i,), name="B%d" % i, daemon=True).start()
        started[i].wait()
    # newest first: B2 -> B1 -> B0 -> main
    assert peek(tstates[2] + TSTATE_NEXT) == tstates[1]
    assert peek(tstates[1] + TSTATE_NEXT) == tstates[0]
    poke(tstates[1] + TSTATE_NEXT, tstates[2])
    go.set()
    ready.set()


MODES = {"frame_loop": frame_loop, "code_name": code_name, "huge_str": huge_str}


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    ready = threading.Event()
    if mode == "thread_cycle":
        thread_cycle(ready)
    else:
        threading.Thread(target=MODES[mode], args=(ready,), daemon=True).start()
    ready.wait()
    os.write(1, b"ready %d\n" % os.getpid())
    time.sleep(seconds)
    os._exit(0)


if __name__ == "__main__":
    main()
