#!/usr/bin/env bash
# Configures and builds jobwire into ./build (or $JOBWIRE_BUILD_DIR).
# Extra arguments go to cmake's configure step, e.g. -DJOBWIRE_ASAN=ON.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JOBWIRE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$build" -j "${JOBWIRE_JOBS:-2}"
