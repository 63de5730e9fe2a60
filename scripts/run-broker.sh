#!/usr/bin/env bash
# Sets up, builds and runs jobwire-broker. With no JOBWIRE_REDIS_URL it starts
# its own redis-server with AOF persistence in ./jobwire-data.
# Sets up and builds only what the broker needs (the CLI is built with it);
# scripts/test.sh sets up and builds everything else.
# Arguments are passed to the broker (see jobwire-broker --help).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" --broker
JOBWIRE_BROKER_ONLY=1 "$root/scripts/build.sh" >/dev/null
exec "${JOBWIRE_BUILD_DIR:-$root/build}/broker/jobwire-broker" "$@"
