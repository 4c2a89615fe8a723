#!/usr/bin/env bash
# Runs every `input-required-result-*` server scenario of the MCP conformance
# suite against examples/conformance_server.rs. Installs Node 22 and the suite
# into .tools/ (project-local), starts the server on a free loopback port and
# stops it by PID. Exits non-zero on any failed scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
tools="$PWD/.tools"
suite_version="0.2.0-alpha.12"
mkdir -p "$tools"
if [ ! -x "$tools/node22/node_modules/node/bin/node" ]; then
  npm install --silent --no-audit --no-fund --prefix "$tools/node22" node@22 >&2
fi
node22="$tools/node22/node_modules/node/bin/node"
"$node22" --version | grep -q '^v22\.' || { echo "node 22 did not install" >&2; exit 1; }
suite="$tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -f "$suite" ]; then
  npm install --silent --no-audit --no-fund --prefix "$tools/conformance" "@modelcontextprotocol/conformance@$suite_version" >&2
fi
cargo build -q --workspace --example conformance_server
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
target/debug/examples/conformance_server --addr "127.0.0.1:$port" --failure-mode reject 2>"$tools/conformance-server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
scenarios=$("$node22" "$suite" list --server 2>/dev/null | grep -oE 'input-required-result-[a-z0-9-]+' | sort -u)
[ -n "$scenarios" ] || { echo "the suite listed no input-required-result scenarios" >&2; exit 1; }
passed=0; failed=0
for s in $scenarios; do
  if out=$("$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" --scenario "$s" 2>&1); then
    echo "PASS $s"; passed=$((passed + 1))
  else
    echo "FAIL $s"; echo "$out" | tail -30; failed=$((failed + 1))
  fi
done
echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
