#!/usr/bin/env bash
# Installs what proto/check.sh needs: buf, built from the Go module proxy
# into ${JOBWIRE_BUILD_DIR:-<repo>/build}/go/bin (once: about a minute on 2
# cores). Called by scripts/setup.sh. Idempotent.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD="${JOBWIRE_BUILD_DIR:-$ROOT/build}"
BUF_VERSION=v1.75.0
mkdir -p "$BUILD/go/bin"
BUF="$(cd "$BUILD/go/bin" && pwd)/buf"

if [ -x "$BUF" ] && go version -m "$BUF" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/bufbuild/buf[[:space:]]+$BUF_VERSION([[:space:]]|$)"; then
  exit 0
fi
echo "setup: building buf $BUF_VERSION into $(dirname "$BUF") (once; about a minute)"
GOBIN="$(dirname "$BUF")" go install "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION"
