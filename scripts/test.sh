#!/usr/bin/env bash
# Sets up, builds and runs every test: unit tests next to the code and the
# cross-process tests in tests/ (real redis-server, real broker binary).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JOBWIRE_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "${JOBWIRE_TEST_JOBS:-2}" --timeout 300
