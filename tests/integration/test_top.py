"""pysight top: the live view in a real terminal (tmux), its keys, the
terminal given back on every exit, and plain tables on a pipe."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from conftest import PYSIGHT, WORKLOADS, run_pysight

PYTHON = "/usr/bin/python3.11"
SHIFT = os.path.join(WORKLOADS, "top_shift.py")
INTERVAL = 1.0
COLS, LINES = 160, 40    # a Term's window
HEADING = "OWN%   TOTAL%   OWN TIME  TOTAL TIME  PROCESS"
ROW = re.compile(r"^\s*(?P<own>[\d.]+)%\s+(?P<total>[\d.]+)%\s+(?P<own_s>[\d.]+)s\s+"
                 r"(?P<total_s>[\d.]+)s  (?P<process>.{22}) (?P<text>.+)$")


pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason="no %s" % PYTHON)


def parse_rows(text):
    """The rows of a screen or of one plain table, as dicts, in order."""
    rows, seen = [], False
    for line in text.splitlines():
        if HEADING in line:
            seen = True
            continue
        m = ROW.match(line) if seen else None
        if m:
            d = m.groupdict()
            for k in ("own", "total", "own_s", "total_s"):
                d[k] = float(d[k])
            d["process"] = d["process"].strip()
            d["width"] = len(line)
            rows.append(d)
    return rows


def pids_of_children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class Term:
    """A tmux server of our own (a private socket), one fixed-size window
    running `sh -c CMD; echo DONE-$?` that stays open afterwards."""

    def __init__(self, cmd, cwd):
        self.sock = "pysight-test-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        self.name = "top"
        # the shell outlives a Ctrl-C sent to the pane (a trap, not an
        # ignore, so that what it runs gets SIGINT as usual)
        shell = "ulimit -c 0; trap : INT; %s; echo DONE-$?; exec sleep 600" % cmd
        subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", "new-session", "-d",
                        "-s", self.name, "-x", str(COLS), "-y", str(LINES), "-c", cwd,
                        "sh", "-c", shell], check=True, timeout=30)
        out = self.tmux("display-message", "-p", "-t", self.name,
                        "#{pane_pid} #{socket_path}").split()
        self.shell_pid, self.sock_path = int(out[0]), out[1]
        self.started = set()    # pids under the pane, found while they live

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.sock] + list(args), capture_output=True,
                              text=True, timeout=30).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def alternate_on(self):
        return self.tmux("display-message", "-p", "-t", self.name,
                         "#{alternate_on}").strip() == "1"

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def pysight_pid(self):
        for pid in pids_of_children(self.shell_pid):
            self.started.add(pid)
            self.started.update(pids_of_children(pid))
            try:
                if os.readlink("/proc/%d/exe" % pid).endswith("pysight"):
                    return pid
            except OSError:
                pass
        return None

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            self.pysight_pid()
            text = self.screen()
            if pred(text):
                return text
            if time.monotonic() > deadline:
                size = self.tmux("display-message", "-p", "-t", self.name,
                                 "#{window_width}x#{window_height}").strip()
                pytest.fail("%s: not within %.1fs; screen (%s):\n%s\nrows: %r"
                            % (what, timeout, size, text, top_rows(text)))
            time.sleep(0.1)

    def close(self):
        self.pysight_pid()
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True,
                       timeout=30)
        try:
            os.unlink(self.sock_path)
        except OSError:
            pass
        deadline = time.monotonic() + 15
        alive = lambda: [p for p in self.started if os.path.exists("/proc/%d" % p)
                         and not _zombie(p)]
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in alive():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def term(procs, workdir):
    """term(cmd): a Term, closed (server and everything under it gone)
    at teardown, passed or not."""
    made = []

    def make(cmd):
        t = Term(cmd, workdir)
        made.append(t)
        return t
    yield make
    for t in made:
        t.close()


def shift_script(workdir):
    """top_shift.py in the workdir, run from there, so that its frames
    read "phase_one (top_shift.py:N)" and fit the screen."""
    shutil.copy(SHIFT, workdir)
    return "top_shift.py"


def top_cmd(*args):
    return " ".join(shlex.quote(str(a)) for a in [PYSIGHT, "top"] + list(args))


def top_rows(text):
    return parse_rows(text) if HEADING in text else []


def first_is(fn):
    return lambda text: bool(top_rows(text)) and name(top_rows(text)[0]) == fn


def name(row):
    return row["text"].split(" (")[0]


def sorted_by(text, column):
    values = [r[column] for r in top_rows(text)]
    return bool(values) and values == sorted(values, reverse=True)


def code_rows(screen):
    """The rows that name code: not a pseudo-frame such as [unknown], which
    a code object freed before it was named leaves (one under ASan's slower
    start), and which has no file or line to show or hide.  Nor a row the
    window's edge cuts, whose end is not on the screen: a sample of the
    interpreter's start can name `FileFinder.path_hook.<locals>.
    path_hook_for_FileFinder (<frozen importlib._bootstrap_external>:1698)`,
    163 columns as a row (one under a full test run, where the start is
    slower and more of it is sampled)."""
    return [r for r in top_rows(screen)
            if not r["text"].startswith("[") and r["width"] < COLS]


def test_follows_the_hot_function_and_keys(term, workdir):
    """phase_one shows first, phase_two within two refreshes of the change;
    the keys sort, toggle lines, pause and quit, and q gives the terminal
    back."""
    marker = os.path.join(workdir, "switched")
    t = term(top_cmd("-i", INTERVAL, "--", PYTHON, shift_script(workdir), 5, marker))
    t.wait(first_is("phase_one"), 15, "phase_one on top")
    assert t.alternate_on(), "top should draw on the alternate screen"

    # Each check waits for the screen to say so: a capture may land
    # while curses is still writing it.
    # 2: total share, where <module> and main hold 100% and own nothing
    t.keys("2")
    t.wait(lambda s: "sorted by total %" in s and sorted_by(s, "total")
           and name(top_rows(s)[0]) in ("<module>", "main") and top_rows(s)[0]["total"] > 90,
           3, "sorted by total share, <module> or main first")
    # 4: total time since the start
    t.keys("4")
    t.wait(lambda s: "sorted by total time" in s and sorted_by(s, "total_s"), 3,
           "sorted by total time")
    # 3, then 1: own time, own share: phase_one leads again
    t.keys("3")
    t.wait(lambda s: "sorted by own time" in s and sorted_by(s, "own_s")
           and first_is("phase_one")(s), 3, "sorted by own time, phase_one first")
    t.keys("1")
    t.wait(lambda s: "sorted by own %" in s and sorted_by(s, "own")
           and first_is("phase_one")(s), 3, "sorted by own share, phase_one first")

    # l: by function, no line numbers; l again: lines back
    t.keys("l")
    t.wait(lambda s: "by function" in s and top_rows(s)
           and all(re.search(r"\([^():]+\)$", r["text"]) for r in code_rows(s)), 3,
           "lines off")
    t.keys("l")
    t.wait(lambda s: "by line" in s and top_rows(s)
           and all(re.search(r":\d+\)$", r["text"]) for r in code_rows(s)), 3, "lines on")

    # the change, seen within two refreshes
    deadline = time.monotonic() + 30
    while not os.path.exists(marker):
        assert time.monotonic() < deadline, "the workload never reached phase_two"
        time.sleep(0.05)
    switched = time.monotonic()
    t.wait(first_is("phase_two"), 2 * INTERVAL + 0.8, "phase_two on top after the change")
    assert time.monotonic() - switched <= 2 * INTERVAL + 0.8

    # space: the display stops (sampling goes on), space again: it moves
    t.keys("Space")
    text = t.wait(lambda s: "[PAUSED]" in s, 3, "paused")
    frozen = re.search(r"([\d.]+) s in", text).group(1)
    time.sleep(2.5 * INTERVAL)
    assert re.search(r"([\d.]+) s in", t.screen()).group(1) == frozen, "paused display moved"
    t.keys("Space")
    t.wait(lambda s: "[PAUSED]" not in s and re.search(r"([\d.]+) s in", s).group(1) != frozen,
           3 * INTERVAL, "unpaused")

    # q: top exits 0, the shell's screen is back
    t.keys("q")
    text = t.wait(lambda s: "DONE-" in s, 15, "exit after q")
    assert "DONE-0" in text and HEADING not in text, text
    assert not t.alternate_on(), "the alternate screen is still on after q"


def test_group_by_process(term, procs, workdir):
    """Two processes of one script: merged rows name both, p gives a row
    per process, each process's rows together."""
    script = shift_script(workdir)
    a = procs.start([PYTHON, script, "30", "a"], cwd=workdir)
    b = procs.start([PYTHON, script, "30", "b"], cwd=workdir)
    t = term(top_cmd("-i", INTERVAL, "--nolineno", "-p", a.pid, "-p", b.pid))
    text = t.wait(lambda s: any(r["text"].startswith("phase_one (") for r in top_rows(s)),
                  15, "phase_one shown")
    one = [r for r in top_rows(text) if r["text"].startswith("phase_one (")]
    assert len(one) == 1 and one[0]["process"] == "python3.11 (2)", text
    assert "processes merged" in text

    t.keys("p")
    text = t.wait(lambda s: "grouped by process" in s, 3, "grouped")
    rows = top_rows(text)
    procs_seen = [r["process"] for r in rows]
    want = {"python3.11 %d" % a.pid, "python3.11 %d" % b.pid}
    assert set(procs_seen) == want, text
    # one run of rows per process
    runs = [p for i, p in enumerate(procs_seen) if i == 0 or procs_seen[i - 1] != p]
    assert sorted(runs) == sorted(want), "a process's rows are not together:\n%s" % text
    assert len([r for r in rows if r["text"].startswith("phase_one (")]) == 2, text

    t.keys("p")
    t.wait(lambda s: "processes merged" in s, 3, "merged again")
    t.keys("q")
    text = t.wait(lambda s: "DONE-" in s, 15, "exit after q")
    assert "DONE-0" in text and HEADING not in text, text
    assert a.poll() is None and b.poll() is None, "top must leave -p processes running"


@pytest.mark.parametrize("how,status", [("SIGTERM", 143), ("SIGINT", 0), ("C-c", 0),
                                        ("SIGABRT", 134), ("SIGSEGV", 139)])
def test_terminal_restored(how, status, term, workdir):
    """Stopped by a signal, or crashing, top leaves the alternate screen
    and exits the way it was told (a crash re-raised after endwin)."""
    t = term(top_cmd("-i", INTERVAL, "--", PYTHON, shift_script(workdir), 30,
                     os.path.join(workdir, "m")))
    t.wait(lambda s: top_rows(s), 15, "rows shown")
    pid = t.pysight_pid()
    assert pid
    if how == "C-c":
        t.keys("C-c")
    else:
        os.kill(pid, getattr(signal, how))
    text = t.wait(lambda s: "DONE-" in s, 15, "exit after %s" % how)
    assert "DONE-%d" % status in text and HEADING not in text, text
    assert not t.alternate_on(), "the alternate screen is still on after %s" % how


def test_resize_redraws(term, workdir):
    """A smaller window, then a larger one: the key line stays on the last
    row and the rows fit the width."""
    t = term(top_cmd("-i", INTERVAL, "--", PYTHON, shift_script(workdir), 30,
                     os.path.join(workdir, "m")))
    t.wait(lambda s: top_rows(s), 15, "rows shown")
    for cols, lines in ((90, 20), (150, 45)):
        t.tmux("resize-window", "-t", t.name, "-x", str(cols), "-y", str(lines))
        t.wait(lambda s: len(s.splitlines()) == lines and "q quit" in s.splitlines()[-1]
               and HEADING in s and max(len(l) for l in s.splitlines()) <= cols,
               3, "redrawn at %dx%d" % (cols, lines))
    # wide again: the rows are whole, not cut at the old width
    t.wait(lambda s: any(r["text"].endswith(".py:18)") or r["text"].endswith(".py:17)")
                         for r in top_rows(s)), 3 * INTERVAL, "whole rows at 150 columns")
    t.keys("q")
    t.wait(lambda s: "DONE-0" in s, 15, "exit after q")


def test_unknown_terminal_prints_tables(term, workdir):
    """A terminal curses cannot drive: one line says so, then plain tables
    on it, and top still stops its command and exits 0."""
    t = term("TERM=pysight-no-such-terminal " + top_cmd(
        "-i", INTERVAL, "-n", 2, "--", PYTHON, shift_script(workdir), 30,
        os.path.join(workdir, "m")))
    text = t.wait(lambda s: "DONE-" in s, 20, "exit after two tables")
    assert "DONE-0" in text, text
    assert "cannot draw on this terminal (TERM=pysight-no-such-terminal)" in text, text
    assert text.count("pysight top ") == 2 and HEADING in text, text


def tables(stdout):
    """Plain tables: (header line, rows)."""
    out = []
    for block in stdout.strip().split("\n\n"):
        lines = block.splitlines()
        assert lines and lines[0].startswith("pysight top "), "not a table:\n%s" % block
        out.append((lines[0], parse_rows(block)))
    return out


@pytest.mark.parametrize("stop", [["-n", "3"], ["-d", "3"]], ids=["iterations", "duration"])
def test_piped_plain_tables(stop, procs, workdir):
    run = run_pysight(procs, ["top", "-i", INTERVAL, "--nolineno"] + stop +
                      ["--", PYTHON, SHIFT, 30, os.path.join(workdir, "m")], timeout=60)
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout, "escape codes on a pipe"
    got = tables(run.stdout)
    assert len(got) == 3, run.stdout
    for head, rows in got:
        assert re.search(r"\d+ samples/s, errors [\d.]+%, 1 Python process, \d+ threads?, "
                         r"mode cpu", head), head
        assert rows and name(rows[0]) == "phase_one", run.stdout
        assert rows[0]["own"] > 80, run.stdout
        assert all(0 <= r["own"] <= r["total"] <= 100.0 for r in rows), run.stdout
        assert sum(r["own"] for r in rows) <= 100.5, run.stdout
    # time since the start only grows
    owns = [rows[0]["own_s"] for _, rows in got]
    assert owns == sorted(owns) and owns[-1] > owns[0], owns
    # samples over the rate: CPU seconds, no more than 3 s of one thread
    # (the jitter's pairs keep three seconds within about 2%)
    assert owns[-1] <= 3 * INTERVAL * 1.10, owns


BURNER = "import time\nt = time.time()\nwhile time.time() - t < 60:\n    pass\n"


def test_each_interval_counts_one_second_of_a_busy_thread(procs):
    """One thread busy all along is one CPU second in every interval, not
    just on average: the random re-arms that keep periodic work from
    aliasing must not make a second's count wander (it did by 13%, one
    sd, when each window drew its rate on its own).  Only the upper side
    is checked: a shared machine can take CPU from the thread, never give
    it more than all of one."""
    run = run_pysight(procs, ["top", "-i", INTERVAL, "-n", 9, "-r", 100, "--nolineno",
                              "--", PYTHON, "-c", BURNER], timeout=60)
    assert run.returncode == 0, run.stderr
    got = tables(run.stdout)
    assert len(got) == 9, run.stdout
    # the first interval also holds the interpreter's start
    rates = [float(re.search(r"(\d+) samples/s", head).group(1)) for head, _ in got[1:]]
    # What the pairs allow (sampler.c): a window is drawn for 16 periods
    # on average, 1.5 times that at most, and ends at the next 50 ms poll;
    # its rate is within 50% of the mean, 100 / (1 - 0.5 / 16) Hz when no
    # re-arm cuts a period.  So a count runs ahead of the mean by half of
    # such a window at most, 15 samples, until the pair's second window
    # pays it back, and an interval's two edges can each cut a pair: 133
    # a second.  What is left at an edge spreads a second's count by 5% sd
    # (DESIGN.md), so one interval of 8 above 116, 3 sd, comes in 1 to 3%
    # of runs (a model of sampler.c, 1500 runs each, idle and with late
    # polls), two in under 0.1%.  Windows drawn each on its own, 13% sd,
    # fail these checks in a fifth of runs.
    window_s = max(16 / 100, 0.1)
    mean = 100 / (1 - 0.5 / 16)
    most = mean + 2 * 0.5 * (1.5 * window_s + 0.05) * mean
    assert max(rates) <= most, rates
    assert len([r for r in rates if r > 100 * 1.16]) <= 1, rates
    assert sum(rates) / len(rates) >= 100 * 0.8, rates


SLEEPER = "import time\nwhile True:\n    time.sleep(0.05)\n"


def test_wall_mode_times(procs):
    """In wall mode times are nanoseconds shown as seconds: a thread that
    sleeps all along has about one second per interval, nearly all of it
    under [off-cpu: sleep]."""
    run = run_pysight(procs, ["top", "-i", INTERVAL, "-n", 3, "--mode", "wall", "--nolineno",
                              "--", PYTHON, "-c", SLEEPER], timeout=60)
    assert run.returncode == 0, run.stderr
    got = tables(run.stdout)
    assert len(got) == 3, run.stdout
    head, rows = got[-1]
    assert "mode wall" in head, head
    assert rows[0]["text"] == "[off-cpu: sleep]" and rows[0]["own"] > 90, run.stdout
    module = [r for r in rows if r["text"] == "<module> (<string>)"]
    assert module and module[0]["total"] > 99, run.stdout
    # three intervals of one thread's wall time (the first one starts
    # when the interpreter does, a little after top)
    assert 3 * INTERVAL * 0.7 <= module[0]["total_s"] <= 3 * INTERVAL * 1.1, run.stdout


ASYNC_SPINNER = """import asyncio, time
async def spin():
    t = time.time()
    while time.time() - t < 60:
        pass
async def main():
    await asyncio.create_task(spin(), name="spinner")
asyncio.run(main())
"""


def test_asyncio_tasks(procs):
    """--asyncio: a task that spins is a row of its own, [task spinner],
    under the task that awaits it, and the event loop's frames are gone
    from its stack."""
    run = run_pysight(procs, ["top", "-i", INTERVAL, "-n", 3, "--asyncio", "--nolineno",
                              "--", PYTHON, "-c", ASYNC_SPINNER], timeout=60)
    assert run.returncode == 0, run.stderr
    head, rows = tables(run.stdout)[-1]
    by = {r["text"]: r for r in rows}
    assert by.get("[task spinner]", {}).get("total", 0) > 90, run.stdout
    assert by.get("[task Task-1]", {}).get("total", 0) > 90, run.stdout
    assert by.get("spin (<string>)", {}).get("own", 0) > 90, run.stdout
    assert by.get("BaseEventLoop._run_once (asyncio/base_events.py)",
                  {}).get("total", 0) < 5, run.stdout


@pytest.mark.parametrize("args,word", [
    (["--interval", "0"], "--interval"),
    (["-i", "x"], "--interval"),
    (["-n", "0"], "--iterations"),
    (["--mode", "gpu"], "--mode"),
    (["-p", "1", "--", "true"], "not both"),
])
def test_bad_options(args, word, procs):
    run = run_pysight(procs, ["top"] + args, timeout=30)
    lines = [l for l in run.stderr.splitlines() if l.strip()]
    assert run.returncode == 2, run.stderr
    assert len(lines) == 1 and lines[0].startswith("pysight: ") and word in lines[0], run.stderr
    assert run.stdout == ""
