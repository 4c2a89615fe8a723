#!/usr/bin/env bash
# CI job "services": the integration tests against real servers the scripts
# start on loopback and stop by PID (moto, OpenBao, Azurite, Redis, fake-gcs,
# the Python SDK, the MCP conformance suite), the examples against them, and
# the fleet soak.
source "$(dirname "$0")/lib.sh"
step "the test tools in place (scripts/tools-prefetch.sh)"
tools_env
step "the examples the tests run as processes (cargo build --workspace --examples)"
cargo build --workspace --examples
step "integration tests (cargo test --workspace --test '*')"
cargo test --workspace --test '*'
step "the Python SDK's vectors and the live interop under each AES-256-GCM backend (same bytes whichever seals)"
for aead in aws-lc ring split; do
  STATESEAL_AEAD=$aead cargo test --quiet --workspace --test core -- vectors interop
done
step "examples against real services"
cargo build --quiet --workspace --example vault --example aws_kms --example gcp_kms
target/debug/examples/vault --dev
target/debug/examples/aws_kms --dev
target/debug/examples/gcp_kms --dev
step "fleet soak, short form (OpenBao + 3 server processes: rotations, kill, outage, store faults, secret id rotation)"
scripts/soak.sh --duration 60
step "MCP conformance suite (input-required-result-*)"
scripts/conformance.sh
