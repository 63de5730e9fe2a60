#!/usr/bin/env bash
# Builds the Go client: generates the stubs into client/go/jobwirepb (never
# committed), vets and builds every package, and builds the interop worker
# into ${JOBWIRE_BUILD_DIR:-<repo>/build}/go/interop-worker. Runs setup.sh
# first (idempotent).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
"$HERE/setup.sh"
BUILD_ROOT="${JOBWIRE_BUILD_DIR:-$ROOT/build}"
BUILD="$(cd "$BUILD_ROOT" && pwd)/go"
BIN="$BUILD/bin"
MODULE=github.com/jobwire/jobwire/client/go

protoc -I "$ROOT/proto" \
  --plugin=protoc-gen-go="$BIN/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$BIN/protoc-gen-go-grpc" \
  --go_out="$HERE" --go_opt=module="$MODULE" \
  --go-grpc_out="$HERE" --go-grpc_opt=module="$MODULE" \
  "$ROOT/proto/jobwire/v1/broker.proto"

cd "$HERE"
go vet ./...
go build ./...

cd "$ROOT/tests/interop/go"
go vet ./...
go build -o "$BUILD/interop-worker" .
echo "client/go/build.sh: built the client and $BUILD/interop-worker"
