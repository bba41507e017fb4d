"""A parent that starts children: one exec'ed, one forked without exec.

usage: spawner.py SECONDS [RESULT_JSON]

The parent burns CPU in parent_work while an exec'ed child (subprocess of
the same interpreter) burns in exec_child_work and a forked child burns in
forked_child_work, each for SECONDS of thread_time.  The profiler must
follow both children.  Writes the busy time of each as JSON.
"""
import json
import os
import subprocess
import sys
from time import thread_time


def burn(seconds):
    start = thread_time()
    x = 0
    while thread_time() - start < seconds:
        for i in range(1000): x += i * i
    return thread_time() - start


def parent_work(seconds):
    return burn(seconds)


def exec_child_work(seconds):
    return burn(seconds)


def forked_child_work(seconds):
    return burn(seconds)


def main(seconds, result):
    exec_child = subprocess.Popen([sys.executable, __file__, "--child", str(seconds)],
                                  stdout=subprocess.PIPE)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        busy = forked_child_work(seconds)
        os.write(wfd, ("%.6f" % busy).encode())
        os._exit(0)
    os.close(wfd)
    busy = {"parent_work": parent_work(seconds)}
    busy["forked_child_work"] = float(os.read(rfd, 64).decode())
    os.waitpid(pid, 0)
    busy["exec_child_work"] = float(exec_child.communicate()[0].decode())
    text = json.dumps({"seconds": busy})
    if result and result != "-":
        with open(result, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        print("%.6f" % exec_child_work(float(sys.argv[2])))
    else:
        main(float(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
