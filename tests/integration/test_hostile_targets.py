"""Hostile targets next to a normal workload, and pysight never writing into
a target.

Each hostile test runs ratio.py (which measures its own CPU split) next to a
process that lies to a profiler, records host-wide, and asserts that
pysight exits on time, profiles ratio.py correctly, says something about
the liar (or leaves it out) and neither spins a core nor grows without
bound while it does."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (PYSIGHT, REPO, WORKLOADS, Profile, assert_recorded, find_interp, pct,
                      python_frames, run_pysight)

RATE = 200
SECONDS = 3
MIN_TOLERANCE = 5.0     # percentage points, for ratio.py's shares
MAX_HWM_KIB = 64 * 1024  # a 3 s recording holds a few MiB
MAX_CPU_SHARE = 0.5      # pysight's CPU time over its wall time


def debian_311():
    interp = find_interp("3.11", "debian")
    if interp is None:
        pytest.skip("no Debian /usr/bin/python3.11 here")
    return interp


def start_ready(procs, argv, **kw):
    proc = procs.start(argv, stdout=subprocess.PIPE, text=True, **kw)
    line = proc.stdout.readline()
    assert line.startswith("ready"), "%s did not start: %r" % (argv, line)
    return proc


def proc_label(frames):
    """(name, pid) of a 'process NAME PID' root frame, else None."""
    if not frames:
        return None
    m = re.match(r"^process (.*) (\d+)(?: \(ns \d+\))?$", frames[0].name)
    return (m.group(1), int(m.group(2))) if m else None


def of_pid(prof, pid):
    return prof.select(lambda f: (proc_label(f) or (None, 0))[1] == pid)


def time_v(stderr):
    """Max RSS (KiB), CPU seconds and wall seconds from /usr/bin/time -v."""
    def field(name):
        m = re.search(r"^\s*%s: (.*)$" % re.escape(name), stderr, re.M)
        assert m, "no %r in time -v output:\n%s" % (name, stderr[-1500:])
        return m.group(1).strip()
    wall = 0.0
    for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = wall * 60 + float(part)
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    return int(field("Maximum resident set size (kbytes)")), cpu, wall


def check_ratio(prof, truth, pid):
    """ratio.py's profile: its three functions in the shares it measured."""
    mine = of_pid(prof, pid)
    names = {"alpha_work": "alpha_work", "beta_work": "Beta.beta_work",
             "gamma_work": "gamma_work"}
    per = {k: mine.containing(n, "ratio.py").total for k, n in names.items()}
    hot = sum(per.values())
    # 2 CPUs shared with other tests: ratio.py may get a third of one
    assert hot >= 0.25 * SECONDS * RATE, (
        "ratio.py (pid %d) has %d samples in its functions over %d s at %d Hz:\n%s"
        % (pid, hot, SECONDS, RATE, prof.top()))
    busy = sum(truth["seconds"].values())
    # three standard deviations of a share estimated from `hot` samples
    tolerance = max(MIN_TOLERANCE, 300 * (0.25 / hot) ** 0.5)
    report = ["%s: profile %.1f%%, thread_time %.1f%%" % (
        k, pct(per[k], hot), pct(truth["seconds"][k], busy)) for k in names]
    bad = [k for k in names
           if abs(pct(per[k], hot) - pct(truth["seconds"][k], busy)) > tolerance]
    assert not bad, "ratio.py's shares (%d samples) off by more than %.1f points:\n  %s" % (
        hot, tolerance, "\n  ".join(report))
    for k, name in names.items():
        sub = mine.containing(name, "ratio.py")
        exact = sub.select(lambda f: [fr.name for fr in python_frames(f[1:])]
                           == ["<module>", "main", name])
        assert pct(exact.total, sub.total) >= 95.0, (
            "only %d of %d samples of %s have the stack <module>;main;%s:\n%s"
            % (exact.total, sub.total, name, name, sub.top()))
    print("ratio.py: " + "; ".join(report))


