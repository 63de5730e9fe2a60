#!/usr/bin/env bash
# Builds the jobwire Go-client program of the side-by-side benchmark
# (bench/clients/go/main.go) into
# ${JOBWIRE_BUILD_DIR:-<repo>/build}/bench-peers/jobwire-go-bench.
# Needs the client's generated stubs (client/go/jobwirepb/*.pb.go): runs
# client/go/build.sh first when they are missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
BUILD="${JOBWIRE_BUILD_DIR:-$REPO/build}"
if [ ! -f "$REPO/client/go/jobwirepb/broker.pb.go" ] || [ ! -f "$REPO/client/go/jobwirepb/broker_grpc.pb.go" ]; then
  "$REPO/client/go/build.sh"
fi
mkdir -p "$BUILD/bench-peers"
cd "$HERE"
go mod download
go vet .
go build -o "$BUILD/bench-peers/jobwire-go-bench" .
echo "bench/clients/go/build.sh: built $BUILD/bench-peers/jobwire-go-bench"
