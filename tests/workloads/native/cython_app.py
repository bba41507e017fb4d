"""Calls a Cython module (cyburn, compiled by the test into DIR), which
burns and calls back py_back, for --native.

usage: cython_app.py DIR SECONDS
"""
import sys
import time

sys.path.insert(0, sys.argv[1])
import cyburn  # noqa: E402


def py_back(n):
    x = 0
    for i in range(n // 200):
        x += i  # LINE:back
    return x


t = time.time()
while time.time() - t < float(sys.argv[2]):
    cyburn.cy_outer(3000000, py_back)  # LINE:call
