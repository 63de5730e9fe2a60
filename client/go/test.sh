#!/usr/bin/env bash
# Runs the Go client's checks and tests: first check_generated.sh (the
# committed stubs in jobwirepb/ match proto/), then `go test` against a real
# redis-server (from PATH) and the real broker ($JOBWIRE_BROKER_BIN, else
# <repo>/build/broker/jobwire-broker). Extra arguments go to `go test` (for
# example: ./test.sh -race -v).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
"$HERE/check_generated.sh"
cd "$HERE"
exec go test -count=1 -timeout 300s "$@" ./...
