#!/usr/bin/env bash
# Regenerate the stubs from proto/ and reinstall the package into the venv
# (run after changing proto/jobwire/v1/broker.proto or the client sources).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${JOBWIRE_VENV:-$REPO/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  exec "$HERE/setup.sh"
fi
rm -rf "$HERE/build" "$HERE"/*.egg-info
"$VENV/bin/python" -m pip --disable-pip-version-check -q install \
  --no-build-isolation --force-reinstall --no-deps "$HERE"
# Dependencies (pins derived from the generated code, and the error-details
# packages grpcio-status / googleapis-common-protos) are checked separately
# so that --force-reinstall does not reinstall grpcio every time.
"$VENV/bin/python" -m pip --disable-pip-version-check -q install --no-build-isolation "$HERE"
rm -rf "$HERE/build" "$HERE"/*.egg-info
cd / && "$VENV/bin/python" -c 'from jobwire.v1 import admin_pb2_grpc, broker_pb2, broker_pb2_grpc; print("build: stubs OK,", broker_pb2.DESCRIPTOR.name)'