def record_next_to(procs, staging, workdir, hostile, wrap=()):
    """Record host-wide for SECONDS under /usr/bin/time -v (and the command
    wrap, when given) while ratio.py and the hostile process run; returns
    (profile, pysight's stderr, ratio's pid), after checking ratio.py's
    profile, pysight's exit, time, memory and CPU, and that the hostile
    process lived throughout."""
    interp = debian_311()
    result = staging.result_file(interp)
    ratio = procs.start(interp.argv(staging.script(interp, "ratio.py"), SECONDS + 1.5,
                                    result), stdout=subprocess.DEVNULL)
    out = os.path.join(workdir, "hostile.folded")
    t0 = time.monotonic()
    run = run_pysight(procs, ["record", "-v", "-d", SECONDS, "-r", RATE, "-o", out,
                              "--group-by", "process"],
                      user=["/usr/bin/time", "-v"] + list(wrap), timeout=SECONDS + 25)
    elapsed = time.monotonic() - t0
    assert_recorded(run)
    assert hostile.poll() is None, "the hostile process died (%s): the test proved nothing" % (
        hostile.returncode)
    assert ratio.wait(timeout=30) == 0, "ratio.py failed"
    truth = staging.read_result(interp, result)
    hwm, cpu, wall = time_v(run.stderr)
    print("pysight: %.1f s wall, %.2f s CPU, VmHWM %d KiB" % (wall, cpu, hwm))
    assert elapsed < SECONDS + 15, "pysight took %.1f s for a %d s recording" % (
        elapsed, SECONDS)
    assert hwm < MAX_HWM_KIB, "pysight's peak RSS was %d KiB:\n%s" % (hwm, run.stderr[-3000:])
    assert cpu < MAX_CPU_SHARE * wall, (
        "pysight used %.2f s of CPU in %.2f s: it spins\n%s" % (cpu, wall, run.stderr[-3000:]))
    prof = Profile.load(out)
    check_ratio(prof, truth, ratio.pid)
    return prof, run.stderr, ratio.pid


def unknown_frames(err):
    """The summary's count of frames that could not be named."""
    m = re.search(r"(\d+) unknown frames", err)
    assert m, err[-3000:]
    return int(m.group(1))


def liar(procs, staging, mode):
    interp = debian_311()
    # niced: the liar is sampled all the same, and leaves the CPU to ratio.py
    return start_ready(procs, ["nice", "-n", "19"] + interp.argv(
        staging.script(interp, "liar.py"), mode, SECONDS + 10))


def liar_frames(prof, pid):
    mine = of_pid(prof, pid)
    return mine, {fr.name for frames, _ in mine.stacks for fr in frames[1:]}


def test_frame_loop(procs, staging, workdir):
    """Two frames that are each other's caller: the walk stops at its bound
    and says so, it does not loop or fill the profile with copies."""
    bad = liar(procs, staging, "frame_loop")
    prof, err, _ = record_next_to(procs, staging, workdir, bad)
    mine, names = liar_frames(prof, bad.pid)
    print(mine.top(3))
    depth = max((len(f) for f, _ in mine.stacks), default=0)
    assert depth <= 8, "a looping stack came out %d frames deep:\n%s" % (depth, mine.top())
    assert "frame_loop.<locals>.frame_loop_inner" in names, mine.top()
    assert "[partial stack]" in names, mine.top()
    assert re.search(r"frame chain loops\s+\d+", err), err[-3000:]
    # dump walks the same chain from user space: it stops where BPF does
    run = run_pysight(procs, ["dump", "--json", "-p", bad.pid], timeout=30)
    assert run.returncode == 0, run.stderr
    threads = json.loads(run.stdout)["processes"][0]["threads"]
    looped = [t for t in threads if t["status"] == "frame chain loops"]
    assert looped, run.stdout
    dumped = tuple(fr["name"] for fr in reversed(looped[0]["frames"])
                   if not fr["name"].startswith("["))
    recorded = {tuple(fr.name for fr in python_frames(f[1:])) for f, _ in mine.stacks}
    assert dumped in recorded, "dump walked %s, the recording has %s" % (dumped, recorded)


