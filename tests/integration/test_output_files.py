"""Output files as root: a whole profile or none, on a signal or a full disk;
never through a planted link or over another user's file; owned by the user
behind sudo."""
import os
import signal
import stat
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import PYSIGHT, REPO, WORKLOADS, Profile, Recorder, run_pysight

GOLDEN = os.path.join(REPO, "tests", "fixtures", "golden.folded")
NOBODY = 65534


def convert(out, env=None):
    return subprocess.run([PYSIGHT, "convert", GOLDEN, "-o", str(out)], capture_output=True,
                          text=True, timeout=30, env=dict(os.environ, **(env or {})))


def leftovers(d, name):
    return [f for f in os.listdir(d) if f.startswith(name + ".")]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["INT", "TERM", "HUP"])
def test_signal_leaves_a_whole_profile(sig, procs, workdir):
    """Folded would still parse if cut at a line's end; a gzipped pprof
    would not. The same recording in both must hold the same samples."""
    out = os.path.join(workdir, "sig.folded")
    pb = os.path.join(workdir, "sig.pb.gz")
    rec = Recorder(procs, ["-r", 200, "-o", out, "-o", pb, "--", "/usr/bin/python3.11",
                           os.path.join(WORKLOADS, "ratio.py"), "30"])
    rec.wait_sampling()
    time.sleep(1.5)
    rec.proc.send_signal(sig)
    assert rec.wait() == 0, rec.stderr
    prof = Profile.load(out)          # every line parses
    assert prof.total > 100, prof.top()
    back = os.path.join(workdir, "back.folded")
    run = subprocess.run([PYSIGHT, "convert", pb, "-o", back], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert Profile.load(back).total == prof.total, (Profile.load(back).total, prof.total)
    assert not leftovers(workdir, "sig.folded") and not leftovers(workdir, "sig.pb.gz")


def big_folded(path, lines=200000):
    with open(path, "w") as f:
        for i in range(lines):
            f.write(f"main (/srv/app/main.py:1);mod{i % 97} (/srv/app/m{i % 97}.py:{i % 13});"
                    f"handler_{i} (/srv/app/handlers.py:{i}) {i % 50 + 1}\n")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["INT", "TERM", "HUP"])
@pytest.mark.parametrize("cmd", ["convert", "diff"])
def test_signal_while_writing_leaves_a_whole_file(cmd, sig, workdir):
    """convert and diff have no handler of their own: a signal while the
    file is being written (its temporary file is there) still leaves the
    whole file, and then acts."""
    big = os.path.join(workdir, "big.folded")
    big_folded(big)
    out = os.path.join(workdir, "out.folded")
    args = [PYSIGHT, cmd, big] + ([big] if cmd == "diff" else []) + ["-o", out]
    # with the signal's default action: under nohup (SIGHUP ignored, and
    # so in every child) pysight rightly keeps ignoring it
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not leftovers(workdir, "out.folded") and proc.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.0005)
    seen = leftovers(workdir, "out.folded")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert seen, "the temporary file was never seen: %s" % err
    assert proc.returncode == -sig, (proc.returncode, err)
    assert not leftovers(workdir, "out.folded")
    if cmd == "convert":
        assert Profile.load(out).total == Profile.load(big).total
    else:
        with open(out) as f:
            lines = f.read().splitlines()     # "stack before after", each
        assert len(lines) == 200000 and all(
            l.rsplit(" ", 2)[1] == l.rsplit(" ", 2)[2] for l in lines), lines[-1:]


@pytest.fixture
def small_fs(workdir):
    mnt = os.path.join(workdir, "full")
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], check=True)
    try:
        # fill it: what is left is less than a profile
        fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"x" * 512):
                pass
        except OSError:
            pass
        os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", mnt], check=False)


def test_full_disk(small_fs):
    out = os.path.join(small_fs, "prof.folded")
    run = convert(out)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert "No space left on device" in run.stderr and out in run.stderr, run.stderr
    assert not os.path.exists(out) and not leftovers(small_fs, "prof.folded")


