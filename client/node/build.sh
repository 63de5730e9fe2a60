#!/usr/bin/env bash
# Build @jobwire/client: copy the broker contract into the package, generate
# the TypeScript message types from it, compile to dist/ (JS + .d.ts).
# Nothing it writes is committed (see .gitignore).
set -euo pipefail
cd "$(dirname "$0")"
REPO_ROOT="$(cd ../.. && pwd)"

[ -x node_modules/.bin/tsc ] || bash ./setup.sh

rm -rf proto src/generated dist
mkdir -p proto/jobwire/v1
cp "$REPO_ROOT/proto/jobwire/v1/broker.proto" proto/jobwire/v1/broker.proto

# Flags must match LOADER_OPTIONS in src/proto.ts.
node_modules/.bin/proto-loader-gen-types \
  --longs=String --enums=String --defaults --oneofs \
  --grpcLib=@grpc/grpc-js \
  -I proto -O src/generated \
  jobwire/v1/broker.proto >/dev/null

node_modules/.bin/tsc -p tsconfig.json
echo "client/node: built dist/"
