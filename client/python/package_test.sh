#!/usr/bin/env bash
# Package test: the Python client installs like a normal package.
#
#   1. Builds the sdist (python -m build, isolated) from a copy of the
#      repository's layout (client/python next to proto/), so the real tree
#      gets no build litter.
#   2. Unpacks the sdist outside the repository, where no ../../proto exists,
#      and builds the sdist and the wheel again from that folder alone.
#   3. Installs that wheel into a fresh venv outside the repository.
#   4. Starts a redis-server and the broker (JOBWIRE_BROKER_BIN, default
#      <repo>/build/broker/jobwire-broker) on free loopback ports, and runs
#      the README's quickstart (its first ```python block) from outside the
#      repository with the fresh venv's python.
#   5. Asserts the quickstart's output, that `import jobwire` came from the
#      fresh venv, that py.typed is installed and that jobwire.__version__ is
#      the wheel's version.
#
# Needs python3 (>= 3.9, with venv), redis-server on PATH, the broker binary
# and PyPI (build, setuptools, grpcio-tools, grpcio, protobuf, grpcio-status,
# googleapis-common-protos; pip's cache makes reruns fast). Everything lives
# in one temporary folder, removed on exit with the processes it started.
# Exit 0: pass.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
BROKER_BIN="${JOBWIRE_BROKER_BIN:-$REPO/build/broker/jobwire-broker}"

fail() { echo "package_test: FAIL: $*" >&2; exit 1; }
step() { echo "package_test: $*"; }

[ -x "$BROKER_BIN" ] || fail "broker binary not found: $BROKER_BIN (set JOBWIRE_BROKER_BIN)"
REDIS_SERVER="$(command -v redis-server)" || fail "redis-server not found on PATH"

