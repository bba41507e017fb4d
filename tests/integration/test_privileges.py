"""After setup a recording keeps only the capabilities it still uses, sets
no_new_privs, and goes on finding and naming new processes; a command it
launched keeps its own.  The agent does the same in every thread it
runs."""
import array
import fcntl
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import termios
import threading
import time

from conftest import PYSIGHT, WORKLOADS, Profile, Recorder, run_pysight
from otelcol import free_port
from test_agent import OK, Agent, ask, fake_endpoint, metrics  # noqa: F401 (a fixture)

# what privs.c keeps
KEPT = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
        "CAP_KILL": 5, "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_PERFMON": 38,
        "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40}
F_SETPIPE_SZ = 1031
DROPPED = {"CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13,
           "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_BOOT": 22, "CAP_SYS_TIME": 25,
           "CAP_MKNOD": 27}


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def wait_for(cond, what, timeout=15):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def check_dropped(st, what, kept=KEPT):
    eff, bnd = int(st["CapEff"], 16), int(st["CapBnd"], 16)
    for name, bit in kept.items():
        assert eff >> bit & 1, "%s: %s was dropped: CapEff %s" % (what, name, st["CapEff"])
    for name, bit in DROPPED.items():
        assert not eff >> bit & 1 and not bnd >> bit & 1, \
            "%s: %s kept: CapEff %s CapBnd %s" % (what, name, st["CapEff"], st["CapBnd"])
    assert st["NoNewPrivs"] == "1", "%s: NoNewPrivs %s" % (what, st["NoNewPrivs"])


def test_drops_what_it_does_not_need(procs, workdir):
    out = os.path.join(workdir, "p.folded")
    rec = Recorder(procs, ["-d", 5, "-r", 200, "-o", out, "--mode", "wall"])
    rec.wait_sampling()
    check_dropped(status(rec.proc.pid), "record")
    # a Python process that starts now is still found, read and named
    late = procs.start(["/usr/bin/python3.11", os.path.join(WORKLOADS, "ratio.py"), "2"])
    assert rec.wait(30) == 0, rec.stderr
    late.wait(30)
    prof = Profile.load(out)
    assert prof.containing("alpha_work", "ratio.py").total > 0, prof.top()


def test_launched_command_keeps_its_capabilities(procs, workdir):
    out = os.path.join(workdir, "c.folded")
    flag = os.path.join(workdir, "caps")
    script = ("import time\n"
              "open(%r, 'w').write(open('/proc/self/status').read())\n"
              "time.sleep(1)\n" % flag)
    rec = Recorder(procs, ["-r", 100, "-o", out, "--", "/usr/bin/python3.11", "-c", script])
    wait_for(lambda: os.path.exists(flag) and os.path.getsize(flag) > 0, "the command never ran")
    assert rec.wait(30) == 0, rec.stderr
    with open(flag) as f:
        st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
    mine = int(status(os.getpid())["CapEff"], 16)
    assert int(st["CapEff"].strip(), 16) == mine and st["NoNewPrivs"].strip() == "0", st


