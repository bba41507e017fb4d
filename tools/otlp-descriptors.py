#!/usr/bin/env python3
"""Write the FileDescriptorSet of OTLP's profiles service, and of
google.rpc.Status (how OTLP/HTTP servers answer errors), from the
descriptors the pinned PyPI packages opentelemetry-proto and
googleapis-common-protos carry, for `protoc-c --descriptor_set_in`.
The schema is theirs, never retyped here.

usage: otlp-descriptors.py OUT.desc
"""
import sys

from google.protobuf import descriptor_pb2
from google.rpc import status_pb2
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2


def main():
    out = descriptor_pb2.FileDescriptorSet()
    seen = set()

    def add(fd):
        # dependencies first, as protoc wants them
        if fd.name in seen:
            return
        for dep in fd.dependencies:
            add(dep)
        seen.add(fd.name)
        proto = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(proto)
        out.file.append(proto)

    add(profiles_service_pb2.DESCRIPTOR)
    add(status_pb2.DESCRIPTOR)
    with open(sys.argv[1], "wb") as f:
        f.write(out.SerializeToString())


if __name__ == "__main__":
    main()
