"""Large matrix products in numpy, for --native: the dot line's time is
in numpy's C code and its bundled OpenBLAS.

usage: numpy_dot.py SECONDS
"""
import sys
import time

import numpy as np

a = np.random.rand(600, 600)
b = np.random.rand(600, 600)
t = time.time()
while time.time() - t < float(sys.argv[1]):
    c = a.dot(b)  # LINE:dot
