#!/usr/bin/env bash
# Installs the dashboard's npm packages from package-lock.json and Debian's
# chromium and fonts-liberation (the browser of its tests and the fonts of its
# screenshots; never a browser download).
# Idempotent: npm is skipped when node_modules is newer than the lock file.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null && command -v npm >/dev/null || { echo "dashboard/setup.sh: node and npm are required" >&2; exit 1; }
if [ ! -x /usr/bin/chromium ] || ! dpkg-query -W -f='${Status}' fonts-liberation 2>/dev/null | grep -q "install ok installed"; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends chromium fonts-liberation
fi
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ "$stamp" -nt package.json ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
touch "$stamp"
