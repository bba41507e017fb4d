"""asyncio for `record --asyncio`: many idle tasks, or two loops.

usage: asyncio_loops.py many SECONDS NTASKS
       asyncio_loops.py two SECONDS

many: NTASKS tasks on one loop, each awaiting asyncio.sleep(SECONDS).
two: two threads, "north" and "south", each with its own loop and its own
tasks: main-north -> worker-north (sleeping in nap_north), and the same
for south.
Prints "ready" once all are in place; exits after SECONDS.
"""
import asyncio
import sys
import threading


async def idle(seconds):
    await asyncio.sleep(seconds)


async def many(seconds, n):
    tasks = [asyncio.create_task(idle(seconds), name="t-%d" % i) for i in range(n)]
    await asyncio.sleep(0.2)
    print("ready", flush=True)
    await asyncio.wait(tasks)


async def nap_north(seconds):
    await asyncio.sleep(seconds)


async def nap_south(seconds):
    await asyncio.sleep(seconds)


async def side(name, seconds, ready):
    asyncio.current_task().set_name("main-" + name)
    nap = nap_north if name == "north" else nap_south
    worker = asyncio.create_task(nap(seconds), name="worker-" + name)
    await asyncio.sleep(0.1)
    ready.release()
    await worker


def two(seconds):
    ready = threading.Semaphore(0)
    threads = [threading.Thread(target=asyncio.run, args=(side(n, seconds, ready),), name=n)
               for n in ("north", "south")]
    for t in threads:
        t.start()
    ready.acquire()
    ready.acquire()
    print("ready", flush=True)
    for t in threads:
        t.join()


if __name__ == "__main__":
    if sys.argv[1] == "many":
        asyncio.run(many(float(sys.argv[2]), int(sys.argv[3])))
    else:
        two(float(sys.argv[2]))
