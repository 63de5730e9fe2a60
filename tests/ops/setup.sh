#!/usr/bin/env bash
# Idempotent setup of the operations tests (tests/ops): installs the real
# grpc-health-probe, the probe Kubernetes runs, from the Go module proxy into
# <build>/go/bin. Called by scripts/setup.sh. JOBWIRE_BUILD_DIR overrides
# <repo>/build.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD="${JOBWIRE_BUILD_DIR:-$REPO/build}"
VERSION="v0.4.62"
BIN="$BUILD/go/bin/grpc-health-probe"

if [ -x "$BIN" ] && [ -f "$BIN.version" ] && [ "$(cat "$BIN.version")" = "$VERSION" ]; then
  exit 0
fi
mkdir -p "$BUILD/go/bin"
echo "setup: installing grpc-health-probe $VERSION into $BUILD/go/bin"
GOBIN="$BUILD/go/bin" go install "github.com/grpc-ecosystem/grpc-health-probe@$VERSION"
echo "$VERSION" > "$BIN.version"
