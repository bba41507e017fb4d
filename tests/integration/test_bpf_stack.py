"""The BPF object's stack budget, read off the object file itself.

The verifier adds a bpf_loop callback's stack to its caller's and refuses
more than 512 bytes together. Kernels before that check (6.18.44 has it)
load an object that later ones refuse: wall mode's sched_switch program
took 384 + 208 bytes, and every wall recording, dump and agent in wall
mode failed on the newer kernel. This test holds the budget on any
kernel, so a new stack variable in a program is caught where it is added.
"""
import os
import re
import subprocess

from conftest import REPO

OBJECT = os.path.join(REPO, ".output", "pysight.bpf.o")
LIMIT = 512


def round_up(n, to=32):
    # the verifier rounds each frame up: to 16 with the JIT, 32 without
    return (n + to - 1) // to * to


def stack_depths():
    """{function: deepest r10 offset it touches} for every function in
    the object (programs and their subprograms)."""
    out = subprocess.run(["llvm-objdump", "-d", OBJECT], capture_output=True, text=True,
                         check=True).stdout
    depth, sections, fn, section = {}, {}, None, None
    for line in out.splitlines():
        m = re.match(r"^Disassembly of section (\S+):", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^[0-9a-f]+ <([A-Za-z_]\w*)>:", line)
        if m and not m.group(1).startswith("LBB"):
            fn = m.group(1)
            depth.setdefault(fn, 0)
            sections[fn] = section
            continue
        for m in re.finditer(r"r10 - (0x[0-9a-f]+|\d+)\)", line):
            depth[fn] = max(depth[fn], int(m.group(1), 0))
    return depth, sections


def test_programs_and_callbacks_fit_in_512_bytes():
    depth, sections = stack_depths()
    subprogs = {f: d for f, d in depth.items() if sections[f] == ".text"}
    programs = {f: d for f, d in depth.items() if sections[f] != ".text"}
    assert {"walk_frame", "walk_thread"} <= set(subprogs), subprogs
    assert {"pysight_on_cpu", "pysight_switch"} <= set(programs), programs
    # any program may reach any subprogram (bpf_loop's callbacks call
    # nothing further): the deepest pair must fit
    deepest = max(round_up(d) for d in subprogs.values())
    over = {p: round_up(d) + deepest for p, d in programs.items()
            if round_up(d) + deepest > LIMIT}
    assert not over, "over %d bytes with the deepest callback (%d): %s; stacks %s" % (
        LIMIT, deepest, over, depth)
