#!/usr/bin/env bash
# Runs the dashboard's tests (node:test) against a real redis-server, the
# real broker (JOBWIRE_BROKER_BIN, default <repo>/build/broker/jobwire-broker)
# and Debian's headless chromium. Builds the dashboard (and the Node client
# the tests enqueue with) when they were never built.
set -euo pipefail
cd "$(dirname "$0")"
REPO_ROOT="$(cd .. && pwd)"
export JOBWIRE_BROKER_BIN="${JOBWIRE_BROKER_BIN:-$REPO_ROOT/build/broker/jobwire-broker}"
[ -x "$JOBWIRE_BROKER_BIN" ] || { echo "dashboard/test.sh: broker binary not found at $JOBWIRE_BROKER_BIN (build it first)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "dashboard/test.sh: redis-server not on PATH" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "dashboard/test.sh: /usr/bin/chromium missing (run dashboard/setup.sh)" >&2; exit 1; }
[ -f ../client/node/dist/index.js ] || { bash ../client/node/setup.sh && bash ../client/node/build.sh; }
[ -f dist/main.js ] || { bash ./setup.sh && bash ./build.sh; }
exec node --test --test-reporter=spec --test-concurrency=1 --test-timeout=120000 test/*.test.mjs
