#!/usr/bin/env bash
# Fails when the committed stubs in client/go/jobwirepb differ from what
# proto/jobwire/v1/*.proto produces with the pinned plugins (setup.sh):
# regenerates into a temporary folder and diffs. Run by test.sh (ctest
# go_client_test), so a .proto edited without regenerating fails CI.
#
# The protoc version each stub records in its header comment is ignored:
# protoc is the system's (Debian: protobuf-compiler), not pinned, and only
# that comment depends on it.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$HERE/generate.sh" --out "$tmp/jobwirepb"

# Only *.pb.go files are compared (jobwirepb/doc.go is hand-written).
mkdir "$tmp/committed"
cp "$HERE"/jobwirepb/*.pb.go "$tmp/committed/" 2>/dev/null || true
if ! diff -u -r -I '^//[[:space:]]*\(-[[:space:]]*\)\{0,1\}protoc[[:space:]]' \
    "$tmp/committed" "$tmp/jobwirepb" >"$tmp/diff"; then
  sed -e "s#$tmp/committed#client/go/jobwirepb#" \
      -e "s#$tmp/jobwirepb#regenerated-from-proto#" "$tmp/diff" >&2
  echo >&2
  echo "client/go/check_generated.sh: client/go/jobwirepb is out of date with proto/jobwire/v1/*.proto (diff above)." >&2
  echo "Run client/go/generate.sh and commit client/go/jobwirepb." >&2
  exit 1
fi
echo "client/go/check_generated.sh: client/go/jobwirepb matches proto/jobwire/v1/*.proto"
