#!/usr/bin/env bash
# Builds the libFuzzer target with clang (ASan + UBSan) in build-fuzz/ and
# runs it for a bounded time, starting from fuzz/corpus/ (new inputs go to
# build-fuzz/corpus/, so the committed seeds stay small).
#
#   fuzz/run.sh [seconds]     (default 60)
#
# Installs clang and its runtime (Debian: clang, libclang-rt-14-dev) when
# missing. A crash, sanitizer report, oracle finding or state-invariant
# violation stops the
# run with a non-zero exit and a crash-* / leak-* / timeout-* file in
# build-fuzz/artifacts/ (reproduce: build-fuzz/fuzz/jobwire_request_fuzzer <file>).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${JOBWIRE_FUZZ_BUILD_DIR:-$root/build-fuzz}"

if ! command -v clang++ >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DJOBWIRE_FUZZ=ON -DJOBWIRE_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j "${JOBWIRE_BUILD_JOBS:-2}" --target jobwire_request_fuzzer

mkdir -p "$build/corpus" "$build/artifacts"
# An oracle finding also writes the inputs that led to it here (finding-<pid>/).
export JOBWIRE_FUZZ_FINDINGS_DIR="${JOBWIRE_FUZZ_FINDINGS_DIR:-$build/artifacts}"
# Leaks are checked at exit only: per-input leak checks cost much and would
# flag gRPC/protobuf caches that live for the whole process.
exec "$build/fuzz/jobwire_request_fuzzer" -max_total_time="$seconds" -max_len=4096 \
  -timeout=30 -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$build/artifacts/" \
  "$build/corpus" "$root/fuzz/corpus"
