"""Ask a running `pysight agent` to keep the last minute of stacks when a
request was slow: the flight recorder's "profile when p99 is bad".

The agent listens on /run/pysight.sock (root's, mode 0660: run the app in a
group that may write to it, or point PYSIGHT_SOCKET elsewhere).  A trigger
costs one connect and one short line; the agent writes the snapshot to its
--snapshot-dir and, when it exports, sends it to the collector with a
`trigger` attribute.  Triggers are rate-limited here so that a bad
minute makes one snapshot, not a thousand.

WSGI:    app = SlowRequestTrigger(app, threshold_s=0.5)
ASGI:    app = SlowRequestTriggerASGI(app, threshold_s=0.5)
By hand: trigger("checkout took 2.3 s")
"""
import os
import socket
import threading
import time

SOCKET = os.environ.get("PYSIGHT_SOCKET", "/run/pysight.sock")
_lock = threading.Lock()
_last = 0.0


def trigger(reason, pid=None, min_interval_s=60.0, timeout_s=0.5):
    """Ask for a snapshot of this process's window.  Returns the snapshot's
    path, or None when rate-limited, when no agent runs, or on any error:
    profiling must never break the application."""
    global _last
    with _lock:
        now = time.monotonic()
        if _last and now - _last < min_interval_s:
            return None
        _last = now
    words = "".join(c if c.isalnum() or c in "._-" else "_" for c in reason)[:100]
    line = "trigger pid=%d reason=%s\n" % (pid or os.getpid(), words or "slow")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(SOCKET)
            s.sendall(line.encode())
            answer = b""
            # the agent answers one line and closes
            while len(answer) < 65536:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return None
    head, _, body = answer.partition(b"\n")
    return body.decode(errors="replace") if head.startswith(b"ok ") else None


def _fire(reason):
    # off the request's thread: the agent takes a moment to write the file
    threading.Thread(target=trigger, args=(reason,), daemon=True).start()


class SlowRequestTrigger:
    """WSGI middleware: a request slower than threshold_s triggers a snapshot."""

    def __init__(self, app, threshold_s=1.0):
        self.app = app
        self.threshold_s = threshold_s

    def __call__(self, environ, start_response):
        t0 = time.monotonic()
        try:
            return self.app(environ, start_response)
        finally:
            took = time.monotonic() - t0
            if took > self.threshold_s:
                _fire("%s_%s_%.2fs" % (environ.get("REQUEST_METHOD", ""),
                                       environ.get("PATH_INFO", ""), took))


class SlowRequestTriggerASGI:
    """ASGI middleware: the same for asyncio servers."""

    def __init__(self, app, threshold_s=1.0):
        self.app = app
        self.threshold_s = threshold_s

    async def __call__(self, scope, receive, send):
        t0 = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            took = time.monotonic() - t0
            if scope.get("type") == "http" and took > self.threshold_s:
                _fire("%s_%s_%.2fs" % (scope.get("method", ""), scope.get("path", ""), took))
