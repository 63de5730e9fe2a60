#!/usr/bin/env bash
# Build @jobwire/client into dist/ (CommonJS JS + .d.ts, and an ES-module
# entry over it). Also run by `npm pack` / `npm publish` (the prepack script),
# so it must run inside the repository: it reads <repo>/proto.
#   1. TypeScript message types from proto/jobwire/v1/broker.proto
#      (proto-loader-gen-types) -> src/generated/
#   2. the .proto compiled to a JSON descriptor -> src/generated/broker_descriptor.ts,
#      so nothing parses .proto text at run time (tools/gen_descriptor.cjs)
#   3. tsc -> dist/
#   4. dist/index.mjs + dist/index.d.mts re-exporting dist/index.js (tools/gen_esm_entry.cjs)
# Nothing it writes is committed (see .gitignore).
set -euo pipefail
cd "$(dirname "$0")"
REPO_ROOT="$(cd ../.. && pwd)"
PROTO_DIR="$REPO_ROOT/proto"
PROTO_FILE=jobwire/v1/broker.proto
[ -f "$PROTO_DIR/$PROTO_FILE" ] || { echo "client/node/build.sh: $PROTO_DIR/$PROTO_FILE not found (build from a jobwire checkout)" >&2; exit 1; }

[ -x node_modules/.bin/tsc ] || bash ./setup.sh

# proto/: the copy older builds made (now read in place).
rm -rf proto src/generated dist

# Flags must match LOADER_OPTIONS in src/proto.ts.
node_modules/.bin/proto-loader-gen-types \
  --longs=String --enums=String --defaults --oneofs \
  --grpcLib=@grpc/grpc-js \
  -I "$PROTO_DIR" -O src/generated \
  "$PROTO_FILE" >/dev/null
node tools/gen_descriptor.cjs "$PROTO_DIR" "$PROTO_FILE" src/generated/broker_descriptor.ts

node_modules/.bin/tsc -p tsconfig.json
node tools/gen_esm_entry.cjs dist
echo "client/node: built dist/"
