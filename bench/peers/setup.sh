#!/usr/bin/env bash
# Idempotent setup of the benchmark's peers (bench/README.md):
#   BullMQ  npm ci in bench/peers/bullmq (bullmq + ioredis pinned by package-lock.json)
#   asynq   go build of bench/peers/asynq (go.mod / go.sum) into
#           ${JOBWIRE_BUILD_DIR:-<repo>/build}/bench-peers/asynq-bench
#   jobwire's Go client program, bench/clients/go, into .../jobwire-go-bench
#   Celery, RQ, matplotlib (the chart): pip install -r requirements.txt into
#           the project venv (${JOBWIRE_VENV:-<repo>/.venv})
# The jobwire Python and Node.js clients come from client/python/setup.sh and
# client/node/build.sh; this only checks that they are there.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD="${JOBWIRE_BUILD_DIR:-$REPO/build}"
VENV="${JOBWIRE_VENV:-$REPO/.venv}"

# BullMQ: npm ci only when the lock file changed since the last install.
if [ ! -f "$HERE/bullmq/node_modules/.package-lock.json" ] ||
   [ "$HERE/bullmq/package-lock.json" -nt "$HERE/bullmq/node_modules/.package-lock.json" ]; then
  (cd "$HERE/bullmq" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "setup: bullmq $(node -p "require('$HERE/bullmq/node_modules/bullmq/package.json').version")," \
     "ioredis $(node -p "require('$HERE/bullmq/node_modules/ioredis/package.json').version")"

# asynq: go build is incremental.
mkdir -p "$BUILD/bench-peers"
(cd "$HERE/asynq" && go mod download && go build -o "$BUILD/bench-peers/asynq-bench" .)
echo "setup: $BUILD/bench-peers/asynq-bench ($(cd "$HERE/asynq" && go list -m -f '{{.Path}} {{.Version}}' github.com/hibiken/asynq))"

# jobwire's Go client program (bench/clients/go; generates client/go's stubs
# first when they are missing).
"$REPO/bench/clients/go/build.sh"

# Celery, RQ, matplotlib into the project venv.
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: no venv at $VENV: run client/python/setup.sh first" >&2
  exit 1
fi
"$VENV/bin/python" -m pip --disable-pip-version-check -q install -r "$HERE/requirements.txt"
echo "setup: $("$VENV/bin/python" -c 'import celery, rq, matplotlib; print(f"celery {celery.__version__}, rq {rq.__version__}, matplotlib {matplotlib.__version__}")')"

"$VENV/bin/python" -c 'import jobwire' 2>/dev/null ||
  echo "setup: warning: the jobwire Python client is not in $VENV (client/python/setup.sh)" >&2
[ -f "$REPO/client/node/dist/index.js" ] ||
  echo "setup: warning: the jobwire Node client is not built (client/node/build.sh)" >&2