def thread_status(pid):
    """{tid: (comm, status)} of every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            comm = f.read().strip()
        out[int(tid)] = (comm, status(int(tid)))
    return out


def test_agent_threads_drop_too(procs, workdir, fake_endpoint):
    """Capabilities and no_new_privs are each thread's own: the metrics
    server's thread and the exporter's hold no more than the main one.
    The metrics, made when scraped, count what has happened by then."""
    sink = fake_endpoint(lambda n: OK)
    work = procs.start(["/usr/bin/python3.11", "-c", "while True: pass"])
    mport = free_port()
    agent = Agent(procs, workdir, ["--otlp", sink.endpoint, "--export-interval", 1,
                                   "-r", 97, "-p", work.pid,
                                   "--metrics-addr", "127.0.0.1:%d" % mport]).wait_sampling()
    wait_for(lambda: sink.posts, "an export")
    first = metrics(mport)
    threads = thread_status(agent.proc.pid)
    assert len(threads) >= 3, threads    # main, metrics, exporter
    for tid, (comm, st) in threads.items():
        check_dropped(st, "thread %d (%s)" % (tid, comm))
    # fresh at each scrape, not as of the last second: two looks 0.3 s
    # apart at a busy process sampled at 97 Hz differ
    counts = [first["pysight_samples_total"]]
    for _ in range(3):
        time.sleep(0.3)
        counts.append(metrics(mport)["pysight_samples_total"])
    assert all(a < b for a, b in zip(counts, counts[1:])), counts
    assert metrics(mport)["pysight_exports_sent_total"] >= 1
    assert agent.stop() == 0, agent.stderr


DEEP = ("import sys, time\n"
        "def down(n):\n"
        "    if n:\n"
        "        return down(n - 1)\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "down(150)\n")


def queued(fd):
    """Bytes waiting in the pipe fd reads."""
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]


def test_dump_reads_with_ptrace_alone(procs):
    """dump drops what it does not need once BPF is loaded, and again once
    the Pythons are found: it reads their stacks holding CAP_SYS_PTRACE
    (process_vm_readv) and CAP_BPF (the task iterator, before Linux 6.5)
    only.  Caught while it writes: stdout is a pipe of one page that is
    not read until its status has been looked at."""
    target = procs.start(["/usr/bin/python3.11", "-c", DEEP], stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().strip() == "ready"
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    dump = procs.start([PYSIGHT, "dump", "--json", "-p", str(target.pid)], stdout=w,
                       stderr=subprocess.PIPE)
    os.close(w)
    try:
        # blocked writing a document far bigger than the pipe
        wait_for(lambda: queued(r) >= 4096 or dump.poll() is not None, "dump to write")
        assert dump.poll() is None, dump.stderr.read()
        st = status(dump.pid)
        check_dropped(st, "dump", kept={"CAP_SYS_PTRACE": 19, "CAP_BPF": 39})
        eff = int(st["CapEff"], 16)
        assert eff == 1 << 19 | 1 << 39, "dump kept more: CapEff %s" % st["CapEff"]
        out = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            out += chunk
    finally:
        os.close(r)
        if dump.poll() is None:
            dump.wait(10)       # SIGPIPE, had the test failed before reading
    assert dump.wait(30) == 0, dump.stderr.read()
    assert out.count(b'"down"') >= 150, out[:2000]


def test_top_drops_too(procs):
    """top drops as record does once it samples."""
    top = procs.start([PYSIGHT, "top", "-d", "5", "-r", "50"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.PIPE, text=True)
    line = top.stderr.readline()
    assert "pysight: sampling" in line, line + top.stderr.read()
    check_dropped(status(top.pid), "top")
    top.send_signal(2)
    assert top.wait(30) == 0, top.stderr.read()


def test_agent_prunes_only_its_own_files(procs, workdir):
    """With --output-dir where others write (/tmp), another user's old
    pysight-* file is not the agent's to delete; an old one of ours is."""
    out = os.path.join(workdir, "out")
    os.makedirs(out)
    os.chmod(out, 0o1777)
    theirs, mine = (os.path.join(out, "pysight-20000101T00000%dZ.folded" % i) for i in (0, 1))
    for path in (theirs, mine):
        with open(path, "w") as f:
            f.write("main 1\n")
        os.utime(path, (946684800, 946684800))
    os.chown(theirs, 65534, 65534)
    agent = Agent(procs, workdir, ["--output-dir", out, "--rotate", "1s", "--retain", "1h",
                                   "-f", "folded", "-r", 19]).wait_sampling()
    wait_for(lambda: not os.path.exists(mine), "our old file to be pruned")
    assert os.path.exists(theirs), os.listdir(out)
    assert agent.stop() == 0, agent.stderr


def test_agent_sighup_stops_it_cleanly(procs, workdir):
    """SIGHUP stops the agent as SIGTERM does: the last file whole, no
    temporary file, the control socket removed."""
    out = os.path.join(workdir, "out")
    agent = Agent(procs, workdir, ["--output-dir", out, "--rotate", "1h", "-f", "folded",
                                   "-r", 97]).wait_sampling()
    time.sleep(1)
    assert os.path.exists(agent.socket)
    assert agent.stop(signal.SIGHUP) == 0, agent.stderr
    left = os.listdir(out)
    assert len(left) == 1 and left[0].startswith("pysight-") and \
        left[0].endswith(".folded"), left
    assert not os.path.exists(agent.socket)


