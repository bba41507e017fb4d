"""`pysight agent` to a collector behind TLS: with the collector's CA
(--otlp-ca) and a bearer header the profiles arrive; without the CA
nothing is sent to a server it cannot trust, and it says why."""
import os
import signal
import subprocess
import time

from conftest import PYSIGHT, find_interp, start_ready
from otelcol import free_port


def self_signed(workdir):
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    return cert, key


def agent(procs, workdir, url, pid, *extra):
    log = open(os.path.join(workdir, "agent-%d.log" % time.monotonic_ns()), "w+")
    argv = [PYSIGHT, "agent", "-v", "--otlp", url, "-p", pid, "-r", 97,
            "--export-interval", 1, "--spool", os.path.join(workdir, "spool-%s" % len(extra)),
            "--socket", os.path.join(workdir, "sock-%s" % len(extra)),
            "--snapshot-dir", os.path.join(workdir, "snaps")] + list(extra)
    return procs.start([str(a) for a in argv], stderr=log), log


def stop(proc, log):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    log.seek(0)
    return log.read()


def test_tls_with_the_collectors_ca(procs, staging, workdir, otel_collector):
    interp = find_interp("3.11", "debian")
    cert, key = self_signed(workdir)
    col = otel_collector.start(free_port(), tls=(cert, key))
    burn = start_ready(procs, interp.argv(staging.script(interp, "named_burn.py"),
                                          "fn_over_tls", 30))
    ag, log = agent(procs, workdir, col.endpoint, burn.pid, "--otlp-ca", cert,
                    "--otlp-header", "Authorization=Bearer s3cret")
    reqs = col.wait_requests(2, timeout=30)
    err = stop(ag, log)
    frames = [s.frames[0][0] for req in reqs for res in req for p in res.profiles
              for s in p.samples]
    assert "fn_over_tls" in frames, (frames[:20], err[-2000:])
    assert col.endpoint.startswith("https://")


def test_tls_without_the_ca_sends_nothing(procs, staging, workdir, otel_collector):
    interp = find_interp("3.11", "debian")
    cert, key = self_signed(workdir)
    col = otel_collector.start(free_port(), tls=(cert, key))
    burn = start_ready(procs, interp.argv(staging.script(interp, "named_burn.py"),
                                          "fn_untrusted", 30))
    ag, log = agent(procs, workdir, col.endpoint, burn.pid)
    time.sleep(4)
    err = stop(ag, log)
    assert col.raw_requests() == [], "a server whose certificate we cannot check got profiles"
    assert "certificate" in err.lower() or "ssl" in err.lower(), err[-2000:]
    # what could not be sent waits in the spool for the next run
    spool = os.path.join(workdir, "spool-0")
    assert [n for n in os.listdir(spool) if n.endswith(".otlp")], os.listdir(spool)
