"""The OpenTelemetry Collector the OTLP export tests send to (otelcol.py):
it accepts a hand-built profiles request, writes it, reads back resolved,
refuses a malformed body, and restarts on the same port.  The requests are
built with opentelemetry-proto's own classes, not pysight's encoder."""
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

from otelcol import REPO, decode_status, free_port

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as ps

T0 = 1_700_000_000_123_456_789


def request(pid=42, value=7, inline_keys=True):
    """A small ExportProfilesServiceRequest: one resource, one CPU profile,
    two samples; sample 1 has an inlined frame."""
    req = ps.ExportProfilesServiceRequest()
    d = req.dictionary
    strings = ["", "samples", "count", "cpu", "nanoseconds", "main", "app.py", "work",
               "thread.name", "MainThread", "inl", "lib.py", "service.name", "demo"]
    d.string_table.extend(strings)
    s = strings.index
    d.mapping_table.add()
    d.link_table.add()
    d.function_table.add()
    d.function_table.add(name_strindex=s("main"), filename_strindex=s("app.py"), start_line=1)
    d.function_table.add(name_strindex=s("work"), filename_strindex=s("app.py"), start_line=10)
    d.function_table.add(name_strindex=s("inl"), filename_strindex=s("lib.py"), start_line=5)
    d.location_table.add()
    d.location_table.add().lines.add(function_index=1, line=3)            # 1: main
    d.location_table.add().lines.add(function_index=2, line=12)           # 2: work
    inlined = d.location_table.add(address=0x1234)                        # 3: inl in work
    inlined.lines.add(function_index=3, line=6)
    inlined.lines.add(function_index=2, line=14)
    d.stack_table.add()
    d.stack_table.add(location_indices=[2, 1])                            # 1: work <- main
    d.stack_table.add(location_indices=[3, 1])                            # 2: inl/work <- main
    d.attribute_table.add()
    a = d.attribute_table.add(key_strindex=s("thread.name"))
    a.value.string_value = "MainThread"

    rp = req.resource_profiles.add()
    if inline_keys:
        rp.resource.attributes.add(key="service.name").value.string_value = "demo"
    else:  # the dictionary form the collector itself writes
        kv = rp.resource.attributes.add(key_strindex=s("service.name"))
        kv.value.string_value_strindex = s("demo")
    rp.resource.attributes.add(key="process.pid").value.int_value = pid
    sp = rp.scope_profiles.add()
    sp.scope.name, sp.scope.version = "pysight", "0.1.0"
    p = sp.profiles.add()
    p.sample_type.type_strindex, p.sample_type.unit_strindex = s("samples"), s("count")
    p.period_type.type_strindex, p.period_type.unit_strindex = s("cpu"), s("nanoseconds")
    p.period = 10_000_000
    p.time_unix_nano = T0
    p.duration_nano = 2_000_000_000
    p.profile_id = bytes(range(1, 17))
    p.samples.add(stack_index=1, values=[value], attribute_indices=[1],
                  timestamps_unix_nano=[T0 + 5])
    p.samples.add(stack_index=2, values=[3])
    return req


def send(col, req):
    status, ctype, body = col.post(req.SerializeToString())
    assert status == 200, "status %d: %r" % (status, body)
    assert ctype == "application/x-protobuf"
    resp = ps.ExportProfilesServiceResponse()
    resp.ParseFromString(body)
    assert resp.partial_success.rejected_profiles == 0, resp
    assert resp.partial_success.error_message == "", resp


