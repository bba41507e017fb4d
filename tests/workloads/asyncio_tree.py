"""Nested asyncio tasks, all blocked, for `pysight dump --tasks`.

usage: asyncio_tree.py SECONDS RESULT_JSON [pytask]

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


def pytask_factory(loop, coro, **kw):
    """asyncio's pure-Python Task, which it keeps as _PyTask: every field
    an attribute, none in C."""
    return asyncio.tasks._PyTask(coro, loop=loop, **kw)


async def start_pytasks(path, seconds):
    """main in a _PyTask, under asyncio.run's own (C) task."""
    asyncio.get_running_loop().set_task_factory(pytask_factory)
    await asyncio.create_task(main(path, seconds))


if __name__ == "__main__":
    if sys.argv[3:] == ["pytask"]:
        asyncio.run(start_pytasks(sys.argv[2], float(sys.argv[1])))
    else:
        asyncio.run(main(sys.argv[2], float(sys.argv[1])))
