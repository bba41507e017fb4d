"""Host-wide recording catches short-lived processes."""
import json
import os
import subprocess
import time

import pytest

from conftest import Profile, Recorder, find_interp, pct, python_frames

RATE = 100
PROCESSES = 40


@pytest.mark.parametrize("kind", ["debian", pytest.param("pyenv", marks=pytest.mark.informative)])
def test_short_lived_processes(kind, procs, staging, workdir):
    interp = find_interp("3.11", kind)
    if interp is None:
        pytest.skip("no %s Python 3.11 here" % kind)
    out = os.path.join(workdir, "short.folded")
    rec = Recorder(procs, ["-o", out, "-r", RATE])
    rec.wait_sampling()
    script = staging.script(interp, "short.py")
    busy = []
    for _ in range(PROCESSES):
        run = subprocess.run(interp.argv(script, 150), capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0, "short.py failed: %s" % run.stderr
        busy.append(json.loads(run.stdout)["busy"])
    time.sleep(0.2)
    rc = rec.stop()
    assert rc == 0, "pysight exited %d after SIGINT:\n%s" % (rc, rec.stderr)

    prof = Profile.load(out)
    got = prof.containing("short_lived_work", "short.py")
    expected = sum(busy) * RATE
    print("%s: %d of about %.0f expected samples (%.0f%%) in short_lived_work"
          % (interp.id, got.total, expected, pct(got.total, expected)))
    assert got.total >= 0.8 * expected, (
        "%s: %d samples in short_lived_work from %d processes of ~150 ms, expected about "
        "%.0f (%.2f CPU s at %d Hz): %.0f%%, need 80%%"
        % (interp.id, got.total, PROCESSES, expected, sum(busy), RATE,
           pct(got.total, expected)))
    exact = got.select(lambda f: [fr.name for fr in python_frames(f)]
                       == ["<module>", "short_lived_work"])
    assert pct(exact.total, got.total) >= 95.0, (
        "%s: only %d of %d short_lived_work samples read <module>;short_lived_work:\n%s"
        % (interp.id, exact.total, got.total, got.top()))
