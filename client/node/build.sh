#!/usr/bin/env bash
# Build @jobwire/client into dist/ (CommonJS JS + .d.ts, and an ES-module
# entry over it). Also run by `npm pack` / `npm publish` (the prepack script),
# so it must run inside the repository: it reads <repo>/proto.
#   1. TypeScript message types from proto/jobwire/v1/broker.proto
#      (proto-loader-gen-types) -> src/generated/
#   2. the .proto compiled to a JSON descriptor -> src/generated/broker_descriptor.ts,
#      so nothing parses .proto text at run time (tools/gen_descriptor.cjs)
#   3. google/rpc/status.proto + error_details.proto (googleapis, from the
#      Debian package golang-github-gogo-googleapis-dev, installed by
#      scripts/setup.sh; GOOGLEAPIS_DIR overrides the location) compiled to a
#      JSON descriptor -> src/generated/rpc_status_descriptor.ts, with which
#      src/status_details.ts decodes the broker's error details
#      (tools/gen_rpc_status_descriptor.cjs)
#   4. tsc -> dist/
#   5. dist/index.mjs + dist/index.d.mts re-exporting dist/index.js (tools/gen_esm_entry.cjs)
# Nothing it writes is committed (see .gitignore).
set -euo pipefail
cd "$(dirname "$0")"
REPO_ROOT="$(cd ../.. && pwd)"
PROTO_DIR="$REPO_ROOT/proto"
PROTO_FILE=jobwire/v1/broker.proto
[ -f "$PROTO_DIR/$PROTO_FILE" ] || { echo "client/node/build.sh: $PROTO_DIR/$PROTO_FILE not found (build from a jobwire checkout)" >&2; exit 1; }
GOOGLEAPIS_DIR="${GOOGLEAPIS_DIR:-/usr/share/gocode/src/github.com/gogo/googleapis}"
for f in google/rpc/status.proto google/rpc/error_details.proto; do
  [ -f "$GOOGLEAPIS_DIR/$f" ] || { echo "client/node/build.sh: $GOOGLEAPIS_DIR/$f not found: install the Debian package golang-github-gogo-googleapis-dev (scripts/setup.sh does), or set GOOGLEAPIS_DIR to a googleapis checkout" >&2; exit 1; }
done

[ -x node_modules/.bin/tsc ] || bash ./setup.sh

# proto/: the copy older builds made (now read in place).
rm -rf proto src/generated dist

# Flags must match LOADER_OPTIONS in src/proto.ts.
node_modules/.bin/proto-loader-gen-types \
  --longs=Number --enums=String --defaults --oneofs \
  --grpcLib=@grpc/grpc-js \
  -I "$PROTO_DIR" -O src/generated \
  "$PROTO_FILE" >/dev/null
node tools/gen_descriptor.cjs "$PROTO_DIR" "$PROTO_FILE" src/generated/broker_descriptor.ts
node tools/gen_rpc_status_descriptor.cjs "$GOOGLEAPIS_DIR" src/generated/rpc_status_descriptor.ts

node_modules/.bin/tsc -p tsconfig.json
node tools/gen_esm_entry.cjs dist
echo "client/node: built dist/"
