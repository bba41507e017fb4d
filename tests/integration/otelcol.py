"""A real OpenTelemetry Collector for the OTLP export tests.

tools/otelcol (built by `make otelcol` into the cache) runs with the OTLP
receiver on 127.0.0.1 and the file exporter, which writes each request it
got as one line of OTLP JSON.  OtelCol starts and stops it and reads those
lines back as plain Python values:

    col = OtelCol(workdir)
    col.start(free_port())            # HTTP on that port; grpc_port=... adds gRPC
    ... send to col.endpoint + "/v1development/profiles" ...
    reqs = col.wait_requests(1)       # [[Resource, ...], ...], one list per request
    reqs[0][0].attributes             # {"service.name": "demo", "process.pid": 42}
    reqs[0][0].profiles[0].samples[0] # Sample(frames=[("work", "app.py", 12), ...],
                                      #        values=[7], attributes={...}, ...)
    col.stop(); col.start(same_port)  # a restart keeps what was received before

The collector's JSON: camelCase keys, 64-bit integers as strings, ids as
hex; every table (strings, functions, locations, stacks, attributes,
mappings, links) sits in "dictionary", which index 0 of each leaves empty.
The collector moves resource and scope attribute keys and string values
into the string table as it writes (keyStrindex, stringValueStrindex).
"""
import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("PYSIGHT_CACHE", "/var/cache/pysight")
VERSION = "v0.165.0"
PROFILES_PATH = "/v1development/profiles"
PROFILES_GATE = "service.profilesSupport"


def otelcol_binary():
    """Where `make otelcol` put the collector: $PYSIGHT_OTELCOL, or the cache
    name the Makefile gives it (the version and a hash of tools/otelcol)."""
    if os.environ.get("PYSIGHT_OTELCOL"):
        return os.environ["PYSIGHT_OTELCOL"]
    src = os.path.join(REPO, "tools", "otelcol")
    files = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith(".go"))
    files += [os.path.join(src, "go.mod"), os.path.join(src, "go.sum")]
    h = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            h.update(f.read())
    return os.path.join(CACHE, "otelcol-pysight-%s-%s" % (VERSION, h.hexdigest()[:8]))


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------
# What the collector received, resolved


Frame = Tuple[str, str, int]  # (function name, file name, line); "" and 0 when unknown


@dataclass
class Sample:
    frames: List[Frame]                   # leaf first; an inlined location gives several
    values: List[int]
    attributes: Dict[str, Any]
    timestamps_unix_nano: List[int] = field(default_factory=list)
    link: Optional[Tuple[str, str]] = None  # (trace id, span id) in hex
    addresses: List[int] = field(default_factory=list)  # per location, leaf first
    # per location, leaf first: its mapping as (file name, memory start,
    # attributes), None for the empty mapping 0
    mappings: List[Optional[Tuple[str, int, Dict[str, Any]]]] = field(default_factory=list)


@dataclass
class Profile:
    sample_type: Tuple[str, str]          # (type, unit), e.g. ("samples", "count")
    period_type: Tuple[str, str]
    period: int
    time_unix_nano: int
    duration_nano: int
    profile_id: str                       # hex, "" when unset
    attributes: Dict[str, Any]
    samples: List[Sample]
    scope: Dict[str, Any]                 # {"name", "version", "attributes"}
    original_payload_format: str = ""

    @property
    def end_unix_nano(self):
        return self.time_unix_nano + self.duration_nano


@dataclass
class Resource:
    attributes: Dict[str, Any]
    profiles: List[Profile]               # of all its scopes, in order
    schema_url: str = ""


def _int(v):
    return int(v) if v not in (None, "") else 0