@pytest.mark.parametrize("ext", ["folded", "pb.gz", "json", "svg"])
def test_full_disk_mid_profile(small_fs, workdir, ext):
    """A profile bigger than stdio's buffer fails in the middle of the
    writer, not at the last flush: the error is still the disk's."""
    big = os.path.join(workdir, "big.folded")
    with open(big, "w") as f:
        for i in range(400):
            f.write(f"main (/srv/app/main.py:1);handler_{i} (/srv/app/handlers.py:{i}) {i + 1}\n")
    out = os.path.join(small_fs, "big." + ext)
    run = subprocess.run([PYSIGHT, "convert", big, "-o", out], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert "No space left on device" in run.stderr and out in run.stderr, run.stderr
    assert not os.path.exists(out) and not leftovers(small_fs, "big." + ext)


def test_full_disk_record(small_fs, procs):
    """record's own profile, after a real recording: the same one line, no
    file, and the command's exit is not hidden by a success."""
    out = os.path.join(small_fs, "rec.folded")
    rec = Recorder(procs, ["-r", 200, "-o", out, "--", "/usr/bin/python3.11",
                           os.path.join(WORKLOADS, "ratio.py"), "1"])
    assert rec.wait() == 1, rec.stderr
    errors = [l for l in rec.stderr.splitlines() if "No space left on device" in l]
    assert len(errors) == 1 and out in errors[0], rec.stderr
    assert not os.path.exists(out) and not leftovers(small_fs, "rec.folded")


@pytest.fixture
def sticky_dir():
    d = tempfile.mkdtemp(prefix="pysight-tests-sticky-")
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


def test_planted_symlink_is_not_followed(sticky_dir):
    victim = os.path.join(sticky_dir, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chown(victim, NOBODY, NOBODY)
    out = os.path.join(sticky_dir, "prof.folded")
    os.symlink(victim, out)
    os.lchown(out, NOBODY, NOBODY)
    run = convert(out)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert out in run.stderr
    with open(victim) as f:
        assert f.read() == "precious\n"
    assert os.path.islink(out) and not leftovers(sticky_dir, "prof.folded")


def test_other_users_file_is_not_clobbered(sticky_dir):
    out = os.path.join(sticky_dir, "prof.folded")
    with open(out, "w") as f:
        f.write("theirs\n")
    os.chown(out, NOBODY, NOBODY)
    run = convert(out)
    assert run.returncode == 1, run.stderr
    with open(out) as f:
        assert f.read() == "theirs\n"
    # our own file there is replaced, as usual
    os.chown(out, 0, 0)
    assert convert(out).returncode == 0
    assert Profile.load(out).total == Profile.load(GOLDEN).total


def test_sudo_user_owns_the_output(workdir):
    out = os.path.join(workdir, "mine.pb.gz")
    run = convert(out, env={"SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY)})
    assert run.returncode == 0, run.stderr
    st = os.stat(out)
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
    assert st.st_mode & 0o777 == 0o644
    # without sudo, root's
    out2 = os.path.join(workdir, "root.folded")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    run = subprocess.run([PYSIGHT, "convert", GOLDEN, "-o", out2], capture_output=True,
                         text=True, timeout=30, env=env)
    assert run.returncode == 0 and os.stat(out2).st_uid == 0


# -o into what is not a regular file: written into, never replaced.

def null_node(d):
    """A private /dev/null (c 1 3): never the host's own."""
    node = os.path.join(d, "null")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


def assert_still_null(node):
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3), oct(st.st_mode)
    assert not leftovers(os.path.dirname(node), "null")


@pytest.mark.parametrize("fmt", [None, "pprof", "svg", "speedscope"])
def test_a_device_is_written_into_not_replaced(workdir, fmt):
    node = null_node(workdir)
    for args in (["convert", GOLDEN], ["diff", GOLDEN, GOLDEN]):
        if fmt and args[0] == "diff" and fmt != "svg":
            continue
        argv = [PYSIGHT] + args + ["-o", node] + (["-f", fmt] if fmt else [])
        run = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, (argv, run.stderr)
        assert_still_null(node)


def test_record_to_a_device(procs, workdir):
    node = null_node(workdir)
    run = run_pysight(procs, ["record", "-r", 99, "-o", node, "--", "/usr/bin/python3.11",
                              os.path.join(WORKLOADS, "ratio.py"), "1"])
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stderr and node in run.stderr, run.stderr
    assert_still_null(node)


class FifoReader:
    """A FIFO in d and a thread that reads all it is sent."""

    def __init__(self, d, name):
        self.path = os.path.join(d, name)
        os.mkfifo(self.path)
        self.data = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as f:
            self.data = f.read()

    def result(self):
        self.thread.join(30)
        assert not self.thread.is_alive(), "the FIFO's reader never saw its writer close"
        assert stat.S_ISFIFO(os.lstat(self.path).st_mode), "the FIFO was replaced"
        return self.data


def test_a_fifo_reader_gets_the_profile(procs, workdir):
    # a gzipped pprof from convert, read back whole
    fifo = FifoReader(workdir, "fifo.pb.gz")
    run = subprocess.run([PYSIGHT, "convert", GOLDEN, "-o", fifo.path], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    data = fifo.result()
    assert data[:2] == b"\x1f\x8b", data[:16]
    back = os.path.join(workdir, "back.pb.gz")
    with open(back, "wb") as f:
        f.write(data)
    folded = os.path.join(workdir, "back.folded")
    run = subprocess.run([PYSIGHT, "convert", back, "-o", folded], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert Profile.load(folded).total == Profile.load(GOLDEN).total
    # and a recording, folded
    fifo = FifoReader(workdir, "rec")
    run = run_pysight(procs, ["record", "-r", 199, "-o", fifo.path, "--", "/usr/bin/python3.11",
                              os.path.join(WORKLOADS, "ratio.py"), "1"])
    assert run.returncode == 0, run.stderr
    prof = Profile.parse(fifo.result().decode())
    assert prof.total > 20 and any("ratio.py" in (fr.file or "") for st, _ in prof.stacks for fr in st), \
        prof.stacks[:3]


def test_dash_is_stdout(procs, workdir):
    for fmt, check in ((None, lambda out: Profile.parse(out.decode()).total ==
                        Profile.load(GOLDEN).total),
                       ("svg", lambda out: out.lstrip().startswith(b"<?xml") and
                        out.rstrip().endswith(b"</svg>"))):
        for args in (["convert", GOLDEN], ["diff", GOLDEN, GOLDEN]):
            if args[0] == "diff" and fmt is None:
                continue
            argv = [PYSIGHT] + args + ["-o", "-"] + (["-f", fmt] if fmt else [])
            run = subprocess.run(argv, capture_output=True, timeout=30, cwd=workdir)
            assert run.returncode == 0, (argv, run.stderr)
            assert check(run.stdout), (argv, run.stdout[:200])
            assert not os.path.exists(os.path.join(workdir, "-"))
    # (the workload's own stdout is elsewhere: it prints its figures)
    run = subprocess.run([PYSIGHT, "record", "-r", "199", "-o", "-", "--", "/bin/sh", "-c",
                          "exec /usr/bin/python3.11 %s 1 >/dev/null" %
                          os.path.join(WORKLOADS, "ratio.py")], capture_output=True,
                         timeout=60, cwd=workdir)
    assert run.returncode == 0, run.stderr
    prof = Profile.parse(run.stdout.decode())
    assert prof.total > 20, run.stdout[:200]
    assert b"to stdout (folded)" in run.stderr, run.stderr
    assert not os.path.exists(os.path.join(workdir, "-"))


def test_a_directory_is_refused_at_once(workdir):
    for args in (["convert", GOLDEN], ["diff", GOLDEN, GOLDEN],
                 ["record", "-d", "1"], ["snapshot"]):
        argv = [PYSIGHT] + args + ["-o", workdir]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, (argv, run.stderr)
        assert "Is a directory" in run.stderr and workdir in run.stderr, run.stderr
    assert os.listdir(workdir) == []
