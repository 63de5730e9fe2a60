#!/usr/bin/env bash
# Proves the Go client installs like a normal package: in a throwaway module
# outside the repository, with an empty module cache (every dependency is
# downloaded through the default GOPROXY), `go get` the client and build the
# README's quickstart program (examples/quickstart/main.go), then run it
# against a real redis-server (from PATH) and the real broker
# ($JOBWIRE_BROKER_BIN, else <repo>/build/broker/jobwire-broker) and check
# that its handler received the job it enqueued and the Ack was confirmed.
# Needs network access to the module proxy; no protoc (the stubs in
# jobwirepb/ are committed).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MODULE=github.com/jobwire/jobwire/client/go
BROKER_BIN="${JOBWIRE_BROKER_BIN:-$ROOT/build/broker/jobwire-broker}"
say() { echo "client/go/package_test.sh: $*"; }
fail() { echo "client/go/package_test.sh: FAIL: $*" >&2; exit 1; }

[ -x "$BROKER_BIN" ] || fail "broker binary $BROKER_BIN not found (build it, or set JOBWIRE_BROKER_BIN)"
command -v redis-server >/dev/null || fail "redis-server not on PATH"

# 1. The README's quickstart is the program tested here, word for word: the
#    ```go block after the line <!-- quickstart: examples/quickstart/main.go -->.
readme_block="$(awk '/^<!-- quickstart: examples\/quickstart\/main.go -->$/ {found=1; next}
  found && /^```go$/ {inside=1; next}
  inside && /^```$/ {exit}
  inside {print}' "$HERE/README.md")"
if ! diff -u <(printf '%s\n' "$readme_block") "$HERE/examples/quickstart/main.go" \
    --label "README.md quickstart" --label examples/quickstart/main.go >&2; then
  fail "the README.md quickstart differs from examples/quickstart/main.go (diff above)"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/jobwire-go-package-test.XXXXXX")"
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$status" -ne 0 ]; then
    for log in "$tmp"/*.log; do
      [ -f "$log" ] && { echo "--- tail of $log" >&2; tail -n 20 "$log" >&2; }
    done
  fi
  chmod -R u+w "$tmp" 2>/dev/null || true # the module cache is read-only
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that EXIT's cleanup runs on a signal too

# 2. A consumer module with a fresh module cache. GOPROXY keeps its default:
#    real modules come from the Go module proxy.
export GOMODCACHE="$tmp/modcache" GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local
mkdir "$tmp/consumer"
cd "$tmp/consumer"
go mod init example.com/consumer 2>&1 | sed "s/^/  /"
# The module path is not published yet, so it resolves to this checkout:
# the replace serves any version of it from $HERE, and `go get` names
# v0.0.0 because without a version it would ask the proxy for the module's
# version list first (and fail: not published). Once it is published, drop
# the replace and the @v0.0.0 and `go get` fetches it like any module.
go mod edit -replace="$MODULE=$HERE"
cp "$HERE/examples/quickstart/main.go" .
start=$SECONDS
go get "$MODULE@v0.0.0" 2>&1 | sed 's/^/  /'
go mod tidy 2>&1 | sed 's/^/  /'
say "go get and go mod tidy with an empty module cache: $((SECONDS - start)) s," \
  "$(go list -m all | wc -l) modules in the build list; consumer's $(grep '^go ' go.mod)"
go vet ./...
go build -o "$tmp/quickstart" .

# 3. A real redis-server and broker on free loopback ports.
. "$ROOT/scripts/start_on_free_port.sh"
start_redis() {
  redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$tmp" >"$tmp/redis.log" 2>&1 &
}
start_on_free_port redis-server "$tmp/redis.log" start_redis
redis_port="$LISTEN_PORT"
pids+=("$LISTEN_PID")
start_broker() {
  "$BROKER_BIN" --listen="127.0.0.1:$1" --redis_url="redis://127.0.0.1:$redis_port" \
    --log_level=warning >"$tmp/broker.log" 2>&1 &
}
start_on_free_port jobwire-broker "$tmp/broker.log" start_broker
broker_port="$LISTEN_PORT"
pids+=("$LISTEN_PID")

# 4. The program enqueues a job whose payload carries a fresh token; its
#    handler prints what it received, and it exits 0 only after the Ack.
token="pkgtest-$$-$RANDOM"
status=0
timeout 60 "$tmp/quickstart" -addr "127.0.0.1:$broker_port" -name "$token" \
  >"$tmp/quickstart.log" 2>&1 || status=$?
sed 's/^/  /' "$tmp/quickstart.log"
[ "$status" -eq 0 ] || fail "the quickstart program exited $status"
job_id="$(sed -n 's/^enqueued job //p' "$tmp/quickstart.log")"
[ -n "$job_id" ] || fail "the program printed no 'enqueued job <id>'"
grep -qxF "handled greet job $job_id (attempt 1): hello, $token" "$tmp/quickstart.log" ||
  fail "the handler did not receive job $job_id with name $token"
grep -qxF "acked job $job_id" "$tmp/quickstart.log" || fail "job $job_id was not acked"
say "PASS: go get, go vet and go build in a fresh module; job $job_id enqueued, handled and acked"
