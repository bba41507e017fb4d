"""Nested asyncio tasks, one of them busy, for `record --asyncio`.

usage: asyncio_burn_tree.py SECONDS RESULT_JSON

main -> gather(child-1, child-2, child-3); each child awaits its own task
grandchild-N.  grandchild-2 spins on the CPU in spin(), yielding to the
loop between spins; the others sleep.  RESULT_JSON is written once all
are in place; the process exits after SECONDS.
"""
import asyncio
import json
import os
import sys
import time


def spin(ms):
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


async def grandchild(n, until):
    while time.monotonic() < until:
        if n == 2:
            spin(5)
            await asyncio.sleep(0)
        else:
            await asyncio.sleep(0.5)


async def child(n, until):
    await asyncio.create_task(grandchild(n, until), name="grandchild-%d" % n)


async def main(path, seconds):
    asyncio.current_task().set_name("main")
    until = time.monotonic() + seconds
    with open(path + ".tmp", "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.rename(path + ".tmp", path)
    await asyncio.gather(*(asyncio.create_task(child(n, until), name="child-%d" % n)
                           for n in (1, 2, 3)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[2], float(sys.argv[1])))
