#!/usr/bin/env bash
# The contract's own checks (ctest proto_contract_test), with buf (buf.yaml at
# the repository root; proto/setup.sh installs buf):
#   1. buf lint (the STANDARD rules) of proto/jobwire
#   2. buf format: the files are formatted as buf formats them
#   3. buf breaking (the FILE rules) against the last released contract, the
#      commit named by the last line of proto/RELEASES ("<version> <commit>";
#      the same commit carries the git tag contract-<version>). Compared by
#      commit, so a clone without tags checks the same thing.
# Needs the git history (not a shallow clone) for step 3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD="${JOBWIRE_BUILD_DIR:-$ROOT/build}"
BUF="$BUILD/go/bin/buf"
fail() { echo "proto/check.sh: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

[ -x "$BUF" ] || "$HERE/setup.sh"
cd "$ROOT"
# buf keeps its cache out of $HOME.
export BUF_CACHE_DIR="$BUILD/buf-cache"

step "buf lint"
"$BUF" lint || fail "buf lint found problems (above)"

step "buf format"
"$BUF" format --diff --exit-code || fail "run: $BUF format -w"

read -r version commit < <(grep -Ev '^[[:space:]]*(#|$)' "$HERE/RELEASES" | tail -n 1)
[ -n "${commit:-}" ] || fail "proto/RELEASES names no release"
git cat-file -e "$commit^{commit}" 2>/dev/null \
  || fail "commit $commit of contract $version is not in this clone's history (a shallow clone?)"
if tag=$(git rev-parse -q --verify "refs/tags/contract-$version^{commit}"); then
  [ "$tag" = "$commit" ] || fail "tag contract-$version is $tag, proto/RELEASES says $commit"
fi
step "buf breaking against contract $version ($commit)"
"$BUF" breaking --against ".git#ref=$commit" || fail "a breaking change against contract $version (above)"
echo "proto/check.sh: PASS"
