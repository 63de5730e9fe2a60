#!/usr/bin/env bash
# Build the Node client and run its tests (node:test) against a real
# redis-server and the real broker (JOBWIRE_BROKER_BIN, default
# <repo>/build/broker/jobwire-broker). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
REPO_ROOT="$(cd ../.. && pwd)"
export JOBWIRE_BROKER_BIN="${JOBWIRE_BROKER_BIN:-$REPO_ROOT/build/broker/jobwire-broker}"
[ -x "$JOBWIRE_BROKER_BIN" ] || { echo "client/node/test.sh: broker binary not found at $JOBWIRE_BROKER_BIN (build it first)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "client/node/test.sh: redis-server not on PATH" >&2; exit 1; }

# scripts/build.sh builds the client; build here only when it never was.
[ -f dist/index.js ] || { bash ./setup.sh && bash ./build.sh; }
exec node --test --test-reporter=spec --test-timeout=60000 test/*.test.mjs
