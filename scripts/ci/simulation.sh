#!/usr/bin/env bash
# CI job "simulation": the fleet simulation at 10,000 instances, then checked
# against a real fleet on moto's S3 and KMS (quiet, and traffic with restarts).
source "$(dirname "$0")/lib.sh"
step "the test tools in place (scripts/tools-prefetch.sh)"
tools_env
step "fleet simulation: 10,000 instances for a simulated week, in deploy/'s topology and with writing servers (release build; sim/tests/fleet.rs)"
cargo test --release -p stateseal-sim --test fleet ten_thousand -- --nocapture
step "the fleet simulation against a real fleet on moto's S3 and KMS, then the same scenario simulated: quiet (24 servers) and, alongside, traffic with rolling restarts (12 servers)"
scripts/build-cli.sh --bin calibrate
background target/calibrate-traffic.log scripts/calibrate-sim.sh --scenario traffic
traffic=$started
scripts/calibrate-sim.sh
join "$traffic" target/calibrate-traffic.log
cat target/calibrate-traffic.log
