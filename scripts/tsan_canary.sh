#!/usr/bin/env bash
# Checks that the ThreadSanitizer run can fail: runs the deliberately racy
# test of broker/base/tsan_absl_sync_test.cc on its own, with its own log
# directory, and requires scripts/tsan_reports.py to find the race and count
# it as jobwire's (exit 1, naming the test's source file).
#
#   scripts/tsan_canary.sh <path to tsan_absl_sync_test>
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="$1"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
TSAN_OPTIONS="log_path=$logs/tsan:ignore_noninstrumented_modules=1:halt_on_error=0:exitcode=0" \
  "$binary" --gtest_also_run_disabled_tests \
  --gtest_filter='TsanAbslSyncTest.DISABLED_UnsynchronizedWriteIsReported' >/dev/null
set +e
out="$(python3 "$root/scripts/tsan_reports.py" "$logs"/*)"
status=$?
set -e
echo "$out"
if [ "$status" -ne 1 ] || ! grep -q "OURS in .*tsan_absl_sync_test.cc" <<<"$out"; then
  echo "tsan_canary: the deliberate race was not reported as jobwire's" >&2
  exit 1
fi
echo "tsan_canary: the deliberate race was reported"