T="$(mktemp -d "${TMPDIR:-/tmp}/jobwire-package-test.XXXXXX")"
T="$(cd "$T" && pwd -P)"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that EXIT's cleanup runs on a signal too
case "$T/" in
  "$REPO"/*) fail "the temporary folder $T is inside the repository (set TMPDIR)" ;;
esac

# -- tools: a venv with the build frontend ----------------------------------
step "build frontend in $T/tools"
"$PYTHON" -m venv "$T/tools"
"$T/tools/bin/python" -m pip --disable-pip-version-check -q install "build>=1"

# -- 1. the sdist, built in the repository's layout -------------------------
mkdir -p "$T/repo/client"
tar -C "$REPO/client" -cf - --exclude=build --exclude=dist --exclude='*.egg-info' \
  --exclude=__pycache__ --exclude=.pytest_cache python | tar -C "$T/repo/client" -xf -
mkdir -p "$T/repo/proto"
cp -R "$REPO/proto/jobwire" "$T/repo/proto/"
step "sdist from the repository layout"
(cd "$T" && "$T/tools/bin/python" -m build --sdist --outdir "$T/dist-repo" \
  "$T/repo/client/python" >"$T/build-repo.log" 2>&1) \
  || { cat "$T/build-repo.log" >&2; fail "python -m build --sdist in the repository layout"; }
SDISTS=("$T"/dist-repo/jobwire-*.tar.gz)
[ "${#SDISTS[@]}" = 1 ] && [ -f "${SDISTS[0]}" ] || fail "expected one sdist, got: ${SDISTS[*]}"

# -- 2. sdist and wheel from the unpacked sdist alone ------------------------
mkdir -p "$T/unpacked"
tar -C "$T/unpacked" -xzf "${SDISTS[0]}"
SRC=("$T"/unpacked/jobwire-*)
SRC="${SRC[0]}"
for p in broker admin; do
  [ -f "$SRC/proto/jobwire/v1/$p.proto" ] || fail "the sdist carries no proto/jobwire/v1/$p.proto"
done
[ ! -e "$SRC/../../proto" ] || fail "$SRC/../../proto exists: the build would not prove the sdist self-contained"
step "sdist + wheel from the unpacked sdist ($SRC)"
(cd "$T" && "$T/tools/bin/python" -m build --outdir "$T/dist" "$SRC" >"$T/build-sdist.log" 2>&1) \
  || { cat "$T/build-sdist.log" >&2; fail "python -m build of the unpacked sdist"; }
WHEELS=("$T"/dist/jobwire-*-py3-none-any.whl)
[ "${#WHEELS[@]}" = 1 ] && [ -f "${WHEELS[0]}" ] || fail "expected one wheel, got: ${WHEELS[*]}"
WHEEL="${WHEELS[0]}"
WHEEL_VERSION="$(basename "$WHEEL" | cut -d- -f2)"
[ -f "$T/dist/jobwire-$WHEEL_VERSION.tar.gz" ] || fail "no sdist jobwire-$WHEEL_VERSION.tar.gz next to the wheel"
step "built $(basename "$WHEEL") and jobwire-$WHEEL_VERSION.tar.gz"

# -- 3. a fresh venv with the wheel ------------------------------------------
step "installing the wheel into a fresh venv ($T/venv)"
"$PYTHON" -m venv "$T/venv"
"$T/venv/bin/python" -m pip --disable-pip-version-check -q install "$WHEEL"

# -- 4. redis-server and the broker on free loopback ports --------------------
. "$REPO/scripts/start_on_free_port.sh"
mkdir -p "$T/redis"
start_redis() {
  "$REDIS_SERVER" --port "$1" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$T/redis" >"$T/redis.log" 2>&1 </dev/null &
}
start_on_free_port redis-server "$T/redis.log" start_redis
REDIS_PORT="$LISTEN_PORT"
PIDS+=("$LISTEN_PID")
start_broker() {
  "$BROKER_BIN" --listen "127.0.0.1:$1" --redis_url "redis://127.0.0.1:$REDIS_PORT" \
    --metrics_listen= --log_level warning >"$T/broker.log" 2>&1 </dev/null &
}
start_on_free_port jobwire-broker "$T/broker.log" start_broker
BROKER_PORT="$LISTEN_PORT"
PIDS+=("$LISTEN_PID")
step "redis-server on 127.0.0.1:$REDIS_PORT, broker on 127.0.0.1:$BROKER_PORT"

# -- 5. the README's quickstart and the installed package --------------------
mkdir -p "$T/app"
"$PYTHON" - "$HERE/README.md" "$T/app/quickstart.py" <<'EOF'
import re, sys
readme = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^## Quickstart\n.*?^```python\n(.*?)^```", readme, re.M | re.S)
if not m:
    sys.exit("package_test: FAIL: no ```python block under '## Quickstart' in " + sys.argv[1])
open(sys.argv[2], "w", encoding="utf-8").write(m.group(1))
EOF
cat >"$T/app/check_install.py" <<'EOF'
"""Where jobwire came from, its py.typed and its version, one per line."""
import importlib.metadata
import importlib.resources

import jobwire
from jobwire.v1 import admin_pb2_grpc, broker_pb2  # both services generated

print(jobwire.__file__)
print(broker_pb2.__file__)
print(importlib.resources.files("jobwire").joinpath("py.typed").is_file())
print(jobwire.__version__)
print(importlib.metadata.version("jobwire"))
EOF
cd "$T/app"  # neither the repository nor client/python on sys.path
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP
INFO_TEXT="$("$T/venv/bin/python" check_install.py)" || fail "check_install.py failed"
mapfile -t INFO <<<"$INFO_TEXT"
[ "${#INFO[@]}" = 5 ] || fail "check_install.py printed: ${INFO[*]}"
case "${INFO[0]}" in
  "$T/venv/"*) ;;
  *) fail "import jobwire resolved to ${INFO[0]}, not the fresh venv $T/venv" ;;
esac
case "${INFO[1]}" in
  "$T/venv/"*) ;;
  *) fail "jobwire.v1.broker_pb2 resolved to ${INFO[1]}, not the fresh venv" ;;
esac
[ "${INFO[2]}" = True ] || fail "jobwire/py.typed is not installed"
[ "${INFO[3]}" = "$WHEEL_VERSION" ] || fail "jobwire.__version__ ${INFO[3]} != the wheel's $WHEEL_VERSION"
[ "${INFO[4]}" = "$WHEEL_VERSION" ] || fail "installed metadata version ${INFO[4]} != $WHEEL_VERSION"
step "import jobwire -> ${INFO[0]}; py.typed installed; __version__ $WHEEL_VERSION"

step "running the README quickstart against the broker"
OUT="$(JOBWIRE_ADDR="127.0.0.1:$BROKER_PORT" timeout 60 "$T/venv/bin/python" quickstart.py 2>"$T/quickstart.err")" \
  || { cat "$T/quickstart.err" >&2; echo "$OUT" >&2; fail "quickstart.py exited with an error"; }
echo "$OUT" | sed 's/^/  | /'
echo "$OUT" | grep -Eq "^[0-9]+ COMPLETED \{'sent_to': 'ada@example.com'\}$" \
  || fail "quickstart: the good job did not complete with its result"
echo "$OUT" | grep -Eq "^[0-9]+ DEAD 'NonRetryableError: bad address'$" \
  || fail "quickstart: the bad job did not end DEAD with the handler's error"
[ "$(echo "$OUT" | wc -l)" = 2 ] || fail "quickstart: expected two lines of output"
step "PASS"