class _Dictionary:
    def __init__(self, d):
        self.strings = d.get("stringTable", [])
        self.functions = d.get("functionTable", [])
        self.locations = d.get("locationTable", [])
        self.stacks = d.get("stackTable", [])
        self.attrs = d.get("attributeTable", [])
        self.links = d.get("linkTable", [])
        self.mappings = d.get("mappingTable", [])

    @staticmethod
    def _at(table, i, what):
        if not 0 <= i < len(table):
            raise ValueError("%s index %d out of range (table of %d)" % (what, i, len(table)))
        return table[i]

    def string(self, i):
        return self._at(self.strings, _int(i), "string")

    def value(self, v):
        """A Python value for an OTLP AnyValue (JSON form)."""
        if "stringValue" in v:
            return v["stringValue"]
        if "stringValueStrindex" in v:
            return self.string(v["stringValueStrindex"])
        if "intValue" in v:
            return int(v["intValue"])
        if "boolValue" in v:
            return bool(v["boolValue"])
        if "doubleValue" in v:
            return float(v["doubleValue"])
        if "bytesValue" in v:
            return base64.b64decode(v["bytesValue"])
        if "arrayValue" in v:
            return [self.value(x) for x in v["arrayValue"].get("values", [])]
        if "kvlistValue" in v:
            return self.key_values(v["kvlistValue"].get("values", []))
        return None

    def key_values(self, kvs):
        """{key: value} of KeyValues whose key is inline or in the string table."""
        out = {}
        for kv in kvs:
            key = kv["key"] if kv.get("key") else self.string(kv.get("keyStrindex", 0))
            out[key] = self.value(kv.get("value", {}))
        return out

    def attributes(self, indices):
        out = {}
        for i in indices or []:
            a = self._at(self.attrs, _int(i), "attribute")
            out[self.string(a.get("keyStrindex", 0))] = self.value(a.get("value", {}))
        return out

    def value_type(self, vt):
        vt = vt or {}
        return (self.string(vt.get("typeStrindex", 0)), self.string(vt.get("unitStrindex", 0)))

    def mapping(self, i):
        if not _int(i):
            return None
        m = self._at(self.mappings, _int(i), "mapping")
        return (self.string(m.get("filenameStrindex", 0)), _int(m.get("memoryStart")),
                self.attributes(m.get("attributeIndices")))

    def frames(self, stack_index):
        """The stack's frames, and per location its address and mapping."""
        frames, addresses, mappings = [], [], []
        stack = self._at(self.stacks, _int(stack_index), "stack")
        for li in stack.get("locationIndices", []):
            loc = self._at(self.locations, _int(li), "location")
            addresses.append(_int(loc.get("address")))
            mappings.append(self.mapping(loc.get("mappingIndex")))
            lines = loc.get("lines", [])
            if not lines:
                mapping = self._at(self.mappings, _int(loc.get("mappingIndex")), "mapping")
                frames.append(("", self.string(mapping.get("filenameStrindex", 0)), 0))
            for line in lines:  # the innermost inlined function first
                fn = self._at(self.functions, _int(line.get("functionIndex")), "function")
                frames.append((self.string(fn.get("nameStrindex", 0)),
                               self.string(fn.get("filenameStrindex", 0)),
                               _int(line.get("line"))))
        return frames, (addresses, mappings)

    def link(self, i):
        if not _int(i):
            return None
        ln = self._at(self.links, _int(i), "link")
        return (ln.get("traceId", ""), ln.get("spanId", ""))


def parse_request(data):
    """One line of the file exporter (ProfilesData JSON) as [Resource, ...]."""
    d = _Dictionary(data.get("dictionary", {}))
    resources = []
    for rp in data.get("resourceProfiles", []):
        profiles = []
        for sp in rp.get("scopeProfiles", []):
            sc = sp.get("scope", {})
            scope = {"name": sc.get("name", ""), "version": sc.get("version", ""),
                     "attributes": d.key_values(sc.get("attributes", []))}
            for p in sp.get("profiles", []):
                samples = []
                for s in p.get("samples", []):
                    frames, (addresses, mappings) = d.frames(s.get("stackIndex", 0))
                    samples.append(Sample(
                        frames=frames,
                        values=[int(v) for v in s.get("values", [])],
                        attributes=d.attributes(s.get("attributeIndices")),
                        timestamps_unix_nano=[int(t) for t in s.get("timestampsUnixNano", [])],
                        link=d.link(s.get("linkIndex", 0)),
                        addresses=addresses, mappings=mappings))
                profiles.append(Profile(
                    sample_type=d.value_type(p.get("sampleType")),
                    period_type=d.value_type(p.get("periodType")),
                    period=_int(p.get("period")),
                    time_unix_nano=_int(p.get("timeUnixNano")),
                    duration_nano=_int(p.get("durationNano")),
                    profile_id=p.get("profileId", ""),
                    attributes=d.attributes(p.get("attributeIndices")),
                    samples=samples,
                    scope=scope,
                    original_payload_format=p.get("originalPayloadFormat", "")))
        resources.append(Resource(
            attributes=d.key_values(rp.get("resource", {}).get("attributes", [])),
            profiles=profiles, schema_url=rp.get("schemaUrl", "")))
    return resources


# --------------------------------------------------------------------------
# The collector process


CONFIG = """\
receivers:
  otlp:
    protocols:
{protocols}
exporters:
  file:
    path: {out}
    flush_interval: 50ms
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: info
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file, debug]
"""


