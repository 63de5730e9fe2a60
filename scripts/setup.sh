#!/usr/bin/env bash
# Installs every dependency jobwire needs to build and test, on a fresh Debian 12 machine.
# Idempotent: packages already present are left as they are.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev libhiredis-dev libevent-dev libssl-dev nlohmann-json3-dev libcli11-dev
  prometheus-cpp-dev libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  redis-server redis-tools
)

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

# The clients' own ecosystems: the project venv (.venv) with the Python client
# and pytest, the Node.js client's npm packages, the Go protoc plugins and
# modules. Go, Python and Node.js themselves come with the machine.
root="$(cd "$(dirname "$0")/.." && pwd)"
for lang in python node go; do
  "$root/client/$lang/setup.sh"
done
# helm and the manifest validator's Go modules (deploy/test.sh).
"$root/deploy/setup.sh"
# The operations tests' tools (grpc-health-probe).
"$root/tests/ops/setup.sh"
