#!/usr/bin/env bash
# Configures and builds jobwire into ./build (or $JOBWIRE_BUILD_DIR): the
# broker, the CLI, the C++ client and the tests with CMake, then the Python,
# Node.js and Go clients with their own tools (client/<lang>/build.sh), then
# the web dashboard (dashboard/build.sh).
# With JOBWIRE_BROKER_ONLY=1 (scripts/run-broker.sh): only the broker and the
# CLI, without the tests (a later full build turns them back on).
# Extra arguments go to cmake's configure step, e.g. -DJOBWIRE_ASAN=ON.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JOBWIRE_BUILD_DIR:-$root/build}"
if [ "${JOBWIRE_BROKER_ONLY:-0}" = 1 ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
    -DJOBWIRE_BUILD_TESTS=OFF "$@"
  cmake --build "$build" -j "${JOBWIRE_JOBS:-2}" --target jobwire-broker jobwire
  exit 0
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
  -DJOBWIRE_BUILD_TESTS=ON "$@"
cmake --build "$build" -j "${JOBWIRE_JOBS:-2}"
export JOBWIRE_BUILD_DIR="$build"
for lang in python node go; do
  "$root/client/$lang/build.sh"
done
# The web dashboard (dashboard/build.sh: tsc into dashboard/dist).
"$root/dashboard/build.sh"
