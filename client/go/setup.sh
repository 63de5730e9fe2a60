#!/usr/bin/env bash
# Sets up the Go client's build: installs the pinned protoc plugins into
# ${JOBWIRE_BUILD_DIR:-<repo>/build}/go/bin and downloads the Go modules of
# client/go and tests/interop/go (go.mod pins them: among them the
# OpenTelemetry API go.opentelemetry.io/otel{,/trace} v1.47.0, and the SDK
# go.opentelemetry.io/otel/sdk v1.47.0 that the tests and the interop worker
# use). Idempotent: a second run does nothing new.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD_ROOT="${JOBWIRE_BUILD_DIR:-$ROOT/build}"
mkdir -p "$BUILD_ROOT/go/bin"
BUILD="$(cd "$BUILD_ROOT" && pwd)/go"
BIN="$BUILD/bin"

# Pinned generator versions; google.golang.org/grpc and
# google.golang.org/protobuf in go.mod match them.
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

# The oldest Go the module builds with: go.mod's go line (set by its
# dependencies, see README.md).
GO_MIN="$(sed -n 's/^go //p' "$HERE/go.mod")"
if ! command -v go >/dev/null 2>&1; then
  echo "client/go/setup.sh: go not found on PATH (Go >= $GO_MIN is needed)" >&2
  exit 1
fi
if ! command -v protoc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "client/go/setup.sh: installing protoc (Debian package protobuf-compiler)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler
  else
    echo "client/go/setup.sh: protoc not found; install protobuf-compiler" >&2
    exit 1
  fi
fi

# Install a plugin unless the pinned version is already there.
install_plugin() { # name package version version-string
  local name="$1" pkg="$2" version="$3" want="$4"
  if [ -x "$BIN/$name" ] && [ "$("$BIN/$name" --version 2>/dev/null)" = "$want" ]; then
    return
  fi
  echo "client/go/setup.sh: installing $name $version into $BIN"
  (cd "$HERE" && GOBIN="$BIN" go install "$pkg@$version")
}
install_plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go \
  "$PROTOC_GEN_GO_VERSION" "protoc-gen-go $PROTOC_GEN_GO_VERSION"
install_plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc \
  "$PROTOC_GEN_GO_GRPC_VERSION" "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}"

(cd "$HERE" && go mod download)
(cd "$ROOT/tests/interop/go" && go mod download)
