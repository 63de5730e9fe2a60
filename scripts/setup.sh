#!/usr/bin/env bash
# Installs every dependency jobwire needs to build and test, on a fresh Debian 12 machine.
# Idempotent: packages already present are left as they are.
#   scripts/setup.sh           everything: the broker's build, the tests'
#                              tools and the four clients' ecosystems
#   scripts/setup.sh --broker  only what building and running the broker and
#                              the CLI needs (scripts/run-broker.sh)
set -euo pipefail

broker_only=0
case "${1:-}" in
  "") ;;
  --broker) broker_only=1 ;;
  *) echo "usage: scripts/setup.sh [--broker]" >&2; exit 2 ;;
esac

# The broker and CLI (deploy/Dockerfile's build stage installs the same C++
# packages), and redis-server for its embedded Redis.
packages=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev libhiredis-dev libmsgpack-dev libevent-dev libssl-dev nlohmann-json3-dev libcli11-dev
  prometheus-cpp-dev libjemalloc-dev
  golang-github-gogo-googleapis-dev
  redis-server tzdata
)
if [ "$broker_only" = 0 ]; then
  # The tests, benchmarks and sanitizer/fuzz builds.
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev redis-tools)
  # The dashboard's browser tests (Debian's chromium, driven by playwright-core, and
  # the fonts its screenshots need).
  packages+=(chromium fonts-liberation)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[ "$broker_only" = 0 ] || exit 0

# The clients' own ecosystems: the project venv (.venv) with the Python client
# and pytest, the Node.js client's npm packages, the Go protoc plugins and
# modules. Go, Python and Node.js themselves come with the machine.
root="$(cd "$(dirname "$0")/.." && pwd)"
for lang in python node go; do
  "$root/client/$lang/setup.sh"
done
# The web dashboard's npm packages (dashboard/setup.sh).
"$root/dashboard/setup.sh"
# helm and the manifest validator's Go modules (deploy/test.sh).
"$root/deploy/setup.sh"
# The operations tests' tools (grpc-health-probe).
"$root/tests/ops/setup.sh"
# buf, for the contract's lint, format and breaking checks (proto/check.sh).
"$root/proto/setup.sh"
