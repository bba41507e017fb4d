"""--native: one stack from the Python line through the native code it
called, unwound in BPF from each binary's .eh_frame.  Real C and C++
libraries built here, called through ctypes (tests/workloads/native_app.py)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import Profile, assert_recorded, find_interp, run_pysight
from test_top import first_is, term, top_cmd, top_rows  # noqa: F401 (term: a fixture)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..", "workloads", "native")
SECONDS = 3

# the interpreters the issue names: Debian's 3.11, pyenv's 3.8 and 3.12
# (static libpython), sid's 3.14 (the eval loop's symbol is a stub there)
WANTED = [("3.11", "debian"), ("3.8", None), ("3.12", None), ("3.14", "chroot")]


def native_interpreters():
    found = [find_interp(m, k) for m, k in WANTED]
    return [i for i in found if i] or [None]


def pytest_generate_tests(metafunc):
    if "ninterp" in metafunc.fixturenames:
        interps = native_interpreters()
        metafunc.parametrize("ninterp", interps,
                             ids=[i.id if i else "none" for i in interps])


def build(staging, interp, name, argv):
    """Compile into the interpreter's staging dir: the path it sees."""
    guest = os.path.join(staging.dir(interp), name)
    subprocess.run(argv + ["-o", interp.host_path(guest)], check=True)
    return guest


def libburn(staging, interp, frame_pointers=False, eh_frame=True):
    """frame_pointers: in every function, leaves too; eh_frame False: no
    unwind tables at all, the frame pointers alone to walk by."""
    flags = ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"] if frame_pointers \
        else ["-fomit-frame-pointer"]
    if not eh_frame:
        flags += ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
    name = "libburn-fp.so" if frame_pointers else "libburn.so"
    # clang: gcc 12 leaves leaf functions without a frame whatever it is told
    cc = "clang" if frame_pointers else "cc"
    return build(staging, interp, name, [cc, "-O2", *flags, "-shared", "-fPIC",
                                         os.path.join(SOURCES, "burn.c")])


def run_app(procs, staging, interp, lib, workdir, *extra, late=()):
    """record --native of native_app.py: its profile, its lines, the run."""
    result = staging.result_file(interp)
    app = procs.start(interp.argv(staging.script(interp, "native_app.py"), lib,
                                  SECONDS + 4, result, *late))
    truth = staging.wait_result(interp, result, app)
    out = os.path.join(workdir, "native.folded")
    run = run_pysight(procs, ["record", *extra, "-p", app.pid, "-d", SECONDS, "-o", out],
                      timeout=60)
    assert_recorded(run)
    return Profile.load(out), truth["lines"], run


def names(frames):
    return [f.name for f in frames]


def of_thread(prof, fn):
    """Stacks whose Python frames run through fn."""
    return prof.select(lambda fr: any(f.name == fn and f.file for f in fr))


def index_of(seq, pred, start=0):
    for i in range(start, len(seq)):
        if pred(seq[i]):
            return i
    return -1


def ends_in_burn(frames, caller, line):
    """caller (app:line);<native glue>;burn_outer [libburn];burn_inner
    [libburn]: nothing but native frames between the Python line and
    the library."""
    n = names(frames)
    if n[-2:] != ["burn_outer [libburn.so]", "burn_inner [libburn.so]"] and \
       n[-2:] != ["burn_outer [libburn-fp.so]", "burn_inner [libburn-fp.so]"]:
        return False
    py = [i for i, f in enumerate(frames) if f.file]
    return bool(py) and frames[py[-1]].name == caller and frames[py[-1]].line == line


def sandwich_order(frames, lines):
    """sandwich;…;burn_cb;…;py_callback (app:M);…;burn_outer;burn_inner."""
    n = names(frames)
    i = index_of(frames, lambda f: f.name == "sandwich" and f.line == lines["sandwich"])
    j = index_of(n, lambda x: x.startswith("burn_cb [libburn"), i + 1) if i >= 0 else -1
    k = index_of(frames, lambda f: f.name == "py_callback" and f.line == lines["callback"],
                 j + 1) if j >= 0 else -1
    return k >= 0 and ends_in_burn(frames[k:], "py_callback", lines["callback"])


