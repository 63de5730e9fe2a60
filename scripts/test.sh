#!/usr/bin/env bash
# Sets up, builds and runs every test: unit tests next to the code and the
# cross-process tests in tests/ (real redis-server, real broker binary), then
# the request fuzzer for a bounded time (fuzz/run.sh: its own clang build in
# build-fuzz/; JOBWIRE_FUZZ_SECONDS, default 60, 0 skips it), then the C++
# suite again under ThreadSanitizer (scripts/sanitize.sh tsan: its own build
# in build-tsan/; JOBWIRE_TSAN_CHECK=0 skips it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JOBWIRE_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "${JOBWIRE_TEST_JOBS:-2}" --timeout 300
fuzz_seconds="${JOBWIRE_FUZZ_SECONDS:-60}"
if [ "$fuzz_seconds" -gt 0 ]; then
  "$root/fuzz/run.sh" "$fuzz_seconds"
fi
if [ "${JOBWIRE_TSAN_CHECK:-1}" != 0 ]; then
  "$root/scripts/sanitize.sh" tsan
fi
