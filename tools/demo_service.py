"""A small stand-in for a web service, for pysight's demo.

Worker threads take "requests" from a queue.  Each request parses a JSON
body, renders a template, computes a checksum (CPU) and then waits on a
fake database (sleep).  A background thread compacts a cache now and then.
Runs for the number of seconds given on the command line.
"""
import hashlib
import json
import queue
import random
import sys
import threading
import time


def parse_body(raw):
    return json.loads(raw)


def render_template(items):
    rows = []
    for item in items:
        rows.append("<tr><td>%s</td><td>%d</td></tr>" % (item["name"], item["qty"]))
    return "<table>" + "".join(rows) + "</table>"


def checksum(page):
    digest = b""
    for _ in range(20):
        digest = hashlib.sha256(digest + page.encode()).digest()
    return digest.hex()


def slow_score(items):
    total = 0
    for item in items:
        for k in range(item["qty"] * 40):
            total += (k * 31) % 7
    return total


def query_database():
    time.sleep(0.004)


class Handler:
    def handle(self, raw):
        items = parse_body(raw)["items"]
        page = render_template(items)
        query_database()
        return checksum(page), slow_score(items)


def worker(q, stop):
    handler = Handler()
    while not stop.is_set():
        try:
            raw = q.get(timeout=0.1)
        except queue.Empty:
            continue
        handler.handle(raw)


def compact_cache(stop):
    cache = {}
    while not stop.is_set():
        for i in range(20000):
            cache[i % 5000] = str(i)
        cache.clear()
        time.sleep(0.05)


def main():
    duration = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    q = queue.Queue(maxsize=64)
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(q, stop), name="worker-%d" % i)
               for i in range(4)]
    threads.append(threading.Thread(target=compact_cache, args=(stop,), name="compactor"))
    for t in threads:
        t.start()
    body = json.dumps({"items": [{"name": "item%d" % i, "qty": random.randint(1, 20)}
                                 for i in range(60)]})
    end = time.time() + duration
    while time.time() < end:
        try:
            q.put(body, timeout=0.1)
        except queue.Full:
            pass
    stop.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
