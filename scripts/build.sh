#!/usr/bin/env bash
# Configures and builds jobwire into ./build (or $JOBWIRE_BUILD_DIR): the
# broker and the C++ client with CMake, then the Python, Node.js and Go
# clients with their own tools (stubs generated from proto/ each time).
# Extra arguments go to cmake's configure step, e.g. -DJOBWIRE_ASAN=ON.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JOBWIRE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$build" -j "${JOBWIRE_JOBS:-2}"
if [ "${JOBWIRE_BROKER_ONLY:-0}" != 1 ]; then
  export JOBWIRE_BUILD_DIR="$build"
  for lang in python node go; do
    "$root/client/$lang/build.sh"
  done
fi
