#!/usr/bin/env bash
# Runs the Go client's tests against a real redis-server (from PATH) and the
# real broker ($JOBWIRE_BROKER_BIN, else <repo>/build/broker/jobwire-broker).
# Builds first when the generated stubs are missing or older than
# broker.proto. Extra arguments go to `go test` (for example:
# ./test.sh -race -v).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
PROTO="$HERE/../../proto/jobwire/v1/broker.proto"
stale() { [ ! -f "$1" ] || [ "$PROTO" -nt "$1" ]; }
if stale "$HERE/jobwirepb/broker.pb.go" || stale "$HERE/jobwirepb/broker_grpc.pb.go"; then
  "$HERE/build.sh"
fi
cd "$HERE"
exec go test -count=1 -timeout 300s "$@" ./...
