"""A small asyncio service and its load, for `--asyncio`.

usage: asyncio_service.py serve SECONDS RESULT_JSON
       asyncio_service.py load PORT SECONDS CLIENTS

serve: a line server on 127.0.0.1 (an ephemeral port, written into
RESULT_JSON.port once it listens).  Each connection is a task named
conn-N; each request line names a handler:
  fast    burns 2 ms of CPU;
  db      awaits asyncio.sleep(0.02), standing in for a database;
  locked  awaits an asyncio.Lock that a background task (holder) holds
          10 ms of every 20;
  block   blocks the loop with time.sleep(0.05).
Each handler times itself: CPU by thread_time, wall by monotonic, and
its awaits of sleep and of the lock by monotonic around them; block
counts the time it stalls every other task of the loop (stalled).  After
SECONDS the totals go to RESULT_JSON and the process exits.

load: CLIENTS threads, each with its own connection, sending fast, db and
locked in turn (block too when CLIENTS is negative), until SECONDS pass.
"""
import asyncio
import json
import os
import socket
import sys
import threading
import time

HANDLERS = ("fast", "db", "locked", "block")


def burn(ms):
    end = time.thread_time() + ms / 1000
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


class Totals:
    def __init__(self):
        self.by = {h: {"n": 0, "cpu": 0.0, "wall": 0.0, "sleep": 0.0, "lock": 0.0,
                       "stalled": 0.0} for h in HANDLERS}

    def add(self, handler, **kw):
        t = self.by[handler]
        for k, v in kw.items():
            t[k] += v


TOTALS = Totals()
LOCK = None


async def fast():
    burn(2)


async def db():
    t0 = time.monotonic()
    await asyncio.sleep(0.02)
    return {"sleep": time.monotonic() - t0}


async def locked():
    t0 = time.monotonic()
    async with LOCK:
        got = time.monotonic()
    return {"lock": got - t0}


async def block():
    # every other task of the loop waits for it: that is its stall
    others = len(asyncio.all_tasks()) - 1
    t0 = time.monotonic()
    time.sleep(0.05)
    return {"stalled": others * (time.monotonic() - t0)}


async def serve_conn(reader, writer):
    name = "conn-%d" % next(serve_conn.ids)
    asyncio.current_task().set_name(name)
    try:
        while line := await reader.readline():
            handler = line.decode().strip()
            if handler not in HANDLERS:
                break
            c0, w0 = time.thread_time(), time.monotonic()
            waits = await globals()[handler]() or {}
            TOTALS.add(handler, n=1, cpu=time.thread_time() - c0,
                       wall=time.monotonic() - w0, **waits)
            writer.write(b"ok\n")
            await writer.drain()
    finally:
        writer.close()


serve_conn.ids = iter(range(1, 1 << 30))


async def holder(lock):
    """Holds lock 10 ms of every 20 (aiohttp_service.py's too)."""
    while True:
        async with lock:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.01)


async def serve(seconds, result):
    global LOCK
    LOCK = asyncio.Lock()
    asyncio.current_task().set_name("main")
    asyncio.create_task(holder(LOCK), name="holder")
    server = await asyncio.start_server(serve_conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(result + ".port.tmp", "w") as f:
        f.write("%d %d\n" % (port, threading.get_native_id()))
    os.rename(result + ".port.tmp", result + ".port")
    await asyncio.sleep(seconds)
    with open(result + ".tmp", "w") as f:
        json.dump({"handlers": TOTALS.by}, f)
    os.rename(result + ".tmp", result)
    os._exit(0)


def client(port, until, kinds):
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            f = s.makefile("rwb")
            i = 0
            while time.monotonic() < until:
                f.write(kinds[i % len(kinds)].encode() + b"\n")
                f.flush()
                if not f.readline():
                    return
                i += 1
    except OSError:
        pass    # the server is gone: its run is over


def load(port, seconds, clients):
    kinds = HANDLERS if clients < 0 else HANDLERS[:3]
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, until, kinds))
               for _ in range(abs(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        asyncio.run(serve(float(sys.argv[2]), sys.argv[3]))
    else:
        load(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
