#!/usr/bin/env bash
# The fleet soak: OpenBao + 3 http_server processes + load, through rotations,
# a kill/restart and a Vault outage, watched by a real Prometheus with the alert rules. `scripts/soak.sh --duration 60` is CI's
# short form; `scripts/soak.sh --release --duration 600 --json` the long one.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
dir=debug
if [ "${1:-}" = "--release" ]; then
  profile=(--release)
  dir=release
  shift
fi
STATESEAL_BAO="${STATESEAL_BAO:-$(scripts/svc-env.sh)/bao}"
STATESEAL_PROMETHEUS="${STATESEAL_PROMETHEUS:-$(scripts/prometheus-env.sh)/prometheus}"
export STATESEAL_BAO STATESEAL_PROMETHEUS
scripts/build-cli.sh "${profile[@]}" --example soak
exec "target/$dir/examples/soak" --cli "target/$dir/stateseal" --server "target/$dir/examples/http_server" "$@"
