#!/usr/bin/env bash
# The fleet simulation checked against a real fleet: N http_server processes
# on one keyset in S3 under AWS KMS (moto on loopback), then the same
# scenario simulated; exits non-zero when the counts disagree.
# `scripts/calibrate-sim.sh` is CI's form (24 instances, 180 s);
# `scripts/calibrate-sim.sh --instances 40 --duration 600` a longer one.
set -euo pipefail
cd "$(dirname "$0")/.."
STATESEAL_SVC_PYTHON="${STATESEAL_SVC_PYTHON:-$(scripts/svc-env.sh)/python}"
export STATESEAL_SVC_PYTHON
cargo build --quiet -p stateseal-cli --bin stateseal
cargo build --quiet --example http_server
cargo build --quiet -p stateseal-sim --example calibrate
exec target/debug/examples/calibrate --cli target/debug/stateseal --server target/debug/examples/http_server "$@"