def test_code_name_garbage(procs, staging, workdir):
    """co_name unmapped, co_qualname at junk bytes: the frame is named
    [unknown], never by the junk."""
    bad = liar(procs, staging, "code_name")
    prof, err, _ = record_next_to(procs, staging, workdir, bad)
    mine, names = liar_frames(prof, bad.pid)
    print(mine.top(3))
    assert "code_name_target" not in names and "code_name" in names, mine.top()
    junk = [n for n in names if "\x01\x02" in n or "\x00" in n or "\\x" in n]
    assert not junk, mine.top()
    assert mine.total > 0 and "[unknown]" in names, mine.top()
    assert unknown_frames(err) > 0, err[-3000:]


def test_huge_str(procs, staging, workdir):
    """A name whose length field says 2**62: bounded read, no name."""
    bad = liar(procs, staging, "huge_str")
    prof, err, _ = record_next_to(procs, staging, workdir, bad)
    mine, names = liar_frames(prof, bad.pid)
    print(mine.top(3))
    assert "huge_str" in names and "huge_str_target" not in names, mine.top()
    assert not [n for n in names if n.startswith("huge_str_name")], mine.top()
    assert "[unknown]" in names, mine.top()
    assert unknown_frames(err) > 0, err[-3000:]


def test_thread_cycle(procs, staging, workdir):
    """A thread list that cycles: the threads on the cycle are profiled,
    the one behind it is not, and the walk stays bounded."""
    bad = liar(procs, staging, "thread_cycle")
    prof, err, _ = record_next_to(procs, staging, workdir, bad)
    mine, names = liar_frames(prof, bad.pid)
    print(mine.top(3))
    assert "spin" in names, mine.top()
    # B0, behind the cycle, is counted as what happened to it
    assert re.search(r"thread list loops\s+\d+", err), err[-3000:]


def test_fake_python3(procs, staging, workdir):
    """A busy process named python3 that is not CPython (a copy of sh):
    left out of the profile, once, without cost."""
    fake = os.path.join(workdir, "python3")
    shutil.copy2("/bin/sh", fake)
    bad = start_ready(procs, ["nice", "-n", "19", fake, "-c",
                              "echo ready; while :; do :; done"])
    prof, err, _ = record_next_to(procs, staging, workdir, bad)
    assert of_pid(prof, bad.pid).total == 0, of_pid(prof, bad.pid).top()
    # said once, with the reason, under -v
    said = [l for l in err.splitlines() if l.startswith("pysight: skipping pid %d: " % bad.pid)]
    assert len(said) == 1 and "no _PyRuntime symbol in " in said[0], err[-3000:]


def corrupt_section_headers(path):
    """Point e_shoff past the end and scribble over the old section
    header table: what the loader never reads, and every symbol lookup
    does.  In place, same inode: the running process maps it."""
    with open(path, "r+b") as f:
        head = f.read(64)
        assert head[:4] == b"\x7fELF" and head[4] == 2, "not ELF64"
        shoff = int.from_bytes(head[0x28:0x30], "little")
        size = os.fstat(f.fileno()).st_size
        f.seek(shoff)
        f.write(os.urandom(min(4096, size - shoff)))
        f.seek(0x28)
        f.write((size * 4).to_bytes(8, "little"))


def truncate_after_segments(path):
    """Cut the file where its last PT_LOAD segment ends: the running
    process keeps every page it maps, a reader loses the symbol tables and
    section headers."""
    with open(path, "r+b") as f:
        head = f.read(64)
        assert head[:4] == b"\x7fELF" and head[4] == 2, "not ELF64"
        phoff = int.from_bytes(head[0x20:0x28], "little")
        phentsize = int.from_bytes(head[0x36:0x38], "little")
        phnum = int.from_bytes(head[0x38:0x3a], "little")
        end = 0
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            if int.from_bytes(ph[0:4], "little") == 1:     # PT_LOAD
                end = max(end, int.from_bytes(ph[8:16], "little")
                          + int.from_bytes(ph[32:40], "little"))
        assert 0 < end < os.fstat(f.fileno()).st_size
        f.truncate(end)


