"""Python calling native code, for the native section of tools/bench.

usage: native_burn.py LIBBURN DEPTH SECONDS

Prints "ready PID", then calls libburn's burn_deep(DEPTH, n) in a loop (a
C recursion DEPTH calls deep, then burn_inner's loop) for SECONDS: its
samples' native stacks are DEPTH frames deeper than burn_outer's.
"""
import ctypes
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
depth, seconds = int(sys.argv[2]), float(sys.argv[3])
print("ready %d" % os.getpid(), flush=True)
t = time.time()
while time.time() - t < seconds:
    lib.burn_deep(depth, 2000000)
