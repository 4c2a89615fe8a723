#!/usr/bin/env bash
# Runs every `input-required-result-*` server scenario of the MCP conformance
# suite against examples/conformance_server.rs behind the stateseal boundary,
# and again against `stateseal proxy` in front of the same fixtures served
# with no sealing of their own (--no-sealing), whose control run alone must
# fail input-required-result-tampered-state; and `http-header-validation`
# (SEP-2243) against the proxy. Installs Node 22 and the suite
# into .tools/ (project-local), starts every server on a free loopback port
# and stops each by PID. Exits non-zero on any failed scenario or a control
# that passes.
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
cargo build -q -p stateseal-cli
scratch=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}
# serve NAME ARGS...: a conformance_server on a free port; its port in $port.
serve() {
  local name="$1"
  shift
  port=$(free_port)
  target/debug/examples/conformance_server --addr "127.0.0.1:$port" "$@" 2>"$tools/conformance-$name.log" &
  pids+=($!)
  wait_port "$port"
}
scenarios=$("$node22" "$suite" list --server 2>/dev/null | grep -oE 'input-required-result-[a-z0-9-]+' | sort -u)
[ -n "$scenarios" ] || { echo "the suite listed no input-required-result scenarios" >&2; exit 1; }
# run_all LABEL URL: every scenario against URL; the count of failures in $failed.
run_all() {
  local label="$1" url="$2" passed=0 s out
  failed=0
  for s in $scenarios; do
    if out=$("$node22" "$suite" server --url "$url" --scenario "$s" 2>&1); then
      echo "PASS $label $s"; passed=$((passed + 1))
    else
      echo "FAIL $label $s"; echo "$out" | tail -30; failed=$((failed + 1))
    fi
  done
  echo "conformance ($label): $passed passed, $failed failed"
}

# 1. The rmcp server behind the stateseal boundary.
serve sealed --failure-mode reject
run_all sealed "http://127.0.0.1:$port/mcp"
sealed_failed=$failed

# 2. The control: the same fixtures with no sealing must fail tampered-state.
serve plain --no-sealing
plain_port=$port
if "$node22" "$suite" server --url "http://127.0.0.1:$plain_port/mcp" --scenario input-required-result-tampered-state >"$tools/conformance-control.log" 2>&1; then
  echo "CONTROL BROKEN: the server with no sealing passed input-required-result-tampered-state" >&2
  control_failed=1
else
  echo "control: the server with no sealing fails input-required-result-tampered-state, as it must"
  control_failed=0
fi

# 3. stateseal proxy in front of that server (a keyset on this machine).
target/debug/stateseal init --kek "local://$scratch/kek.bin" --store "file://$scratch/keyset.json" 2>/dev/null \
  | grep -E '^keyset_(id|keks) = ' >"$scratch/pins.toml"
printf 'store = "file://%s/keyset.json"\naudience = "stateseal-conformance"\n' "$scratch" | cat - "$scratch/pins.toml" >"$scratch/proxy.toml"
# Emptied first: the URL is read from this log, and a run before this one left its own there.
: >"$tools/conformance-proxy.log"
target/debug/stateseal proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$plain_port/mcp" --config "$scratch/proxy.toml" 2>"$tools/conformance-proxy.log" &
pids+=($!)
proxy_url=""
for _ in $(seq 200); do
  proxy_url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/mcp' "$tools/conformance-proxy.log" | head -1 || true)
  [ -n "$proxy_url" ] && break
  sleep 0.1
done
[ -n "$proxy_url" ] || { echo "stateseal proxy did not start:" >&2; cat "$tools/conformance-proxy.log" >&2; exit 1; }
run_all proxy "$proxy_url"
proxy_failed=$failed
# The proxy refuses headers that do not mirror the body itself, before the
# server (which also checks them) is called: the suite sees the proxy's answers.
if out=$("$node22" "$suite" server --url "$proxy_url" --scenario http-header-validation 2>&1); then
  echo "PASS proxy http-header-validation"
else
  echo "FAIL proxy http-header-validation"; echo "$out" | tail -30; proxy_failed=$((proxy_failed + 1))
fi
# Its five refusals are the proxy's own (logged), not the server's passed on.
refusals=$(grep -c "headers do not mirror its body" "$tools/conformance-proxy.log" || true)
echo "proxy: $refusals requests refused for headers that do not mirror the body"
if [ "$refusals" -lt 5 ]; then
  echo "FAIL proxy http-header-validation: the refusals were not the proxy's" >&2
  proxy_failed=$((proxy_failed + 1))
fi

[ "$sealed_failed" -eq 0 ] && [ "$control_failed" -eq 0 ] && [ "$proxy_failed" -eq 0 ]
