"""Build hook: generate the gRPC stubs from the .proto at build time.

The proto contract lives outside this package in the repository
(``<repo>/proto``). Every build generates the stubs with grpcio-tools (a
build requirement) into the build directory; nothing generated is committed.
An sdist carries its own copy of the .proto (``proto/jobwire/v1/``, written
into the sdist only, never into this folder), so the wheel builds from the
unpacked sdist alone. The runtime pins (grpcio, protobuf) are read from the
generated code itself, so they always match the grpcio-tools that produced
it; grpcio-status (decoding the error details) follows grpcio's pin, and
googleapis-common-protos (the google.rpc messages) has a fixed range.
"""
import os
import re
import shutil
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# The contract: the Broker service (producers and workers) and the Admin
# service (operators' calls: inspect, retry, delete), which imports it.
PROTO_FILES = ("jobwire/v1/broker.proto", "jobwire/v1/admin.proto")
GENERATED = tuple("%s%s" % (name, suffix) for name in ("broker", "admin")
                  for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))
# google.rpc.Status / ErrorInfo / BadRequest / RetryInfo at run time.
ERROR_DETAILS_PROTOS = "googleapis-common-protos>=1.74,<2"


def proto_root():
    """The folder holding jobwire/v1/*.proto: $JOBWIRE_PROTO_DIR, else the
    copy an sdist carries (./proto), else the repository's (../../proto)."""
    candidates = [
        os.environ.get("JOBWIRE_PROTO_DIR"),
        os.path.join(HERE, "proto"),  # in an unpacked sdist
        os.path.join(HERE, "..", "..", "proto"),  # in the repository
    ]
    for c in candidates:
        if c and all(os.path.isfile(os.path.join(c, f)) for f in PROTO_FILES):
            return os.path.abspath(c)
    raise SystemExit(
        "jobwire: cannot find %s (looked in ./proto and ../../proto relative to %s; "
        "build from the repository or an sdist, or set JOBWIRE_PROTO_DIR to the "
        "folder holding jobwire/)" % (" and ".join(PROTO_FILES), HERE)
    )


def generate(out_dir):
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError as e:  # pragma: no cover
        raise SystemExit("jobwire: grpcio-tools is required to build (%s)" % e)
    root = proto_root()
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = [
        "grpc_tools.protoc",
        "-I" + root,
        "-I" + wkt,
        "--python_out=" + out_dir,
        "--pyi_out=" + out_dir,
        "--grpc_python_out=" + out_dir,
    ] + [os.path.join(root, f) for f in PROTO_FILES]
    if protoc.main(args) != 0:
        raise SystemExit("jobwire: protoc failed on " + ", ".join(PROTO_FILES))
    return os.path.join(out_dir, "jobwire", "v1")


def runtime_requirements():
    """grpcio / protobuf pins matching the code grpcio-tools generates, and
    the error-details packages (grpcio-status at grpcio's range)."""
    tmp = tempfile.mkdtemp(prefix="jobwire-gen-")
    try:
        gen = generate(tmp)
        with open(os.path.join(gen, "broker_pb2.py"), encoding="utf-8") as f:
            pb2 = f.read()
        with open(os.path.join(gen, "broker_pb2_grpc.py"), encoding="utf-8") as f:
            grpc_py = f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    reqs = []
    m = re.search(r"^# Protobuf Python Version: (\d+)\.(\d+)\.(\d+)", pb2, re.M)
    if m:
        major = int(m.group(1))
        reqs.append("protobuf>=%s.%s.%s,<%d" % (m.group(1), m.group(2), m.group(3), major + 1))
    else:
        reqs.append("protobuf>=4.21")
    m = re.search(r"^GRPC_GENERATED_VERSION = '([0-9.]+)'", grpc_py, re.M)
    grpc_min = m.group(1) if m else "1.50"
    reqs.append("grpcio>=%s,<2" % grpc_min)
    # The error details (JobwireError.reason ...): grpcio-status is released
    # with grpcio (grpcio-status X needs grpcio >= X), so it gets grpcio's
    # minor version and up: a patch release of grpcio (and of grpcio-tools,
    # whose version the generated code names) can reach the index before
    # grpcio-status's, and any grpcio-status of the same minor works with
    # it; googleapis-common-protos (google.rpc.status_pb2 /
    # error_details_pb2) from 1.74, its first release that accepts protobuf 7.
    reqs.append("grpcio-status>=%s,<2" % ".".join(grpc_min.split(".")[:2]))
    reqs.append(ERROR_DETAILS_PROTOS)
    return reqs


class BuildPyWithStubs(build_py):
    """build_py that also writes jobwire/v1/broker_pb2*.py into build_lib."""

    def run(self):
        super().run()
        if not self.dry_run:
            tmp = tempfile.mkdtemp(prefix="jobwire-gen-")
            try:
                gen = generate(tmp)
                dest = os.path.join(self.build_lib, "jobwire", "v1")
                os.makedirs(dest, exist_ok=True)
                for name in GENERATED:
                    shutil.copyfile(os.path.join(gen, name), os.path.join(dest, name))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)


class SdistWithProto(sdist):
    """sdist that also puts the .proto files the stubs come from into the
    archive (as proto/jobwire/v1/*.proto), so that it builds without the
    repository."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        for name in PROTO_FILES:
            dest = os.path.join(base_dir, "proto", name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.lexists(dest):
                os.remove(dest)  # may be a hard link to a source file: never write through it
            shutil.copyfile(os.path.join(proto_root(), name), dest)


setup(
    install_requires=runtime_requirements(),
    cmdclass={"build_py": BuildPyWithStubs, "sdist": SdistWithProto},
)
