#!/usr/bin/env bash
# Runs bench/grpc_threads_probe.cc in its six server shapes (callback API,
# completion queue, or completion queue beside a service on the callback
# API; inline or with a hop), each against one paced client,
# and prints one JSON line per shape (server figures, then the client's).
#   bench/grpc_threads_probe.sh [rate] [calls] [rounds]   (1000 4000 2)
# Fails when a server or client fails or prints no figures.
set -euo pipefail
rate="${1:-1000}"
calls="${2:-4000}"
rounds="${3:-2}"
warmup=$(( calls / 8 ))
probe="${JOBWIRE_BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}/bench/grpc_threads_probe"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
for round in $(seq "$rounds"); do
  for api in callback async async+mixed; do
    for hop in "" "--hop"; do
      mixed=""
      [ "$api" = async+mixed ] && mixed="--mixed"
      port="$(free_port)"
      "$probe" --role=server --api="${api%+mixed}" $mixed $hop --port="$port" --warmup="$warmup" \
        --calls="$calls" > "$out" &
      server=$!
      for _ in $(seq 100); do grep -q ready "$out" && break; sleep 0.05; done
      client="$("$probe" --role=client --port="$port" --warmup="$warmup" --calls="$calls" \
        --rate="$rate")"
      for _ in $(seq 100); do grep -q switches_per_call "$out" && break; sleep 0.05; done
      kill "$server"
      wait "$server" || true
      figures="$(grep switches_per_call "$out")" || { echo "no figures from $api $hop" >&2; exit 1; }
      echo "{\"round\": $round, \"rate\": $rate, \"server\": $figures, \"client\": $client}"
    done
  done
done
