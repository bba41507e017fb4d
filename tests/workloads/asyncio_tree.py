"""Nested asyncio tasks, all blocked, for `pysight dump --tasks`.

usage: asyncio_tree.py SECONDS RESULT_JSON

main -> gather(child-1, child-2, child-3); each child awaits its own task
grandchild-N.  grandchild-1 and -3 sleep; grandchild-2 waits on an Event.
Nothing runs once all are in place, so any two reads of the tasks agree.
RESULT_JSON gets each task's name and the names of those awaiting it
(from asyncio's own bookkeeping, 3.14: future_add_to_awaited_by), and the
main thread's native id; the process exits after SECONDS.
"""
import asyncio
import json
import os
import sys
import threading


async def grandchild(n, event):
    if n == 2:
        await event.wait()
    else:
        await asyncio.sleep(3600)


async def child(n, event):
    await asyncio.create_task(grandchild(n, event), name="grandchild-%d" % n)


async def report(path, seconds):
    # every task is blocked once main's gather and the children are
    for _ in range(100):
        await asyncio.sleep(0.01)
        if sum(t.get_name().startswith("grandchild") for t in asyncio.all_tasks()) == 3:
            break
    await asyncio.sleep(0.1)
    with open(path + ".tmp", "w") as f:
        json.dump({"tid": threading.get_native_id(),
                   "tasks": sorted(t.get_name() for t in asyncio.all_tasks()
                                   if t is not asyncio.current_task())}, f)
    os.rename(path + ".tmp", path)
    await asyncio.sleep(seconds)
    os._exit(0)


async def main(path, seconds):
    asyncio.current_task().set_name("main")
    event = asyncio.Event()
    asyncio.get_running_loop().create_task(report(path, seconds), name="reporter")
    await asyncio.gather(*(asyncio.create_task(child(n, event), name="child-%d" % n)
                           for n in (1, 2, 3)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[2], float(sys.argv[1])))
