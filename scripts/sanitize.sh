#!/usr/bin/env bash
# Builds jobwire with a sanitizer in its own build directory and runs the C++
# test suite (unit tests and the cross-process tests, whose broker binary is
# sanitized too). The Python, Node.js and Go client suites, the ops pytest
# checks, interop and deploy tests are skipped: they test other languages and
# tools, not this C++ code.
#
#   scripts/sanitize.sh [asan|tsan]      (default asan: AddressSanitizer + UBSan)
#
# Environment: JOBWIRE_SANITIZE_BUILD_DIR (default build-<kind>),
# JOBWIRE_TEST_JOBS (ctest -j, default 2), JOBWIRE_BUILD_JOBS (default 2),
# CTEST_ARGS (extra ctest arguments, e.g. "-R limits_test").
# Every sanitized process (test binaries and the brokers they start) writes
# its reports to <build>/sanitizer-logs/; the script lists them at the end and
# fails when there is any, or when a test fails.
#
# tsan is not usable against Debian's prebuilt libraries: gRPC, protobuf and
# abseil (absl::Mutex included) are not instrumented, so ThreadSanitizer
# cannot see their synchronization and reports every hand-off through a
# completion queue or an absl::Mutex as a race (measured 2026-12-01: 240
# report files, ~17,000 reports, in the store tests as much as in gRPC
# callbacks). A meaningful tsan run needs gRPC, protobuf and abseil built
# from source with -fsanitize=thread; asan (AddressSanitizer + UBSan) works
# with the packaged libraries.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kind="${1:-asan}"
case "$kind" in
  asan) option=-DJOBWIRE_ASAN=ON ;;
  tsan) option=-DJOBWIRE_TSAN=ON ;;
  *) echo "usage: $0 [asan|tsan]" >&2; exit 2 ;;
esac
build="${JOBWIRE_SANITIZE_BUILD_DIR:-$root/build-$kind}"
logs="$build/sanitizer-logs"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$option"
cmake --build "$build" -j "${JOBWIRE_BUILD_JOBS:-2}"

rm -rf "$logs"
mkdir -p "$logs"
# Reports go to files (one per process) so that a broker's report is kept
# even when the test that started it passes. The suppressions file names
# known reports from Debian's prebuilt (unsanitized) libraries, if any.
supp="$root/scripts/sanitizer-suppressions"
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.txt:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=0"
export TSAN_OPTIONS="log_path=$logs/tsan:suppressions=$supp/tsan.txt:second_deadlock_stack=1:halt_on_error=0"

skip='^(python_client_test|node_client_test|go_client_test|interop_test|ops_test|deploy_test)$'
status=0
(cd "$build" && ctest --output-on-failure -j "${JOBWIRE_TEST_JOBS:-2}" --timeout 600 \
  -E "$skip" ${CTEST_ARGS:-}) || status=$?

reports=("$logs"/*)
if [ -e "${reports[0]}" ]; then
  echo "sanitizer reports in $logs:"
  for r in "${reports[@]}"; do
    echo "== $r"
    grep -E "^(SUMMARY|==[0-9]+==ERROR|WARNING: ThreadSanitizer)|runtime error" "$r" | sort | uniq -c | head -20
  done
  status=1
else
  echo "no sanitizer reports"
fi
exit $status
