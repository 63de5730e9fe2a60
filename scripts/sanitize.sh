#!/usr/bin/env bash
# Builds jobwire with a sanitizer in its own build directory and runs the C++
# test suite (unit tests and the cross-process tests, whose broker binary is
# sanitized too). The Python, Node.js and Go client suites, the package
# tests, the ops pytest checks, the interop and behaviour tables and the
# deploy tests are skipped: they test other languages, packaging and tools,
# not this C++ code (and the other languages' workers are built only in the
# main build tree).
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
# tsan runs against Debian's prebuilt gRPC, protobuf and abseil, which are not
# instrumented; three things make its reports mean something:
#   - broker/base/tsan_absl_sync.cc (linked into every executable of the tsan
#     build) makes abseil's Mutex, CondVar and Notification visible to TSan;
#     without it every hand-off under an absl::Mutex is reported (measured
#     2026-12-01: ~17,000 reports);
#   - ignore_noninstrumented_modules=1: the libc calls made inside those
#     libraries (free, memcpy, sendmsg on gRPC's own buffers) are not checked;
#   - scripts/tsan_reports.py sorts what remains: a report fails the run when
#     either racing access was made by jobwire's code; races between two
#     accesses of gRPC's own inline header code (callback tags, op sets,
#     handed between gRPC threads by atomics inside libgrpc++) are listed, not
#     failed. scripts/sanitizer-suppressions/tsan.txt names, with reasons, the
#     few reports of gRPC objects touched by our code.
# tsan_canary_test checks that a deliberate race in jobwire code fails it.
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
export TSAN_OPTIONS="log_path=$logs/tsan:log_exe_name=1:suppressions=$supp/tsan.txt:ignore_noninstrumented_modules=1:second_deadlock_stack=1:halt_on_error=0:exitcode=0"

skip='^(python_client_test|node_client_test|go_client_test|[a-z]+_package_test|interop_test|behaviours_test|ops_test|deploy_test|proto_contract_test|dashboard_test)$'
status=0
(cd "$build" && ctest --output-on-failure -j "${JOBWIRE_TEST_JOBS:-2}" --timeout 600 \
  -E "$skip" ${CTEST_ARGS:-}) || status=$?

reports=("$logs"/*)
if [ ! -e "${reports[0]}" ]; then
  echo "no sanitizer reports"
elif [ "$kind" = tsan ]; then
  "$root/scripts/tsan_reports.py" "${reports[@]}" || status=1
else
  echo "sanitizer reports in $logs:"
  for r in "${reports[@]}"; do
    echo "== $r"
    grep -E "^(SUMMARY|==[0-9]+==ERROR)|runtime error" "$r" | sort | uniq -c | head -20
  done
  status=1
fi
exit $status
