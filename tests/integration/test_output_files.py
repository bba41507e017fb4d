"""Output files as root: a whole profile or none, on a signal or a full disk;
never through a planted link or over another user's file; owned by the user
behind sudo."""
import os
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import PYSIGHT, REPO, WORKLOADS, Profile, Recorder

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
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