class OtelCol:
    """The collector, started and stopped by the test.

    procs: something with start(argv, **popen_kw) -> Popen, e.g. conftest's
    Procs, which kills leftovers at teardown; by default a plain Popen in a
    new session.  Each start() writes to a new file in workdir; requests()
    reads them all in order, so a restart keeps what came before."""

    READY = "Everything is ready"

    def __init__(self, workdir, procs=None, binary=None):
        self.workdir = workdir
        self.procs = procs
        self.binary = binary or otelcol_binary()
        self.proc = None
        self.port = None
        self.grpc_port = None
        self.tls = None
        self.starts = 0
        self.outputs = []
        self.log_path = None

    @property
    def endpoint(self):
        """The OTLP/HTTP base URL, e.g. http://127.0.0.1:4318."""
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    @property
    def profiles_url(self):
        return self.endpoint + PROFILES_PATH

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, port, grpc_port=None, timeout=30, tls=None):
        """Start on 127.0.0.1:port (OTLP/HTTP; grpc_port adds OTLP/gRPC) and
        return once the receiver accepts requests.  tls=(cert, key): the
        HTTP receiver takes only https."""
        assert not self.running, "the collector is already running"
        assert os.access(self.binary, os.X_OK), \
            "collector %s is missing: build it with `make otelcol`" % self.binary
        self.starts += 1
        self.port, self.grpc_port, self.tls = port, grpc_port, tls
        out = os.path.join(self.workdir, "otelcol-%d.json" % self.starts)
        self.outputs.append(out)
        protocols = "      http:\n        endpoint: 127.0.0.1:%d\n" % port
        if tls:
            protocols += ("        tls:\n          cert_file: %s\n          key_file: %s\n"
                          % (json.dumps(tls[0]), json.dumps(tls[1])))
        if grpc_port:
            protocols += "      grpc:\n        endpoint: 127.0.0.1:%d\n" % grpc_port
        config = os.path.join(self.workdir, "otelcol-%d.yaml" % self.starts)
        with open(config, "w") as f:
            f.write(CONFIG.format(protocols=protocols.rstrip("\n"), out=json.dumps(out)))
        self.log_path = os.path.join(self.workdir, "otelcol-%d.log" % self.starts)
        argv = [self.binary, "--config=" + config, "--feature-gates=" + PROFILES_GATE]
        with open(self.log_path, "w") as log:
            kw = dict(stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            if self.procs is not None:
                self.proc = self.procs.start(argv, **kw)
            else:
                self.proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the collector exited (status %s) before it was ready:\n%s"
                                   % (self.proc.returncode, self.log()))
            if self.READY in self.log() and self._accepts():
                return
            time.sleep(0.05)
        raise RuntimeError("the collector was not ready within %ss:\n%s" % (timeout, self.log()))

    def _accepts(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def log(self):
        """The collector's own log (stderr) of the latest start."""
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def stop(self, timeout=10):
        """SIGTERM, wait up to timeout, then SIGKILL.  Returns the exit status
        (0 after a clean shutdown, which flushes the file exporter)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def restart(self, timeout=30):
        """Stop, then start again on the same port(s)."""
        self.stop()
        return self.start(self.port, self.grpc_port, timeout=timeout, tls=self.tls)

    # ---- what it received

    def raw_requests(self):
        """Each request the file exporter wrote, as its JSON (a dict), in order.
        A line the exporter has not finished writing is left for later."""
        out = []
        for path in self.outputs:
            try:
                with open(path) as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            for line in data.split("\n")[:-1]:  # the last piece is "" or unfinished
                if line.strip():
                    out.append(json.loads(line))
        return out

    def requests(self):
        """[[Resource, ...], ...]: one list per received request."""
        return [parse_request(r) for r in self.raw_requests()]

    def profiles(self):
        """Every received profile, flattened: [(Resource, Profile), ...]."""
        return [(res, p) for req in self.requests() for res in req for p in res.profiles]

    def wait_requests(self, n, timeout=10):
        """The requests once at least n have been written (the exporter
        flushes every 50 ms); fails with the log after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            reqs = self.raw_requests()
            if len(reqs) >= n:
                return [parse_request(r) for r in reqs]
            if time.monotonic() > deadline:
                raise AssertionError("the collector wrote %d requests, not %d, within %ss; log:\n%s"
                                     % (len(reqs), n, timeout, self.log()))
            time.sleep(0.05)

    # ---- sending by hand

    def post(self, body, content_type="application/x-protobuf", path=PROFILES_PATH, timeout=10):
        """POST body to the receiver: (HTTP status, content type, response body)."""
        req = urllib.request.Request(self.endpoint + path, data=body,
                                     headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.headers.get("Content-Type"), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read()


def decode_status(body):
    """(code, message) of a google.rpc.Status, the protobuf body the receiver
    answers a refused request with (code 3, INVALID_ARGUMENT, for a body it
    cannot decode)."""
    fields, i = {}, 0

    def varint(i):
        v = shift = 0
        while True:
            c = body[i]
            i += 1
            v |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                return v, i

    while i < len(body):
        key, i = varint(i)
        if key & 7 == 0:
            val, i = varint(i)
        elif key & 7 == 2:
            n, i = varint(i)
            val, i = body[i:i + n], i + n
        else:
            raise ValueError("unexpected wire type %d in a Status" % (key & 7))
        fields.setdefault(key >> 3, val)
    return fields.get(1, 0), fields.get(2, b"").decode("utf-8", "replace")
