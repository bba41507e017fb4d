"""N asyncio tasks on one loop, for the cost of `--asyncio`.

usage: many_tasks.py SECONDS NTASKS [idle|moving]

idle: every task awaits asyncio.sleep(SECONDS): nothing moves.
moving: every task sleeps 50 ms in a loop (jittered): each read finds
most of them on a new future.  Prints "ready PID" once all are created;
exits after SECONDS.
"""
import asyncio
import os
import random
import sys


async def idle(seconds):
    await asyncio.sleep(seconds)


async def moving(until, loop):
    while loop.time() < until:
        await asyncio.sleep(0.05 * (0.5 + random.random()))


async def main(seconds, n, mode):
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    tasks = [asyncio.create_task(idle(seconds) if mode == "idle" else moving(until, loop),
                                 name="t-%d" % i) for i in range(n)]
    await asyncio.sleep(0.5)
    print("ready %d" % os.getpid(), flush=True)
    await asyncio.wait(tasks, timeout=seconds)
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]), int(sys.argv[2]),
                     sys.argv[3] if len(sys.argv) > 3 else "idle"))
