#!/usr/bin/env bash
# Idempotent setup of the Python client's environment: the repo venv
# (<repo>/.venv), the test/build tools, and the jobwire package (stubs are
# generated from proto/ while it is built) with its dependencies (grpcio,
# protobuf, grpcio-status, googleapis-common-protos: setup.py's pins) and its
# extras "otel" (opentelemetry-api) and "test" (pytest, opentelemetry-sdk:
# the tracing tests and tests/interop/python/worker.py): pyproject.toml's pins.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${JOBWIRE_VENV:-$REPO/.venv}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install "pytest>=7" "grpcio-tools>=1.66,<2" "setuptools>=64" wheel prometheus-client
# The build tools are in the venv now: build without isolation (faster, and
# works offline once the tools are there).
"${PIP[@]}" install --no-build-isolation "$HERE[otel,test]"
rm -rf "$HERE/build" "$HERE"/*.egg-info
echo "setup: jobwire $(cd / && "$VENV/bin/python" -c 'import jobwire; print(jobwire.__version__)') installed in $VENV"
