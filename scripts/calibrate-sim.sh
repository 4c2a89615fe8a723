#!/usr/bin/env bash
# The fleet simulation checked against a real fleet: N http_server processes
# on one keyset in S3 under AWS KMS (moto on loopback), then the same
# scenario simulated; exits non-zero when the counts disagree.
# CI runs `scripts/calibrate-sim.sh` (quiet: 24 instances, 180 s) and
# `scripts/calibrate-sim.sh --scenario traffic` (12 instances, conversations
# and rolling restarts); `--instances 40 --duration 600` is a longer run.
set -euo pipefail
cd "$(dirname "$0")/.."
STATESEAL_SVC_PYTHON="${STATESEAL_SVC_PYTHON:-$(scripts/svc-env.sh)/python}"
export STATESEAL_SVC_PYTHON
scripts/build-cli.sh --bin calibrate
exec target/debug/calibrate --cli target/debug/stateseal --server target/debug/examples/http_server "$@"