def on_cpu(prof):
    """The stacks with no off-CPU cause in them."""
    return prof.select(lambda fr: not any(f.name.startswith(("[off-cpu:", "[runqueue]"))
                                          for f in fr))


def check_waiter(prof, lines):
    """waiter;burn_io [libburn.so];read [libc…];[off-cpu: io];…_[k]"""
    waiter = of_thread(prof, "waiter").select(
        lambda fr: any(f.name == "[off-cpu: io]" for f in fr))

    def shape(fr):
        n = names(fr)
        i = index_of(n, lambda x: x == "[off-cpu: io]")
        py = [j for j, f in enumerate(fr[:i]) if f.file]
        b = index_of(n, lambda x: x == "burn_io [libburn.so]")
        # glibc 2.41 reads through its cancellation helpers, unnamed in
        # a libc without its debug symbols
        return (b >= 1 and py and fr[py[-1]].name == "waiter"
                and fr[py[-1]].line == lines["waiter"] and py[-1] < b
                and n[b + 1].startswith("read [libc")
                and all(x.startswith(("read [libc", "[libc")) for x in n[b + 1:i])
                and len(n) > i + 1 and all(x.endswith("_[k]") for x in n[i + 1:]))
    good = waiter.select(shape)
    print("waiter: %.0f%% of %d ms off-CPU io in burn_io;read;…_[k]" % (
        100.0 * good.total / max(waiter.total, 1), waiter.total // 1000))
    assert waiter.total >= 1e6, "waiter blocked under a second:\n%s" % prof.top()
    assert good.total >= 0.95 * waiter.total, \
        "waiter's off-CPU time is not waiter;burn_io;read;[off-cpu: io];…_[k]:\n%s" % (
            waiter.top())


def check_burn(prof, lines, run):
    prof = on_cpu(prof)
    worker = of_thread(prof, "worker")
    good = worker.select(lambda fr: ends_in_burn(fr, "worker", lines["worker"]))
    print("worker: %d of %d end in burn_outer;burn_inner" % (good.total, worker.total))
    assert len(worker.stacks) and worker.total >= (1e6 if wall(run) else 100), \
        "too little of worker:\n%s\n%s" % (prof.top(), run.stderr)
    assert good.total >= 0.95 * worker.total, \
        "%d of %d worker samples end worker;…;burn_outer;burn_inner:\n%s" % (
            good.total, worker.total, worker.top())
    sandwich = of_thread(prof, "sandwich")
    ordered = sandwich.select(lambda fr: sandwich_order(fr, lines))
    print("sandwich: %d of %d in order" % (ordered.total, sandwich.total))
    assert sandwich.total >= (1e6 if wall(run) else 100), \
        "too little of sandwich:\n%s" % prof.top()
    assert ordered.total >= 0.9 * sandwich.total, \
        "%d of %d sandwich samples read sandwich;burn_cb;py_callback;burn_outer;" \
        "burn_inner:\n%s" % (ordered.total, sandwich.total, sandwich.top())
    # the interpreter's own frames are left out
    inner = [x for x in prof.names() if "_PyEval_EvalFrameDefault" in x]
    assert not inner, "interpreter frames without --native-all: %s" % inner


def wall(run):
    """A wall-mode profile: its folded file counts microseconds."""
    return "wall" in run.argv


def test_native_stacks(ninterp, procs, staging, workdir):
    """In wall mode, with kernel stacks: worker's and sandwich's CPU
    time, the Python line, the native glue and the C library's frames in
    one stack, through code without frame pointers; waiter's blocked
    time, its native frames down to libc's read and the kernel's."""
    if ninterp is None:
        pytest.skip("no interpreter")
    lib = libburn(staging, ninterp)
    prof, lines, run = run_app(procs, staging, ninterp, lib, workdir, "--native",
                               "--mode", "wall", "--kernel-stacks")
    check_burn(prof, lines, run)
    check_waiter(prof, lines)


@pytest.mark.parametrize("eh_frame", [True, False], ids=["eh_frame", "no_eh_frame"])
def test_native_frame_pointers(eh_frame, procs, staging, workdir):
    """The same library built with frame pointers: the same stacks; and
    built without unwind tables, walked by its frame pointers alone."""
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = libburn(staging, interp, frame_pointers=True, eh_frame=eh_frame)
    if not eh_frame:
        out = subprocess.run(["readelf", "-wf", interp.host_path(lib)], capture_output=True,
                             text=True, check=True).stdout
        assert "FDE" not in out, "the library has unwind tables after all"
    prof, lines, run = run_app(procs, staging, interp, lib, workdir, "--native")
    check_burn(prof, lines, run)


def test_native_all_keeps_the_interpreter(procs, staging, workdir):
    """--native-all: _PyEval_EvalFrameDefault stays, below the Python
    frames it ran."""
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = libburn(staging, interp)
    prof, lines, _ = run_app(procs, staging, interp, lib, workdir, "--native-all")
    worker = of_thread(prof, "worker")
    evals = worker.select(lambda fr: any(f.name.startswith("_PyEval_EvalFrameDefault [")
                                         for f in fr))
    assert evals.total >= 0.9 * worker.total, worker.top()
    # an eval frame sits right after... the frames it ran: root first,
    # _PyEval_EvalFrameDefault then worker's line
    for frames, _ in evals.stacks:
        n = names(frames)
        w = index_of(frames, lambda f: f.name == "worker")
        if w > 0 and n[-1] == "burn_inner [libburn.so]":
            assert n[w - 1].startswith("_PyEval_EvalFrameDefault ["), n
            break
    else:
        pytest.fail("no worker stack ends in burn_inner:\n%s" % worker.top())


def test_python_frames_unchanged(procs, staging, workdir):
    """With --native and without, the Python side reads the same
    (ratio.py, pure Python): each function's share within 5 points of the
    workload's own thread_time split, and its Python frames whole,
    <module>;main;function."""
    from test_ratio import RATE, SECONDS, TOLERANCE, expected_names
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    names = expected_names(interp)
    for extra in ([], ["--native"]):
        result = staging.result_file(interp)
        out = os.path.join(workdir, "ratio%d.folded" % len(extra))
        run = run_pysight(procs, ["record", *extra, "-o", out, "-r", RATE, "--"]
                          + interp.argv(staging.script(interp, "ratio.py"), SECONDS, result),
                          timeout=90)
        assert_recorded(run)
        truth = staging.read_result(interp, result)["seconds"]
        prof = Profile.load(out)
        per = {k: prof.containing(n, "ratio.py") for k, n in names.items()}
        hot = sum(p.total for p in per.values())
        for k, n in names.items():
            got, want = 100.0 * per[k].total / hot, 100.0 * truth[k] / sum(truth.values())
            print("%s %s: %.1f%%, thread_time %.1f%%" % (extra, n, got, want))
            assert abs(got - want) <= TOLERANCE, (extra, n, got, want)
            whole = per[k].select(lambda fr: [f.name for f in fr if f.file]
                                  == ["<module>", "main", n])
            assert whole.total >= 0.95 * per[k].total, (extra, per[k].top())


def test_cxx_stripped_and_dlopen(procs, staging, workdir):
    """Libraries dlopen'ed while recording: a C++ one's frames read
    demangled (namespace, templates); a stripped one's still unwind, as
    [library]+0x…"""
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    if not shutil.which("clang++"):
        pytest.fail("no clang++: make deps installs clang")
    lib = libburn(staging, interp)
    cxx = build(staging, interp, "libshapes.so", ["clang++", "-O2", "-fomit-frame-pointer",
                                                  "-shared", "-fPIC",
                                                  os.path.join(SOURCES, "shapes.cpp")])
    hidden = build(staging, interp, "libhidden.so", ["cc", "-O2", "-fomit-frame-pointer",
                                                     "-shared", "-fPIC", "-s",
                                                     os.path.join(SOURCES, "hidden.c")])
    prof, lines, run = run_app(procs, staging, interp, lib, workdir, "--native",
                               late=(cxx, "shapes_burn", hidden, "hidden_burn"))
    late = of_thread(prof, "late_calls")
    print(late.top())
    assert late.total >= 50, "too few samples of the late thread:\n%s\n%s" % (
        prof.top(), run.stderr)
    cxx_names = {n for n in late.names() if n.endswith("[libshapes.so]")}
    assert "geo::Grid<double>::fill [libshapes.so]" in cxx_names, cxx_names
    assert "geo::paint<double> [libshapes.so]" in cxx_names, cxx_names
    hid = late.select(lambda fr: fr[-1].name.startswith("[libhidden.so]+0x"))
    assert hid.total >= 0.2 * late.total, late.top()
    # the stripped library's frames still unwind to the Python line
    whole = hid.select(lambda fr: any(f.name == "late_calls" and f.line == lines["late"]
                                      for f in fr))
    assert whole.total >= 0.9 * hid.total, hid.top()


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True,
                         check=True).stdout
    return out.split("Build ID:")[1].split()[0]


def symbol(path, name):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    return next(int(l.split()[0], 16) for l in out.splitlines() if l.endswith(" " + name))


def test_agent_exports_native_mappings(procs, staging, workdir, otel_collector):
    """agent --native to a real Collector: native frames' locations sit
    in their binary's mapping, which carries its build-id, at the
    function's address in the binary, so a backend can symbolise them."""
    from otelcol import free_port
    from test_agent import Agent, ours
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = libburn(staging, interp)
    col = otel_collector.start(free_port())
    result = staging.result_file(interp)
    app = procs.start(interp.argv(staging.script(interp, "native_app.py"), lib, 3, result))
    staging.wait_result(interp, result, app)
    agent = Agent(procs, workdir, ["--otlp", col.endpoint, "--export-interval", 1, "-r", 97,
                                   "--native", "-p", app.pid]).wait_sampling()
    app.wait(timeout=30)  # reaped: a zombie would keep the agent on
    assert agent.wait() == 0, agent.stderr
    samples = [s for _, p in ours(col, app.pid) for s in p.samples]
    leaf = [s for s in samples if s.frames and s.frames[0][0] == "burn_inner [libburn.so]"]
    n = sum(s.values[0] for s in leaf)
    assert n >= 50, "%d samples end in burn_inner:\n%s" % (n, agent.stderr)
    want = build_id(interp.host_path(lib))
    inner = symbol(interp.host_path(lib), "burn_inner")
    for s in leaf:
        mapping = s.mappings[0]
        assert mapping and mapping[0] == "libburn.so", s.mappings[:3]
        assert mapping[2].get("process.executable.build_id.gnu") == want, mapping
        assert s.addresses[0] - mapping[1] == inner, (hex(s.addresses[0]), mapping, hex(inner))
        # Python frames have no mapping
        py = [m for f, m in zip(s.frames, s.mappings) if f[0] == "worker"]
        assert py == [None] or not py, s.mappings


def test_pprof_and_svg(procs, staging, workdir):
    """pprof: native frames' Locations in their binary's Mapping, which
    names it with its build-id, at the function's address in it (read by
    go tool pprof).  The flame graph colours native frames apart."""
    from test_formats import go_binary
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = libburn(staging, interp)
    pb, svg = os.path.join(workdir, "n.pb.gz"), os.path.join(workdir, "n.svg")
    run_app(procs, staging, interp, lib, workdir, "--native", "-o", pb, "-o", svg)
    raw = subprocess.run([go_binary(), "tool", "pprof", "-raw", pb], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    maps = raw.split("Mappings\n")[1].splitlines()
    mine = [l.split() for l in maps if " libburn.so " in l]
    assert len(mine) == 1, maps
    mid, start = mine[0][0].rstrip(":"), int(mine[0][1].split("/")[0], 16)
    assert mine[0][3] == build_id(interp.host_path(lib)), mine
    locs = raw.split("Locations\n")[1].split("Mappings\n")[0].splitlines()
    inner = [l.split() for l in locs if "burn_inner [libburn.so]" in l]
    assert len(inner) == 1, locs
    assert inner[0][2] == "M=" + mid, inner
    assert int(inner[0][1], 16) - start == symbol(interp.host_path(lib), "burn_inner"), inner
    # in Chromium: native boxes in the native colours (write_svg.c's
    # BOX_NATIVE: purple), Python's and the rest not
    from test_svg import browse
    seen = browse(procs, svg, "burn_inner [", [])
    assert not seen["errors"], seen["errors"]

    def purple(fill):
        r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
        return 165 <= r <= 195 and 120 <= g <= 160 and 215 <= b <= 245
    native = [b for b in seen["before"] if b["label"].startswith(("burn_", "ffi_call ["))]
    python = [b for b in seen["before"] if b["label"].startswith(("worker (", "sandwich ("))]
    assert native and python, [b["label"] for b in seen["before"]]
    assert all(purple(b["fill"]) for b in native), [(b["label"], b["fill"]) for b in native]
    assert not any(purple(b["fill"]) for b in python), [(b["label"], b["fill"]) for b in python]


def test_dump_native(procs, staging, workdir):
    """dump --native: a blocked thread's native frames between its
    Python line and the system call it waits in; --json says the same."""
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = libburn(staging, interp)
    result = staging.result_file(interp)
    app = procs.start(interp.argv(staging.script(interp, "native_app.py"), lib, 20, result))
    lines = staging.wait_result(interp, result, app)["lines"]
    time.sleep(0.5)  # waiter is in its read()
    run = run_pysight(procs, ["dump", "--native", "-p", app.pid], timeout=60)
    assert run.returncode == 0, run.stderr
    blocks = run.stdout.split("\n\n")
    waiter = next((b for b in blocks if '"waiter"' in b or "(waiter)" in b), None)
    assert waiter, run.stdout
    frames = [l.strip() for l in waiter.splitlines()[1:]]
    tail = "native_app.py:%d)" % lines["waiter"]
    at = [i for i, f in enumerate(frames) if f.startswith("waiter (") and f.endswith(tail)]
    assert frames[0].startswith("read [libc") and frames[1] == "burn_io [libburn.so]", frames
    assert at and at[0] > 1, frames
    js = run_pysight(procs, ["dump", "--native", "--json", "-p", app.pid], timeout=60)
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    names = [[f["name"] for f in t["frames"]] for p in doc["processes"] for t in p["threads"]]
    assert any(n[:2] == [frames[0], "burn_io [libburn.so]"] for n in names), names
    bad = run_pysight(procs, ["dump", "--native", "--locals", "-p", app.pid], timeout=60)
    assert bad.returncode == 2 and "--native" in bad.stderr, bad.stderr


def test_top_native(procs, staging, workdir, term):
    """top --native in a real terminal: the C function the CPU is in heads
    the table, its Python caller below it by total."""
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = libburn(staging, interp)
    result = staging.result_file(interp)
    app = procs.start(interp.argv(staging.script(interp, "native_app.py"), lib, 30, result))
    staging.wait_result(interp, result, app)
    t = term(top_cmd("-i", 1, "--native", "-p", app.pid))
    screen = t.wait(first_is("burn_inner [libburn.so]"), 15, "burn_inner on top")
    rows = {r["text"]: r for r in top_rows(screen)}
    assert rows["burn_inner [libburn.so]"]["own"] > 80, screen
    worker = [r for text, r in rows.items() if text.startswith("worker (")]
    assert worker and 35 <= worker[0]["total"] <= 65, screen


def marked_lines(path):
    with open(path) as f:
        return {t.split("# LINE:")[1].strip(): n for n, t in enumerate(f, 1) if "# LINE:" in t}


def test_numpy_openblas(procs, workdir):
    """numpy from PyPI: the dot line's samples go on into numpy's C code
    and its bundled OpenBLAS, by name (no frame pointers in either)."""
    script = os.path.join(SOURCES, "numpy_dot.py")
    line = marked_lines(script)["dot"]
    out = os.path.join(workdir, "np.folded")
    # one BLAS thread: the product runs in the thread that asked for it
    run = run_pysight(procs, ["record", "--native", "-d", SECONDS, "-o", out, "--",
                              sys.executable, script, SECONDS + 2], timeout=90,
                      env={"OPENBLAS_NUM_THREADS": "1"})
    assert_recorded(run)
    prof = Profile.load(out)
    dot = prof.select(lambda fr: any(f.line == line and f.file and f.file.endswith(
        "numpy_dot.py") for f in fr))
    into = dot.select(lambda fr: any(f.name.startswith("array_dot [_multiarray_umath")
                                     for f in fr)
                      and any("[libscipy_openblas" in f.name and not f.name.startswith("[")
                              for f in fr))
    print("dot: %d of %d samples into numpy and OpenBLAS by name" % (into.total, dot.total))
    assert dot.total >= 100, prof.top()
    assert into.total >= 0.9 * dot.total, dot.top()


def test_cython(procs, workdir):
    """A Cython module built here: its compiled code by its C name under
    the calling line, and the Python it calls back above it."""
    import sysconfig
    src = os.path.join(SOURCES, "cyburn.pyx")
    c = os.path.join(workdir, "cyburn.c")
    so = os.path.join(workdir, "cyburn" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([sys.executable, "-m", "cython", "-3", src, "-o", c], check=True)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"],
                    c, "-o", so], check=True)
    script = os.path.join(SOURCES, "cython_app.py")
    lines = marked_lines(script)
    out = os.path.join(workdir, "cy.folded")
    run = run_pysight(procs, ["record", "--native", "-d", SECONDS, "-o", out, "--",
                              sys.executable, script, workdir, SECONDS + 2], timeout=90)
    assert_recorded(run)
    prof = Profile.load(out)

    def cy_frame(f):
        return f.name.startswith("__pyx_") and "[cyburn." in f.name

    call = prof.select(lambda fr: any(f.line == lines["call"] and f.file for f in fr))
    under = call.select(lambda fr: any(cy_frame(f) for f in fr))
    print("call: %d of %d samples in cyburn's C functions" % (under.total, call.total))
    assert call.total >= 100, prof.top()
    assert under.total >= 0.9 * call.total, call.top()

    def back_above(fr):
        c = index_of(fr, cy_frame)
        b = index_of(fr, lambda f: f.name == "py_back" and f.file)
        return 0 <= c < b
    back = prof.select(lambda fr: any(f.name == "py_back" and f.file for f in fr))
    assert back.total >= 5, prof.top()
    assert back.select(back_above).total >= 0.9 * back.total, back.top()


def test_churn_returns_memory(procs, staging, workdir):
    """200 short processes, each mapping a fresh copy of a library: each
    is read, and once none maps its copy (and the ten seconds an unmapped
    binary is kept have passed), the unwind tables are all let go."""
    interp = find_interp("3.11", "debian") or pytest.skip("no Debian 3.11")
    lib = interp.host_path(libburn(staging, interp))
    copies = os.path.join(workdir, "copies")
    os.mkdir(copies)
    n = 200
    loop = ("for i in $(seq 1 %d); do cp %s %s/lib$i.so; %s -S -c \"import ctypes; "
            "ctypes.CDLL('%s/lib'+'$i'+'.so').burn_outer(20000000)\" || exit 1; done; sleep 11"
            % (n, lib, copies, interp.exe, copies))
    run = run_pysight(procs, ["record", "--native", "-r", 997, "-o",
                              os.path.join(workdir, "churn.folded"), "--", "sh", "-c", loop],
                      timeout=180)
    assert_recorded(run)
    m = re.search(r"(\d+) readings of processes' mappings, (\d+) binaries read; (\d+) "
                  r"binaries held \((\d+) no process maps now\), ([\d.]+) MiB", run.stderr)
    assert m, run.stderr
    reads, loaded, held, unmapped = (int(m.group(i)) for i in range(1, 5))
    mib = m.group(5)
    print("%d readings, %d binaries read; at the end %d binaries held, %s MiB" % (
        reads, loaded, held, mib))
    assert reads >= n, run.stderr
    # each copy once, and the interpreter's own libraries once, not at
    # every exec (a dozen each)
    assert n <= loaded <= n + 40, run.stderr
    assert held == 0 and unmapped == 0 and mib == "0.0", run.stderr
    prof = Profile.load(os.path.join(workdir, "churn.folded"))
    named = {f.name for fr, _ in prof.stacks for f in fr if f.name.startswith("burn_inner [lib")}
    assert len(named) >= 0.8 * n, "only %d copies' frames named" % len(named)
