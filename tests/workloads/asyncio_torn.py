"""Tasks on a list that lies, for `pysight dump --tasks` (3.14 only).

usage: asyncio_torn.py HOW SECONDS RESULT_JSON

Three tasks are made on a loop that never runs, so nothing in this process
walks or changes their thread's task list again; then one link is broken,
as a reader racing the list could see it:
- "loop": t2's next points back at t0 (a cycle that never meets the head);
- "null": t1's next is NULL (a node unlinked under the read);
- "stray": t1's next points into an object that is no task;
- "freed": t1's coroutine is memory given back to the system (a
  coroutine freed under the read, its page unmapped since).
The process never returns to asyncio (its exit would walk the list): it
sleeps, then leaves with os._exit.  RESULT_JSON says it is ready.
"""
import asyncio
import ctypes
import json
import mmap
import os
import sys
import time

NODE = 152  # offsetof(TaskObj, task_node), .AsyncioDebug of 3.14.10 and 3.15.2
CORO = 128  # offsetof(TaskObj, task_coro), the same


def word(addr, value=None):
    p = ctypes.c_uint64.from_address(addr)
    if value is not None:
        p.value = value
    return p.value


async def sleeper():
    await asyncio.sleep(3600)


how, seconds, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
loop = asyncio.new_event_loop()
t = [loop.create_task(sleeper(), name="t%d" % i) for i in range(3)]
node = [id(x) + NODE for x in t]
# the layout the breakage assumes: t0 <-> t1 <-> t2, each node {next, prev}
assert word(node[0]) == node[1] and word(node[1] + 8) == node[0], "not 3.14's TaskObj"
assert word(node[1]) == node[2] and word(node[2] + 8) == node[1], "not 3.14's TaskObj"
stray = b"x" * 64
if how == "loop":
    word(node[2], node[0])
elif how == "null":
    word(node[1], 0)
elif how == "stray":
    word(node[1], id(stray) + 32)
elif how == "freed":
    assert word(id(t[1]) + CORO) == id(t[1].get_coro()), "not 3.14's TaskObj"
    page = mmap.mmap(-1, mmap.PAGESIZE)
    view = ctypes.c_char.from_buffer(page)
    gone = ctypes.addressof(view)
    del view
    page.close()    # unmapped: a read there fails
    word(id(t[1]) + CORO, gone)
with open(path + ".tmp", "w") as f:
    json.dump({"ready": how}, f)
os.rename(path + ".tmp", path)
time.sleep(seconds)
os._exit(0)
