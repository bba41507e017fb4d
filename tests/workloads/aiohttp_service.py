"""An aiohttp web service and its load, for `--asyncio` on a framework
from PyPI: the tasks are aiohttp's, a task per connection and one per
request, started eagerly from 3.12 on (the request's first step runs
inside its connection task's).

usage: aiohttp_service.py serve SECONDS RESULT_JSON [uvloop]   (aiohttp on PYTHONPATH)
       aiohttp_service.py load PORT SECONDS CLIENTS   (the standard library only)

serve: aiohttp.web on 127.0.0.1 (an ephemeral port, written into
RESULT_JSON.port once it listens), with three handlers:
  /fast    burns 2 ms of CPU;
  /db      awaits asyncio.sleep(0.02), standing in for a database;
  /locked  awaits an asyncio.Lock that a background task (holder) holds
           10 ms of every 20.
Each names its request's task after itself (aiohttp's are Task-N), so
that a sample says whose it is, and times itself, its response included:
wall by monotonic, its awaits of sleep and of the lock by monotonic
around them, and its CPU by thread_time outside them.  After SECONDS the
totals go to RESULT_JSON and the process exits.  With uvloop, uvloop's
event loop (Cython; its tasks are still asyncio's) runs it.

load: CLIENTS threads, each with its own keep-alive HTTP connection,
asking for /fast, /db and /locked in turn until SECONDS pass.
"""
import asyncio
import contextlib
import http.client
import json
import os
import sys
import threading
import time

from asyncio_service import burn, holder

try:
    from aiohttp import web     # serve's: load needs the standard library only
except ImportError:
    web = None

HANDLERS = ("fast", "db", "locked")
TOTALS = {h: {"n": 0, "cpu": 0.0, "wall": 0.0, "sleep": 0.0, "lock": 0.0} for h in HANDLERS}
LOCK = None


class Timed:
    """A handler's run in its request's task, named after it: its wall by
    monotonic from start to end, each await by monotonic around it, and
    its CPU by thread_time outside its awaits (the thread runs other
    tasks while it waits)."""

    def __init__(self, handler):
        self.handler, self.t = handler, TOTALS[handler]

    def __enter__(self):
        self.c0, self.w0 = time.thread_time(), time.monotonic()
        asyncio.current_task().set_name(self.handler)
        return self

    @contextlib.contextmanager
    def awaiting(self, what):
        c, w = time.thread_time(), time.monotonic()
        yield
        self.t[what] += time.monotonic() - w
        self.c0 += time.thread_time() - c

    def __exit__(self, *exc):
        self.t["n"] += 1
        self.t["cpu"] += time.thread_time() - self.c0
        self.t["wall"] += time.monotonic() - self.w0


async def fast(request):
    with Timed("fast"):
        burn(2)
        return web.Response(text="ok")


async def db(request):
    with Timed("db") as t:
        with t.awaiting("sleep"):
            await asyncio.sleep(0.02)
        return web.Response(text="ok")


async def locked(request):
    with Timed("locked") as t:
        with t.awaiting("lock"):
            await LOCK.acquire()
        LOCK.release()
        return web.Response(text="ok")


async def serve(seconds, result):
    global LOCK
    LOCK = asyncio.Lock()
    asyncio.create_task(holder(LOCK), name="holder")
    app = web.Application()
    app.add_routes([web.get("/" + h, globals()[h]) for h in HANDLERS])
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    with open(result + ".port.tmp", "w") as f:
        f.write("%d %d\n" % (port, threading.get_native_id()))
    os.rename(result + ".port.tmp", result + ".port")
    await asyncio.sleep(seconds)
    with open(result + ".tmp", "w") as f:
        json.dump({"handlers": TOTALS}, f)
    os.rename(result + ".tmp", result)
    os._exit(0)


def client(port, until):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        i = 0
        while time.monotonic() < until:
            conn.request("GET", "/" + HANDLERS[i % len(HANDLERS)])
            conn.getresponse().read()
            i += 1
    except (OSError, http.client.HTTPException):
        pass    # the server is gone: its run is over


def load(port, seconds, clients):
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, until)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    if sys.argv[1] == "serve" and sys.argv[4:] == ["uvloop"]:
        import uvloop
        uvloop.run(serve(float(sys.argv[2]), sys.argv[3]))
    elif sys.argv[1] == "serve":
        asyncio.run(serve(float(sys.argv[2]), sys.argv[3]))
    else:
        load(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
