#!/usr/bin/env bash
# Installs every test tool the *-env.sh scripts provide, all at once, and exits
# when all are in place. scripts/test.sh starts it in the background while the
# lints compile: pip, npm, apt and curl spend most of their time on one core or
# waiting on the network, so in sequence in front of the lints they cost 2.5
# minutes of a cold run. Each script installs once (a later call finds its tool
# and only prints its path), so the test steps' own calls cost nothing after it.
#
# Each tool's output goes to target/tools-prefetch/NAME.log. Exits 1 naming the
# tools that failed, after printing their logs.
set -euo pipefail
cd "$(dirname "$0")/.."
logs="target/tools-prefetch"
rm -rf "$logs"
mkdir -p "$logs"
declare -A pids=()
start() {
  local name="$1"
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
}
start python-sdk scripts/py-env.sh
start services scripts/svc-env.sh
# Both use apt-get download: one after the other.
start debian sh -c 'scripts/redis-env.sh && scripts/prometheus-env.sh'
start azurite scripts/azurite-env.sh
start packaging scripts/pkg-env.sh
start glibc scripts/glibc-env.sh
start proxy-upstreams scripts/proxy-upstreams-env.sh
failed=()
for name in "${!pids[@]}"; do
  wait "${pids[$name]}" || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    echo "== tools-prefetch: $name failed; its output:" >&2
    cat "$logs/$name.log" >&2
  done
  echo "tools-prefetch: could not install: ${failed[*]} (logs in $logs/)" >&2
  exit 1
fi