@pytest.mark.parametrize("inline_keys", [True, False], ids=["inline-keys", "strindex-keys"])
def test_profiles_round_trip(otel_collector, inline_keys):
    col = otel_collector.start(free_port())
    send(col, request(inline_keys=inline_keys))
    [req] = col.wait_requests(1)
    [res] = req
    assert res.attributes == {"service.name": "demo", "process.pid": 42}
    [p] = res.profiles
    assert p.scope["name"] == "pysight" and p.scope["version"] == "0.1.0"
    assert p.sample_type == ("samples", "count")
    assert p.period_type == ("cpu", "nanoseconds")
    assert p.period == 10_000_000
    assert (p.time_unix_nano, p.duration_nano) == (T0, 2_000_000_000)
    assert p.end_unix_nano == T0 + 2_000_000_000
    assert p.profile_id == "0102030405060708090a0b0c0d0e0f10"
    s1, s2 = p.samples
    assert s1.frames == [("work", "app.py", 12), ("main", "app.py", 3)]
    assert s1.values == [7]
    assert s1.attributes == {"thread.name": "MainThread"}
    assert s1.timestamps_unix_nano == [T0 + 5]
    assert s1.link is None
    # an inlined location: its innermost function first, then its caller
    assert s2.frames == [("inl", "lib.py", 6), ("work", "app.py", 14), ("main", "app.py", 3)]
    assert s2.addresses == [0x1234, 0]
    assert (s2.values, s2.attributes) == ([3], {})
    assert [pp.samples[0].values for _, pp in col.profiles()] == [[7]]
    # the raw JSON keeps the dictionary
    raw = col.raw_requests()[0]
    assert set(raw) == {"resourceProfiles", "dictionary"}
    assert {"stringTable", "functionTable", "locationTable", "stackTable",
            "attributeTable"} <= set(raw["dictionary"])


def test_malformed_body_is_refused(otel_collector):
    col = otel_collector.start(free_port())
    status, ctype, body = col.post(b"\xff\xff\xff\xff not a protobuf")
    assert status == 400 and ctype == "application/x-protobuf"
    code, message = decode_status(body)
    assert code == 3 and message.startswith("proto:"), (code, message)  # INVALID_ARGUMENT
    # a request that decodes but whose attribute names a string it lacks
    bad = ps.ExportProfilesServiceRequest()
    bad.dictionary.string_table.append("")
    bad.resource_profiles.add().resource.attributes.add(key_strindex=7)
    status, _, body = col.post(bad.SerializeToString())
    assert status == 400
    assert decode_status(body) == (3, "resource profiles 0 resource attributes: "
                                      "attribute 0 has invalid key_strindex 7")
    status, _, body = col.post(b"x", content_type="text/plain")
    assert status == 415, body
    send(col, request(value=1))  # still serving
    assert len(col.wait_requests(1)) == 1


def test_restart_on_the_same_port(otel_collector):
    port = free_port()
    col = otel_collector.start(port)
    send(col, request(pid=1))
    col.wait_requests(1)
    assert col.stop() == 0
    assert not col.running
    with pytest.raises(OSError):
        col.post(request().SerializeToString(), timeout=2)
    col.restart()
    assert col.port == port
    send(col, request(pid=2))
    reqs = col.wait_requests(2)
    assert [req[0].attributes["process.pid"] for req in reqs] == [1, 2]


def test_grpc(otel_collector):
    grpc = pytest.importorskip("grpc")
    from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2_grpc
    col = otel_collector.start(free_port(), grpc_port=free_port())
    with grpc.insecure_channel("127.0.0.1:%d" % col.grpc_port) as channel:
        stub = profiles_service_pb2_grpc.ProfilesServiceStub(channel)
        stub.Export(request(pid=3), timeout=10)
    [[res]] = col.wait_requests(1)
    assert res.attributes["process.pid"] == 3


def test_build_and_tests_pin_one_schema():
    """The C side is generated from the opentelemetry-proto the Makefile
    pins (OTLP_PIP); these tests decode with the one in requirements.txt:
    one version, so both speak one schema."""
    version = importlib.metadata.version("opentelemetry-proto")
    with open(os.path.join(REPO, "Makefile")) as f:
        pins = re.findall(r"opentelemetry-proto==([\d.]+)", f.read())
    assert pins == [version], (pins, version)
