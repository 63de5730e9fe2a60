#!/usr/bin/env bash
# Builds the Go client: regenerates the committed stubs in client/go/jobwirepb
# from proto/ (generate.sh; commit any change it makes), vets and builds every
# package, and builds the interop worker into
# ${JOBWIRE_BUILD_DIR:-<repo>/build}/go/interop-worker. Runs setup.sh first
# (through generate.sh; idempotent).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
"$HERE/generate.sh"
BUILD="$(cd "${JOBWIRE_BUILD_DIR:-$ROOT/build}" && pwd)/go"

cd "$HERE"
go vet ./...
go build ./...

cd "$ROOT/tests/interop/go"
go vet ./...
go build -o "$BUILD/interop-worker" .
echo "client/go/build.sh: built the client and $BUILD/interop-worker"
