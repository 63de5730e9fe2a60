#!/usr/bin/env bash
# Builds the dashboard into dist/: tsc, and a copy of the contract
# (proto/jobwire/v1/*.proto) in dist/proto, which BrokerClient loads at start.
set -euo pipefail
cd "$(dirname "$0")"
[ -x node_modules/.bin/tsc ] || bash ./setup.sh
rm -rf dist
node_modules/.bin/tsc -p tsconfig.json
mkdir -p dist/proto/jobwire/v1
cp ../proto/jobwire/v1/admin.proto ../proto/jobwire/v1/broker.proto dist/proto/jobwire/v1/
echo "dashboard: built dist/"