def profiled_right(procs, staging, workdir, bad, wrap=()):
    """Recorded next to ratio.py, the corrupt interpreter's process is
    profiled with its own names, never from the junk: what the loader
    reads (program headers, the dynamic section) is intact, and pysight
    reads it too.  Returns pysight's stderr."""
    prof, err, _ = record_next_to(procs, staging, workdir, bad, wrap)
    mine, names = liar_frames(prof, bad.pid)
    print(mine.top(3), "\n".join(l for l in err.splitlines() if str(bad.pid) in l))
    junk = [n for n in names if n not in ("<module>", "fn_corrupt", "[unknown]",
                                          "[partial stack]")]
    assert not junk, mine.top()
    burning = mine.containing("fn_corrupt").total
    # niced next to ratio.py: it gets what CPU is left, a few dozen samples
    assert burning >= 10 and burning >= 0.9 * mine.total, (
        "pid %d: %d of %d samples in fn_corrupt:\n%s\n%s" % (
            bad.pid, burning, mine.total, mine.top(), err[-2000:]))
    return err


@pytest.mark.parametrize("corrupt", [corrupt_section_headers, truncate_after_segments],
                         ids=["section_headers", "truncated"])
def test_corrupt_libpython_on_disk(corrupt, procs, staging, workdir):
    """A running interpreter whose libpython file is then corrupted on disk
    (section headers scribbled, or the file cut after its last loaded
    byte): it is profiled right, never named from the junk, and the
    others are profiled.  (An executable cannot be written while
    it runs, ETXTBSY; a mapped library can.  A rewrite of an executable
    between runs is test_hostile.py's.)"""
    pyenv = find_interp("3.12", "pyenv")
    if pyenv is None:
        pytest.skip("no pyenv 3.12 (shared libpython) here")
    libdir = os.path.join(workdir, "lib")
    os.mkdir(libdir)
    lib = os.path.join(os.path.dirname(os.path.dirname(pyenv.exe)), "lib",
                       "libpython3.12.so.1.0")
    copy = os.path.join(libdir, os.path.basename(lib))
    shutil.copy2(lib, copy)
    script = staging.script(pyenv, "named_burn.py")
    bad = start_ready(procs, ["nice", "-n", "19"] + pyenv.argv(script, "fn_corrupt", 30),
                      env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    with open("/proc/%d/maps" % bad.pid) as f:
        assert copy in f.read(), "the copy of libpython is not the one mapped"
    corrupt(copy)
    profiled_right(procs, staging, workdir, bad)


@pytest.mark.parametrize("corrupt", [corrupt_section_headers, truncate_after_segments],
                         ids=["section_headers", "truncated"])
def test_corrupt_interpreter_in_chroot(corrupt, procs, staging, workdir):
    """A container's python3 that is a corrupted copy of its interpreter
    (section headers scribbled, or cut after its last loaded byte; it still
    runs), read by pysight through /proc/PID/root: profiled right, never
    named from the junk, and the host's processes profiled."""
    interp = (find_interp("3.14", "chroot") or find_interp("3.13", "chroot")
              or find_interp("3.9", "chroot"))
    if interp is None:
        pytest.skip("no Debian chroot here")
    script = staging.script(interp, "named_burn.py")
    guest = os.path.join(os.path.dirname(script), "python3-%s" % corrupt.__name__)
    # the file itself, its symlinks followed inside the chroot
    real = subprocess.run(["chroot", interp.chroot, "readlink", "-f", interp.exe],
                          capture_output=True, text=True, check=True).stdout.strip()
    shutil.copy2(interp.host_path(real), interp.host_path(guest))
    corrupt(interp.host_path(guest))
    bad = start_ready(procs, ["nice", "-n", "19", "chroot", interp.chroot, guest, script,
                              "fn_corrupt", "30"])
    profiled_right(procs, staging, workdir, bad)


# Root without these two cannot open /proc/PID/map_files: pysight opens a
# mapped file by its path, from our root or else from the process's.
NO_MAP_FILES = ["setpriv", "--bounding-set=-sys_admin,-checkpoint_restore",
                "--inh-caps=-sys_admin,-checkpoint_restore", "--"]


def in_own_root(root, prefix, argv):
    """argv, run as a container runs it: in a mount namespace of its own
    whose root (pivot_root) is the directory root, with the host's /usr
    at /usr and the interpreter's prefix at /py.  The mounts are the
    namespace's, gone with its last process: nothing to undo."""
    for d in ("usr", "py", "proc", "old"):
        os.mkdir(os.path.join(root, d))
    for d in ("bin", "lib", "lib64"):
        if not os.path.islink("/" + d):
            pytest.skip("/%s is not a link into /usr" % d)
        os.symlink(os.readlink("/" + d), os.path.join(root, d))
    setup = ('mount --bind "$1" "$1" && mount --bind /usr "$1/usr" && '
             'mount --bind "$2" "$1/py" && mount -t proc proc "$1/proc" && '
             'cd "$1" && pivot_root . old && umount -l /old && shift 2 && exec "$@"')
    return ["unshare", "--mount", "sh", "-c", setup, "sh", root, prefix] + list(argv)


@pytest.mark.parametrize("corrupt", [corrupt_section_headers, truncate_after_segments],
                         ids=["section_headers", "truncated"])
def test_corrupt_libpython_in_container(corrupt, procs, staging, workdir):
    """test_corrupt_libpython_on_disk's libpython, in a container: the
    process has a root and a mount namespace of its own, and its maps name
    the library /pylib/libpython3.12.so.1.0, a path the host does not
    have.  Recorded without the capabilities that open map_files, pysight
    must read the file through /proc/PID/root; it is corrupted while the
    process runs, which is profiled right and never named from the junk."""
    pyenv = find_interp("3.12", "pyenv")
    if pyenv is None:
        pytest.skip("no pyenv 3.12 (shared libpython) here")
    if not shutil.which("setpriv") or not shutil.which("pivot_root"):
        pytest.skip("no setpriv or pivot_root (util-linux) here")
    prefix = os.path.dirname(os.path.dirname(pyenv.exe))
    root = os.path.join(workdir, "root")
    os.makedirs(os.path.join(root, "pylib"))
    lib = os.path.join(root, "pylib", "libpython3.12.so.1.0")
    shutil.copy2(os.path.join(prefix, "lib", os.path.basename(lib)), lib)
    shutil.copy(os.path.join(WORKLOADS, "named_burn.py"), root)
    guest_exe = "/py/" + os.path.relpath(pyenv.exe, prefix)
    bad = start_ready(procs, ["nice", "-n", "19"] + in_own_root(root, prefix, [
        "env", "LD_LIBRARY_PATH=/pylib", guest_exe, "/named_burn.py", "fn_corrupt", "30"]))
    with open("/proc/%d/maps" % bad.pid) as f:
        assert " /pylib/libpython3.12.so.1.0\n" in f.read(), "the copy is not the one mapped"
    assert not os.path.exists("/pylib"), "the host has a /pylib: the test proves nothing"
    corrupt(lib)
    err = profiled_right(procs, staging, workdir, bad, wrap=NO_MAP_FILES)
    assert "pid %d is Python 3.12 (/pylib/libpython3.12.so.1.0)" % bad.pid in err, err[-3000:]


# --------------------------------------------------------------------------
# pysight never writes into a target

WRITE_PRIMITIVES = re.compile(r"process_vm_writev|\bptrace\s*\(|PTRACE_(POKE|SET|ATTACH|SEIZE)"
                              r"|bpf_probe_write_user|/proc/[^\"]*/mem\b")


def test_no_write_primitive_in_sources_or_binary():
    """No process_vm_writev, no ptrace, no bpf_probe_write_user, no
    /proc/PID/mem: in the sources, and nothing of the kind imported by
    the binary."""
    found = []
    for sub in ("user", "bpf"):
        for name in sorted(os.listdir(os.path.join(REPO, sub))):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(REPO, sub, name), errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if WRITE_PRIMITIVES.search(line):
                        found.append("%s/%s:%d: %s" % (sub, name, n, line.strip()))
    assert not found, "\n".join(found)
    # the binary under test: the ASan build's too
    syms = subprocess.run(["nm", "-D", "--undefined-only", PYSIGHT], capture_output=True,
                          text=True, check=True).stdout
    imported = {l.split()[-1].split("@")[0] for l in syms.splitlines() if l.strip()}
    assert "process_vm_readv" in imported, "nm found no imports: %s" % sorted(imported)[:20]
    assert not imported & {"process_vm_writev", "ptrace"}, sorted(imported)


CHECKSUM_ROUNDS = 800


@pytest.mark.parametrize("mode", ["cpu", "wall"])
def test_target_output_unchanged(mode, procs, staging, workdir):
    """checksum.py prints a SHA-256 of data it builds and mutates (and of
    functions it compiles and frees, so the code-dealloc uprobe fires):
    recorded at 1000 Hz, its output is what it is without pysight."""
    interp = debian_311()
    argv = interp.argv(staging.script(interp, "checksum.py"), CHECKSUM_ROUNDS)
    alone = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert alone.returncode == 0 and "checksum" in alone.stdout, alone.stderr
    out = os.path.join(workdir, "checksum.folded")
    run = run_pysight(procs, ["record", "-v", "-r", 1000, "--mode", mode, "-o", out, "--"]
                      + argv, timeout=90)
    assert_recorded(run)
    assert run.stdout == alone.stdout, "output with pysight:\n%s\nwithout:\n%s" % (
        run.stdout, alone.stdout)
    prof = Profile.load(out)
    assert prof.containing("mutate", "checksum.py").total > 0, prof.top()
    m = re.search(r"uprobes (\d+)", run.stderr)
    assert m and int(m.group(1)) >= 1, "no code-dealloc uprobe was attached:\n%s" % (
        run.stderr[-2000:])
    m = re.search(r"code objects freed (\d+)", run.stderr)
    print("uprobes %s; %s" % (m.group(0) if m else "?", alone.stdout.splitlines()[-1]))


def test_uprobe_cost_per_hit(procs, staging, workdir):
    """The one thing pysight does inside a target's own execution: a
    uprobe on code dealloc, a breakpoint trap into the kernel per freed
    code object.  Measured against the same loop alone; the bound only
    catches the pathological (docs/DESIGN.md gives the number)."""
    interp = debian_311()
    # a private copy: other pysight runs on this host probe the shared file
    exe = os.path.join(workdir, "python3.11")
    shutil.copy2(interp.exe, exe)
    argv = [exe, staging.script(interp, "uprobe_cost.py"), "100000", "1.5"]
    base = probed = float("inf")
    for _ in range(2):      # alternated, the best of each: the host is shared
        alone = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert alone.returncode == 0, alone.stderr
        base = min(base, float(alone.stdout.split()[0]))
        run = run_pysight(procs, ["record", "-v", "-r", 10, "-o",
                                  os.path.join(workdir, "u.folded"), "--"] + argv,
                          timeout=90)
        assert_recorded(run)
        assert re.search(r"uprobes [1-9]", run.stderr), run.stderr[-2000:]
        probed = min(probed, float(run.stdout.split()[0]))
    print("code dealloc: %.0f ns alone, %.0f ns with the uprobe: %.2f us a hit"
          % (base, probed, (probed - base) / 1000))
    assert probed - base < 20000, "a uprobe hit costs %.1f us" % ((probed - base) / 1000)


@pytest.mark.parametrize("mode,says", [("frame_loop", "[partial stack]"),
                                       ("thread_cycle", "(no stack: thread list loops)")])
def test_dump_of_a_liar(mode, says, procs, staging):
    """dump walks from user space what BPF walks: the same loops end it,
    and it says why a thread has no stack."""
    bad = liar(procs, staging, mode)
    run = run_pysight(procs, ["dump", "-p", bad.pid], timeout=30)
    assert run.returncode == 0, run.stderr
    print(run.stdout)
    assert says in run.stdout, run.stdout
    assert len(run.stdout.splitlines()) < 40, run.stdout
