#!/usr/bin/env bash
# The C++ client as an installed CMake package, checked the way a user gets it:
#  1. configures the client alone (-DJOBWIRE_CLIENT_ONLY=ON) and checks that
#     the configure never looked for the broker's dependencies (hiredis,
#     libevent, jemalloc, prometheus-cpp) or GTest;
#  2. builds it and installs it into a temporary prefix, and checks the
#     installed tree (headers, jobwireConfig.cmake, no path into this tree);
#  3. builds package_test/ (find_package(jobwire 0.1), jobwire::client) with
#     CMAKE_PREFIX_PATH=<prefix> only, and checks it found that prefix;
#  4. runs it against a real redis-server (from PATH) and the real broker
#     ($JOBWIRE_BROKER_BIN, else <repo>/build/broker/jobwire-broker), both on
#     free loopback ports: it enqueues a job, a Worker processes it, and the
#     job must be stored COMPLETED with the result "42".
# First it checks that README.md shows package_test/main.cc unchanged.
# Everything lives in one temporary directory, removed on exit.
#   JOBWIRE_PACKAGE_TEST_JOBS  parallel compile jobs (default 2)
#   JOBWIRE_PACKAGE_TEST_KEEP  set: keep the temporary directory (printed)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BROKER="${JOBWIRE_BROKER_BIN:-$REPO/build/broker/jobwire-broker}"
JOBS="${JOBWIRE_PACKAGE_TEST_JOBS:-2}"

fail() { echo "package_test: FAIL: $*" >&2; exit 1; }
step() { echo "package_test: $*"; }

[ -x "$BROKER" ] || fail "broker binary not found at $BROKER (build jobwire-broker first)"
command -v redis-server >/dev/null || fail "redis-server not on PATH"

# The README's program is package_test/main.cc (its only ```cpp block).
diff <(awk '/^```cpp$/ {on = 1; next} /^```$/ {on = 0} on' "$HERE/README.md") \
     "$HERE/package_test/main.cc" >&2 \
  || fail "README.md's program differs from package_test/main.cc"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/jobwire-cpp-package.XXXXXX")"
PIDS=()
cleanup() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do  # the broker before its Redis
    kill "${PIDS[i]}" 2>/dev/null || true
    wait "${PIDS[i]}" 2>/dev/null || true
  done
  if [ -n "${JOBWIRE_PACKAGE_TEST_KEEP:-}" ]; then
    echo "package_test: kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that EXIT's cleanup runs on a signal too

BUILD="$WORK/build"
PREFIX="$WORK/prefix"
CONSUMER="$WORK/consumer"
GENERATOR=()
if command -v ninja >/dev/null; then GENERATOR=(-G Ninja); fi

# 1. Configure the client alone.
step "configuring the client alone (JOBWIRE_CLIENT_ONLY=ON)"
cmake -S "$REPO" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DJOBWIRE_CLIENT_ONLY=ON -DCMAKE_INSTALL_PREFIX="$PREFIX" >"$WORK/configure.log" 2>&1 \
  || { cat "$WORK/configure.log" >&2; fail "client-only configure"; }
# What the full build's configure leaves in its cache (see the root
# CMakeLists.txt): none of it may appear here.
not_here='^(HIREDIS|LIBEVENT|LIBEVENT_TLS|JEMALLOC)_FOUND[:=]|^(prometheus-cpp|GTest)_DIR[:=]'
if found="$(grep -E "$not_here" "$BUILD/CMakeCache.txt")"; then
  fail "the client-only configure looked for broker or test dependencies:"$'\n'"$found"
fi
for dir in broker cli lua tests bench; do
  [ ! -e "$BUILD/$dir" ] || fail "the client-only build configured $dir/"
done

# 2. Build and install.
step "building the client (-j$JOBS)"
start=$SECONDS
cmake --build "$BUILD" -j "$JOBS" >"$WORK/build.log" 2>&1 \
  || { tail -50 "$WORK/build.log" >&2; fail "client-only build"; }
step "built in $((SECONDS - start)) s"
if grep -n 'warning:' "$WORK/build.log" >&2; then fail "the client-only build has warnings"; fi
cmake --install "$BUILD" >"$WORK/install.log" 2>&1 \
  || { cat "$WORK/install.log" >&2; fail "install"; }
CONFIG="$(find "$PREFIX" -path '*/cmake/jobwire/jobwireConfig.cmake' -print -quit)"
[ -n "$CONFIG" ] || fail "no cmake/jobwire/jobwireConfig.cmake under $PREFIX"
for f in include/jobwire/client.h include/jobwire/worker.h include/jobwire/job.h include/jobwire/run_signal.h \
         include/jobwire/trace_context.h \
         include/jobwire/v1/broker.pb.h include/jobwire/v1/broker.grpc.pb.h; do
  [ -f "$PREFIX/$f" ] || fail "not installed: $f"
done
if leaked="$(grep -rlF -e "$REPO" -e "$BUILD" "$PREFIX/include" "$(dirname "$CONFIG")")"; then
  fail "installed files refer to the source or build tree:"$'\n'"$leaked"
fi

# 3. A consumer project that knows only the prefix.
step "building package_test/ against $PREFIX"
cmake -S "$HERE/package_test" -B "$CONSUMER" "${GENERATOR[@]}" \
  -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/consumer-configure.log" 2>&1 \
  || { cat "$WORK/consumer-configure.log" >&2; fail "consumer configure"; }
found_dir="$(sed -n 's/^jobwire_DIR:PATH=//p' "$CONSUMER/CMakeCache.txt")"
[ "$found_dir" = "$(dirname "$CONFIG")" ] \
  || fail "find_package(jobwire) found '$found_dir', not the installed $(dirname "$CONFIG")"
cmake --build "$CONSUMER" -j "$JOBS" >"$WORK/consumer-build.log" 2>&1 \
  || { cat "$WORK/consumer-build.log" >&2; fail "consumer build"; }
[ -x "$CONSUMER/consumer" ] || fail "no consumer binary"

# 4. Run it against redis-server and the broker.
. "$HERE/../../scripts/start_on_free_port.sh"
start_redis() {
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$WORK" >"$WORK/redis.log" 2>&1 &
}
start_on_free_port redis-server "$WORK/redis.log" start_redis
REDIS_PORT="$LISTEN_PORT"
PIDS+=("$LISTEN_PID")
start_broker() {  # no metrics: 9464 may be taken
  "$BROKER" --redis_url "redis://127.0.0.1:$REDIS_PORT" --listen "127.0.0.1:$1" \
    --metrics_listen= >"$WORK/broker.log" 2>&1 &
}
start_on_free_port jobwire-broker "$WORK/broker.log" start_broker
BROKER_PORT="$LISTEN_PORT"
PIDS+=("$LISTEN_PID")

step "running the consumer against 127.0.0.1:$BROKER_PORT"
status=0
timeout 60 "$CONSUMER/consumer" "127.0.0.1:$BROKER_PORT" >"$WORK/consumer.out" 2>&1 || status=$?
cat "$WORK/consumer.out"
[ "$status" -eq 0 ] || { tail -20 "$WORK/broker.log" >&2; fail "the consumer exited with $status"; }
grep -Eq '^job [^ ]+ JOB_STATE_COMPLETED result 42$' "$WORK/consumer.out" \
  || fail "the consumer did not print a JOB_STATE_COMPLETED job with result 42"
step "PASS"
