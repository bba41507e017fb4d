"""Burn CPU in a function whose name is given, compiled at run time.

usage: named_burn.py NAME SECONDS

Prints "ready" once the function exists, then runs it for SECONDS of
thread_time.  Two runs with names of one length allocate alike, so with
address randomisation off their code objects share an address.
"""
import sys
from time import thread_time

SOURCE = """def {name}(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(1000): x += i * i
    return x
"""

if __name__ == "__main__":
    name, seconds = sys.argv[1], float(sys.argv[2])
    ns = {"thread_time": thread_time}
    exec(compile(SOURCE.format(name=name), "<gen>", "exec"), ns)
    fn = ns[name]
    print("ready %x" % id(fn.__code__), flush=True)
    fn(seconds)
