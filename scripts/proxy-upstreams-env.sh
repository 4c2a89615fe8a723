#!/usr/bin/env bash
# Installs (once, from its lock) the TypeScript MCP SDK that the proxy's tests
# run their Node upstream and client with (proxy/tests/upstreams/node), and
# prints that directory. The Python upstream and client use scripts/py-env.sh's venv.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=proxy/tests/upstreams/node
stamp="$dir/node_modules/.package-lock.json"
if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
  npm ci --silent --no-audit --no-fund --prefix "$dir" >&2
fi
echo "$(cd "$dir" && pwd)"
