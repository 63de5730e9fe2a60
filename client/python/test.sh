#!/usr/bin/env bash
# Run the Python client's tests against a real redis-server and the real
# broker (JOBWIRE_BROKER_BIN, default <repo>/build/broker/jobwire-broker).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${JOBWIRE_VENV:-$REPO/.venv}"
# (import jobwire: the package and its dependencies, e.g. grpcio-status; the
# OpenTelemetry SDK: the extras setup.sh installs.)
if [ ! -x "$VENV/bin/python" ] || ! (cd / && "$VENV/bin/python" -c 'import jobwire, jobwire.v1.broker_pb2, jobwire.v1.admin_pb2, pytest, opentelemetry.sdk.trace' 2>/dev/null); then
  "$HERE/setup.sh"
fi
# The tests import the installed package: reinstall it (build.sh) when its
# sources, its build script (setup.py: the dependencies) or the contract
# changed since it was installed.
sources_hash() {
  (cd "$REPO" && find proto/jobwire client/python/jobwire client/python/pyproject.toml \
     client/python/setup.py \
     -type f \( -name '*.proto' -o -name '*.py' -o -name '*.toml' -o -name '*.typed' \) \
     ! -path '*/v1/*_pb2*' ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum) | sha256sum
}
STAMP="$VENV/.jobwire-python-client.sha256"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$(sources_hash)" ]; then
  "$HERE/build.sh"
  sources_hash > "$STAMP"
fi
cd "$HERE"
# bin/pytest (not "python -m pytest", which would put this folder first on
# sys.path): the tests import the installed package, with its generated stubs.
exec "$VENV/bin/pytest" -q -p no:cacheprovider tests "$@"
