# Sourced by the client package tests (client/*/package_test.sh): starts a
# server on a free loopback port, surviving the race between picking a port
# and binding it.
#
# start_on_free_port NAME LOG START_FN
#   Calls `START_FN PORT`, which must start NAME in the background (so that
#   $! is its pid) listening on 127.0.0.1:PORT with its output in LOG, then
#   waits until the port accepts a connection. ctest runs tests side by side,
#   so another test can take the port between the pick and the bind: a server
#   that exits before it listens is started again on another port, up to 5
#   tries. On success sets LISTEN_PORT and LISTEN_PID. Otherwise prints LOG
#   and calls the caller's `fail` (which must exit).
#
# Ports are picked below the kernel's ephemeral range, so that no outgoing
# connection and no port-0 listener of another test holds them.

# free_port: a port below the ephemeral range that accepts no connection now.
free_port() {
  local low=32768 port
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [ "$low" -gt 11000 ] || low=32768
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}

start_on_free_port() {
  local name="$1" log="$2" start_fn="$3" try port pid i
  for try in 1 2 3 4 5; do
    port="$(free_port)"
    "$start_fn" "$port"
    pid=$!
    for i in $(seq 200); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        LISTEN_PORT="$port"
        LISTEN_PID="$pid"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then  # alive but not listening after 20 s
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      cat "$log" >&2 || true
      fail "$name: nothing listening on 127.0.0.1:$port after 20 s"
    fi
    wait "$pid" 2>/dev/null || true
    echo "start_on_free_port: $name exited before listening on 127.0.0.1:$port (try $try of 5)" >&2
  done
  cat "$log" >&2 || true
  fail "$name exited before listening, on 5 different ports"
}
