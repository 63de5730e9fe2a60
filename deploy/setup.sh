#!/usr/bin/env bash
# Installs what deploy/test.sh needs: helm, built from the Go module proxy into
# ${JOBWIRE_BUILD_DIR:-<repo>/build}/go/bin (once: about 3 minutes on 2
# cores), and the validator's Go modules. Idempotent.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD_ROOT="${JOBWIRE_BUILD_DIR:-$ROOT/build}"
mkdir -p "$BUILD_ROOT/go/bin"
BIN="$(cd "$BUILD_ROOT" && pwd)/go/bin"
HELM_VERSION=v3.22.0
step() { printf '\n== %s\n' "$*"; }

HELM="$BIN/helm"
if [ -x "$HELM" ] && go version -m "$HELM" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+helm.sh/helm/v3[[:space:]]+$HELM_VERSION([[:space:]]|$)"; then
  echo "helm $HELM_VERSION: $HELM (cached)"
else
  step "building helm $HELM_VERSION into $BIN (once; a few minutes)"
  hs=$(date +%s)
  (cd "$HERE/validate" && GOBIN="$BIN" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
  echo "helm built in $(( $(date +%s) - hs )) s"
fi

(cd "$HERE/validate" && go mod download)