def test_control_socket_is_0660_and_another_users_is_left(procs, workdir):
    """The socket is made 0660 as it is bound; a stale socket of another
    user is refused in one line and left where it is."""
    agent = Agent(procs, workdir, ["--output-dir", os.path.join(workdir, "o"),
                                   "-r", 19]).wait_sampling()
    assert stat.S_IMODE(os.lstat(agent.socket).st_mode) == 0o660
    assert agent.stop() == 0, agent.stderr
    theirs = os.path.join(workdir, "theirs.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(theirs)      # closed unlistened: stale
    os.chown(theirs, 65534, 65534)
    run = run_pysight(procs, ["agent", "--output-dir", os.path.join(workdir, "o"),
                              "--socket", theirs], timeout=20)
    assert run.returncode == 1, run.stderr
    assert run.stderr.splitlines() == [
        "pysight: %s is a socket of uid 65534, not ours: not removed" % theirs], run.stderr
    assert stat.S_ISSOCK(os.lstat(theirs).st_mode)


def test_control_clients_dribbling_do_not_hold_the_agent(procs, workdir):
    """Clients sending a byte every 0.3 s, more of them than the agent has
    slots and each back as soon as it is dropped, hold neither the agent's
    loop nor a snapshot asked meanwhile: it is answered within 2 s (one at a
    time, 0.5 s each, they held it for 8 s)."""
    agent = Agent(procs, workdir, ["--output-dir", os.path.join(workdir, "o"),
                                   "-f", "folded", "-r", 19]).wait_sampling()
    stop = threading.Event()

    def dribble():
        while not stop.is_set():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                try:
                    s.connect(agent.socket)
                    while not stop.wait(0.3):
                        s.sendall(b"s")
                except OSError:
                    pass
    threads = [threading.Thread(target=dribble, daemon=True) for _ in range(20)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    t0 = time.monotonic()
    try:
        answer = ask(agent.socket, "snapshot format=folded\n", timeout=6)
    finally:
        stop.set()
        for t in threads:
            t.join(5)
    # answered: a window, or (host-wide with no Python yet) that it is empty
    assert answer.startswith(b"ok ") or answer == b"error the window holds no samples yet\n", \
        answer[:200]
    assert time.monotonic() - t0 < 2, time.monotonic() - t0
    assert agent.stop() == 0, agent.stderr


def test_socket_group_lets_its_members_trigger(procs, workdir):
    """--socket-group: the socket is made in that group (mode 0660, root's),
    so an unprivileged member can trigger a snapshot and a non-member
    cannot connect."""
    d = tempfile.mkdtemp(prefix="pysight-tests-run-")   # workdir is 0700
    os.chmod(d, 0o755)
    try:
        check_socket_group(procs, workdir, os.path.join(d, "pysight.sock"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def check_socket_group(procs, workdir, sock):
    agent = Agent(procs, workdir, ["--output-dir", os.path.join(workdir, "o"), "-r", 19,
                                   "--socket", sock, "--socket-group", "nogroup"])
    agent.socket = sock
    agent.wait_sampling()
    st = os.lstat(sock)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 65534, 0o660), st
    client = ("import socket, sys\n"
              "s = socket.socket(socket.AF_UNIX)\n"
              "try:\n"
              "    s.connect(sys.argv[1])\n"
              "except PermissionError:\n"
              "    print('refused'); sys.exit()\n"
              "s.sendall(b'trigger reason=slow\\n')\n"
              "print(s.makefile('rb').readline().decode().strip())\n")

    def as_nobody(groups):
        def drop():
            os.setgroups(groups)
            os.setgid(65534)
            os.setuid(65534)
        return subprocess.run(["/usr/bin/python3.11", "-c", client, sock], preexec_fn=drop,
                              capture_output=True, text=True, timeout=20)
    member = as_nobody([65534])
    assert member.returncode == 0 and member.stdout.startswith("ok "), (member.stdout,
                                                                         member.stderr)
    assert os.listdir(agent.snapshot_dir), "the trigger wrote no snapshot"

    def outsider():
        os.setgroups([])
        os.setgid(1)            # daemon: not the socket's group
        os.setuid(65534)
    run = subprocess.run(["/usr/bin/python3.11", "-c", client, sock], preexec_fn=outsider,
                         capture_output=True, text=True, timeout=20)
    assert run.stdout.strip() == "refused", (run.stdout, run.stderr)
    assert agent.stop() == 0, agent.stderr
    bad = run_pysight(procs, ["agent", "--output-dir", os.path.join(workdir, "o"),
                              "--socket-group", "no-such-group"], timeout=20)
    assert bad.returncode == 2 and bad.stderr.splitlines() == [
        "pysight: invalid value 'no-such-group' for --socket-group: no such group"], bad.stderr
    # a setgid directory would give the socket its own group: refused
    sgid = os.path.join(workdir, "sgid")
    os.mkdir(sgid)
    os.chown(sgid, 0, 1)
    os.chmod(sgid, 0o2755)
    there = os.path.join(sgid, "s.sock")
    bad = run_pysight(procs, ["agent", "--output-dir", os.path.join(workdir, "o"),
                              "--socket", there, "--socket-group", "nogroup"], timeout=20)
    assert bad.returncode == 1 and bad.stderr.splitlines() == [
        "pysight: %s was not made in group 65534 (a setgid directory?): not used" % there], \
        bad.stderr
    assert not os.path.exists(there)


def test_a_burst_of_triggers_is_one_snapshot(procs, workdir):
    """An application whose every request is slow triggers on each: the
    same second's triggers for one process share a file, and no more
    than four files are written in a second, however many ask."""
    agent = Agent(procs, workdir, ["--output-dir", os.path.join(workdir, "o"),
                                   "-r", 19]).wait_sampling()
    same = [ask(agent.socket, "trigger pid=1 reason=slow\n") for _ in range(3)]
    assert all(a.startswith(b"ok ") for a in same) and len(set(same)) == 1, same
    many = [None] * 10

    def one(i):
        many[i] = ask(agent.socket, "trigger pid=%d reason=slow\n" % (i + 2))
    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    oks = [a for a in many if a.startswith(b"ok ")]
    refused = [a for a in many if a == b"error too many triggers this second: the next one is kept\n"]
    # pid 1's file and three more in that second
    assert len(oks) == 3 and len(refused) == 7 and len(set(oks)) == 3, many
    assert len(os.listdir(agent.snapshot_dir)) == 4, os.listdir(agent.snapshot_dir)
    time.sleep(1.1)
    again = ask(agent.socket, "trigger pid=1 reason=slow\n")
    assert again.startswith(b"ok ") and again != same[0], (again, same[0])
    assert agent.stop() == 0, agent.stderr
