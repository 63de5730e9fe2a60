#!/usr/bin/env bash
# Proves @jobwire/client installs like a normal npm package:
#   1. `npm pack` of a copy of client/node and proto/ in a temp dir (prepack
#      runs build.sh there, so the tree's dist/, which other suites import
#      while this runs, is never rebuilt under them) -> jobwire-client-<version>.tgz,
#      checked to hold the CommonJS and ES-module entries, their types and the
#      compiled descriptors (broker.proto's, and google.rpc.Status's with which
#      the error details are decoded), and no .proto file (none is read at run
#      time);
#   2. a fresh project in a temp dir outside the repository: `npm init -y`,
#      `npm install <tarball>`;
#   3. a real redis-server and the real broker (JOBWIRE_BROKER_BIN, default
#      <repo>/build/broker/jobwire-broker) on free loopback ports;
#   4. from that project, test/package/consumer.mjs (`import`) and
#      consumer.cjs (`require`) each enqueue a job, process it with a Worker
#      and print the finished job (and check that a getJob of a missing job
#      rejects with reason JOB_NOT_FOUND); both outputs are compared with the
#      expected ones; consumer.mjs's Worker sets part of the result in a
#      middleware, and it checks that a `tracing: true` Client, without the
#      optional peer dependency @opentelemetry/api installed, throws an
#      Error saying to install it;
#   5. tsc --noEmit (module nodenext, strict, skipLibCheck off) type-checks
#      consumer.mts and consumer.cts against the installed package's types
#      (middleware and tracing options included: they need no
#      @opentelemetry/api types).
# Exits non-zero on any failure; processes and temp dirs go on exit.
set -euo pipefail
cd "$(dirname "$0")"
HERE="$(pwd)"
REPO_ROOT="$(cd ../.. && pwd)"
BROKER_BIN="${JOBWIRE_BROKER_BIN:-$REPO_ROOT/build/broker/jobwire-broker}"
[ -x "$BROKER_BIN" ] || { echo "package_test.sh: broker binary not found at $BROKER_BIN (build it first)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "package_test.sh: redis-server not on PATH" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/jobwire-node-package.XXXXXX")"
PIDS=()
cleanup() {
  local rc=$?
  local i
  # Broker first, then redis-server.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; wait "${PIDS[i]}" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    for log in "$WORK"/*.log; do [ -f "$log" ] && { echo "--- $log (tail)" >&2; tail -n 30 "$log" >&2; }; done
    echo "package_test.sh: FAILED" >&2
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "package_test.sh: $*" >&2; exit 1; }
step() { echo "== $*"; }

. "$REPO_ROOT/scripts/start_on_free_port.sh"

step "npm pack of a copy (prepack: build.sh)"
# The copy has the tree's layout (client/node beside proto/) without its
# build output; node_modules is the tree's own, only read.
SRC="$WORK/src/client/node"
mkdir -p "$WORK/pack" "$SRC"
tar -C "$HERE" --exclude=./node_modules --exclude=./dist --exclude=./src/generated -cf - . | tar -C "$SRC" -xf -
ln -s "$HERE/node_modules" "$SRC/node_modules"
cp -r "$REPO_ROOT/proto" "$WORK/src/proto"
(cd "$SRC" && npm pack --pack-destination "$WORK/pack" --loglevel=warn) >"$WORK/pack.log" 2>&1 || fail "npm pack failed (see $WORK/pack.log)"
shopt -s nullglob
tarballs=("$WORK"/pack/*.tgz)
[ "${#tarballs[@]}" -eq 1 ] || fail "expected one tarball, found ${#tarballs[@]}"
TGZ="${tarballs[0]}"
listing="$(tar tzf "$TGZ")"
for f in package/package.json package/README.md package/dist/index.js package/dist/index.d.ts \
         package/dist/index.mjs package/dist/index.d.mts package/dist/generated/broker_descriptor.js \
         package/dist/generated/rpc_status_descriptor.js package/dist/status_details.js; do
  grep -qx "$f" <<<"$listing" || fail "$(basename "$TGZ") lacks $f"
done
if grep -q '\.proto$' <<<"$listing"; then fail "$(basename "$TGZ") ships a .proto file"; fi
echo "$(basename "$TGZ"): $(wc -l <<<"$listing") files"

step "fresh project: npm init -y, npm install $(basename "$TGZ")"
APP="$WORK/app"
mkdir -p "$APP"
cp "$HERE"/test/package/consumer.{mjs,cjs,mts,cts} "$APP/"
(
  cd "$APP"
  npm init -y >/dev/null
  npm install --no-audit --no-fund --loglevel=error "$TGZ" typescript@~5.9.3 @types/node@^20
) >"$WORK/install.log" 2>&1 || fail "npm install failed (see $WORK/install.log)"
[ -f "$APP/node_modules/@jobwire/client/dist/index.mjs" ] || fail "the installed package has no dist/index.mjs"

step "redis-server and broker"
start_redis() {
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no >"$WORK/redis.log" 2>&1 &
}
start_on_free_port redis-server "$WORK/redis.log" start_redis
REDIS_PORT="$LISTEN_PORT"
PIDS+=("$LISTEN_PID")
start_broker() {
  "$BROKER_BIN" --listen "127.0.0.1:$1" --redis_url "redis://127.0.0.1:$REDIS_PORT" \
    --log_level=warning --shutdown_grace_ms=2000 >"$WORK/broker.log" 2>&1 &
}
start_on_free_port jobwire-broker "$WORK/broker.log" start_broker
BROKER_PORT="$LISTEN_PORT"
PIDS+=("$LISTEN_PID")
export JOBWIRE_ADDR="127.0.0.1:$BROKER_PORT"

# run_consumer <file> <expected stdout>
run_consumer() {
  local out
  out="$(cd "$APP" && node "$1" "package-test-${1//./-}-$$")" || fail "$1 failed"
  [ "$out" = "$2" ] || fail "$1 printed $out, expected $2"
  echo "$1: $out"
}
step "consumers"
run_consumer consumer.mjs '{"state":"JOB_STATE_COMPLETED","attempts":1,"result":{"sum":5,"module":"esm"}}'
run_consumer consumer.cjs '{"state":"JOB_STATE_COMPLETED","attempts":1,"result":{"sum":42,"module":"cjs"}}'

step "tsc against the installed types"
cat >"$APP/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "target": "ES2022",
    "types": ["node"],
    "strict": true,
    "noEmit": true,
    "skipLibCheck": false
  },
  "files": ["consumer.mts", "consumer.cts"]
}
JSON
(cd "$APP" && node_modules/.bin/tsc -p tsconfig.json) || fail "tsc found errors in the consumers or the package's types"
echo "consumer.mts, consumer.cts: types ok"

echo "package_test.sh: OK"
