"""Threads named as programs name them, each burning in a function of its own.

usage: thread_names.py SECONDS [RESULT_JSON]

Python's thread names are not the kernel's: up to 3.13 every thread's comm
is the process's, and 3.14 gives the kernel the Python name cut to 15
bytes.  The names here are longer than that, not ASCII, or made by a pool.
RESULT_JSON maps each burning function to its thread's native id and name.
"""
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

LONG = "a-thread-name-longer-than-fifteen-bytes"
UNICODE = "\u00fcn\u00efcode-\u540d\u524d"


def burn(seconds):
    deadline = time.monotonic() + seconds
    x = 0
    while time.monotonic() < deadline:
        for i in range(500): x += i * i
    return x


def burn_as(fn, record, seconds):
    """Say which thread burns under fn, then burn."""
    record[fn] = [threading.get_native_id(), threading.current_thread().name]
    burn(seconds)


# One function a thread, so that a sample's stack says whose it is.
def in_long(record, seconds):
    burn_as("in_long", record, seconds)


def in_unicode(record, seconds):
    burn_as("in_unicode", record, seconds)


def in_pool(record, seconds):
    burn_as("in_pool", record, seconds)


def in_main(record, seconds):
    burn_as("in_main", record, seconds)


def main(seconds):
    record = {}
    threads = [threading.Thread(target=in_long, args=(record, seconds), name=LONG),
               threading.Thread(target=in_unicode, args=(record, seconds), name=UNICODE)]
    for t in threads:
        t.start()
    with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
        done = pool.submit(in_pool, record, seconds)
        in_main(record, seconds)
        done.result()
    for t in threads:
        t.join()
    return record


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    text = json.dumps({"threads": main(seconds)})
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
