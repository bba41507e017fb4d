#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Emit line-table test vectors for user/python/linetable.c.

Run with each interpreter to be covered (3.8 and later); it writes one
fixture file for the running interpreter's minor version:

    python3.X tools/gen-linetable-vectors.py [OUTDIR]

OUTDIR defaults to tests/fixtures next to this script.  The output is
linetable-3.X.txt, a line-oriented text format:

    # comment
    C <minor> <firstlineno> <hex table bytes, or - when empty> <name>
    R <start> <end> <line>

Each R line belongs to the C line above it and says that every byte
offset in [start, end) maps to <line> (-1 meaning "no line").  The
ranges tile [-2, len(code) + 8) so the odd offsets, a negative offset
and offsets past the last instruction are covered too.

The table is co_lnotab for 3.8/3.9 and co_linetable from 3.10 on.  The
expected lines come from the interpreter's own PyCode_Addr2Line (via
ctypes), which is what the frame line number is derived from; they are
cross-checked against the dis/co_lines()/co_positions() view of the
same code and the script fails loudly if the two disagree.
"""

import ctypes
import dis
import os
import sys
import types

MINOR = sys.version_info[1]
PAST_END = 8
BEFORE_START = 2

_addr2line = ctypes.pythonapi.PyCode_Addr2Line
_addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
_addr2line.restype = ctypes.c_int


def table_of(code):
    if MINOR <= 9:
        return code.co_lnotab
    return code.co_linetable


def dis_lines_38(code):
    """Per-instruction line from dis.findlinestarts (3.8, 3.9)."""
    starts = list(dis.findlinestarts(code))
    out = {}
    for off in range(0, len(code.co_code), 2):
        line = code.co_firstlineno
        for addr, ln in starts:
            if addr > off:
                break
            line = ln
        out[off] = line
    return out


def dis_lines_310(code):
    """Per-instruction line from co_lines() (3.10)."""
    out = {}
    for start, end, line in code.co_lines():
        for off in range(start, end, 2):
            out[off] = -1 if line is None else line
    return out


def dis_lines_311(code):
    """Per-code-unit line from co_positions(), CACHE units included."""
    out = {}
    for i, pos in enumerate(code.co_positions()):
        out[2 * i] = -1 if pos[0] is None else pos[0]
    # co_lines() must agree wherever it has something to say.
    for start, end, line in code.co_lines():
        for off in range(start, end, 2):
            want = -1 if line is None else line
            if out.get(off) != want:
                raise SystemExit("%s: co_lines/co_positions disagree at %d"
                                 % (code.co_name, off))
    return out


def dis_lines(code):
    if MINOR <= 9:
        return dis_lines_38(code)
    if MINOR == 10:
        return dis_lines_310(code)
    return dis_lines_311(code)


def truth(code, off):
    return _addr2line(code, off)


def ranges_of(code):
    """Run-length encode PyCode_Addr2Line over every byte offset."""
    n = len(code.co_code)
    from_dis = dis_lines(code)
    for off, line in from_dis.items():
        got = truth(code, off)
        if got != line:
            raise SystemExit("%s: dis says line %d at %d, Addr2Line %d"
                             % (code.co_name, line, off, got))
    out = []
    for off in range(-BEFORE_START, n + PAST_END):
        line = truth(code, off)
        if out and out[-1][2] == line and out[-1][1] == off:
            out[-1][1] = off + 1
        else:
            out.append([off, off + 1, line])
    return out


def walk(code, seen):
    if id(code) in seen:
        return
    seen[id(code)] = code
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from walk(const, seen)


# ---------------------------------------------------------------------------
# Source snippets.  Each is compiled on its own; every code object inside
# (module body, functions, lambdas, comprehensions, classes) is a vector.

def big_gap(n):
    return "\n" * n


SNIPPETS = []

SNIPPETS.append(("basic", '''
def simple(a, b):
    x = a + b
    y = x * 2
    return y

def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
        else:
            total -= 1
    while total > 0:
        total -= 3
    return total

def comps(xs):
    a = [x * 2 for x in xs if x]
    b = {x: x for x in xs}
    c = {x for x in xs}
    d = list(x for x in xs)
    return a, b, c, d

def tryexc(f):
    try:
        f()
    except ValueError as e:
        return e
    except (KeyError,
            IndexError):
        return None
    else:
        return 1
    finally:
        print("done")

def nested(a):
    def inner(b):
        def innermost(c):
            return a + b + c
        return innermost
    return inner

lam = lambda x: (x +
                 1)

class K:
    attr = 1
    def method(self):
        with open(__file__) as f:
            return f.read()

async def coro(x):
    async with x as y:
        await y
    async for z in x:
        yield z

def gen(n):
    for i in range(n):
        yield i
    yield from range(n)
'''))

# Line jumps of > 127 and > 255 lines forward, in straight-line code.
SNIPPETS.append(("gaps", "def gaps():\n    a = 1\n" + big_gap(130) +
                 "    b = 2\n" + big_gap(300) + "    c = 3\n" +
                 big_gap(1000) + "    return a + b + c\n"))

# Big backward jumps: a call whose arguments span hundreds of lines, a
# loop whose body is far from its header, a multi-line expression.
SNIPPETS.append(("backward", "def backward(f, xs):\n    r = f(\n" +
                 big_gap(200) + "        1,\n" + big_gap(140) +
                 "        2)\n    for x in xs:\n" + big_gap(300) +
                 "        r += x\n    return (r +\n" + big_gap(260) +
                 "            r *\n" + big_gap(3) + "            2)\n"))

# > 255 bytes (and > 127 code units) of bytecode on one line.
SNIPPETS.append(("longline", "def longline(a, b):\n    x = [" +
                 ", ".join("a + b * %d" % i for i in range(200)) +
                 "]\n    y = 1\n    return x, y\n"))

# A large first line number, as code from deep inside a file has.
SNIPPETS.append(("deep", big_gap(70000) + '''
def deep(x):
    return [y
            for y in x
            if y]
'''))

SNIPPETS.append(("multiline", '''
def multiline(d, k):
    v = d[
        k
    ][
        k + 1
    ]
    s = (f"{v}"
         f"{k!r:>{10}}")
    return {
        "a": v,
        "b": s,
        "c": [d.get(x,
                    None)
              for x
              in k],
    }

@staticmethod
def decorated(
        a,
        b=1,
        *c,
        **d):
    assert a, (
        "message")
    del a
    return b
'''))

if MINOR >= 10:
    SNIPPETS.append(("match", '''
def matcher(x):
    match x:
        case [1, 2, *rest]:
            return rest
        case {"k": v}:
            return v
        case int() | float() if x > 0:
            return x
        case _:
            return None
'''))

if MINOR >= 11:
    SNIPPETS.append(("groups", '''
def groups(f):
    try:
        f()
    except* ValueError:
        pass
    except* TypeError as e:
        f = e
    return f
'''))


def exec_built():
    """A function created with exec, the way templates build code."""
    ns = {}
    body = "".join("    v%d = a * %d\n" % (i, i) for i in range(40))
    exec("def built(a):\n" + body + "    return v39\n", ns)
    return ns["built"].__code__


def stdlib_module():
    """A real module's code, for a realistic mix of everything."""
    import textwrap
    path = textwrap.__file__
    with open(path) as f:
        return compile(f.read(), "textwrap.py", "exec")


def all_codes():
    seen = {}
    for name, src in SNIPPETS:
        yield from walk(compile(src, name + ".py", "exec"), seen)
    yield from walk(exec_built(), seen)
    yield from walk(stdlib_module(), seen)
    yield from walk(ranges_of.__code__, seen)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests",
        "fixtures")
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "linetable-3.%d.txt" % MINOR)
    ncode = nrange = 0
    # Write aside and rename, so a failed run leaves no half fixture.
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        out.write("# linetable vectors from Python %s\n"
                  % sys.version.split()[0])
        out.write("# generated by tools/gen-linetable-vectors.py\n")
        for code in all_codes():
            table = bytes(table_of(code))
            out.write("C %d %d %s %s\n" % (MINOR, code.co_firstlineno,
                                           table.hex() or "-",
                                           code.co_name.replace(" ", "_")))
            for start, end, line in ranges_of(code):
                out.write("R %d %d %d\n" % (start, end, line))
                nrange += 1
            ncode += 1
    os.replace(tmp, path)
    print("%s: %d code objects, %d ranges" % (path, ncode, nrange))


if __name__ == "__main__":
    main()
