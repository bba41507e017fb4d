# A Cython module for the --native tests: compiled by the test, its
# functions must show by their C names, the Python it calls back above.
# cython: language_level=3
cdef long long spin(long long n) noexcept:
    cdef long long i, s = 0
    for i in range(n):
        s += i * i ^ (s >> 3)
    return s

def cy_outer(long long n, cb):
    cdef long long s = spin(n)
    cb(n)
    return s
