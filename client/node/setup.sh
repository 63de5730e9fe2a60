#!/usr/bin/env bash
# Install the Node client's npm dependencies from package-lock.json.
# Idempotent: skipped when node_modules is newer than the lock file.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null && command -v npm >/dev/null || { echo "client/node/setup.sh: node and npm are required" >&2; exit 1; }
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ "$stamp" -nt package.json ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
touch "$stamp"
