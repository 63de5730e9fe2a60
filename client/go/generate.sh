#!/usr/bin/env bash
# Regenerates the Go stubs of every proto/jobwire/v1/*.proto into
# client/go/jobwirepb (broker.pb.go, broker_grpc.pb.go, admin.pb.go,
# admin_grpc.pb.go), with the plugin versions pinned in setup.sh. The stubs
# are committed: run this after every change to proto/ and commit the result
# (client/go/check_generated.sh, run by test.sh, fails until you do).
#
#   client/go/generate.sh             regenerate client/go/jobwirepb in place
#   client/go/generate.sh --out DIR   write the stubs into DIR instead (the
#                                     check uses this); DIR is created
#
# Stubs no longer produced by any .proto are removed from the target folder.
# Runs setup.sh first (idempotent).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MODULE=github.com/jobwire/jobwire/client/go

OUT="$HERE/jobwirepb"
if [ "${1:-}" = --out ] && [ -n "${2:-}" ]; then
  OUT="$2"
elif [ $# -ne 0 ]; then
  echo "usage: $0 [--out DIR]" >&2
  exit 2
fi

"$HERE/setup.sh" >&2
BIN="$(cd "${JOBWIRE_BUILD_DIR:-$ROOT/build}" && pwd)/go/bin"

# protoc writes <module root>/jobwirepb/*.pb.go (go_package minus MODULE);
# generate into a scratch module root, then replace the target's stubs.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
protoc -I "$ROOT/proto" \
  --plugin=protoc-gen-go="$BIN/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$BIN/protoc-gen-go-grpc" \
  --go_out="$scratch" --go_opt=module="$MODULE" \
  --go-grpc_out="$scratch" --go-grpc_opt=module="$MODULE" \
  "$ROOT"/proto/jobwire/v1/*.proto

mkdir -p "$OUT"
rm -f "$OUT"/*.pb.go
cp "$scratch"/jobwirepb/*.pb.go "$OUT"/
