#!/usr/bin/env bash
# CI job "semver-check": the published crates' public API against the baseline
# revision (scripts/semver-check.sh, cargo-semver-checks). Needs Rust and the
# clone's history.
source "$(dirname "$0")/lib.sh"
step "cargo-semver-checks against the baseline (the last commit that changed api/semver-baseline)"
scripts/semver-check.sh
step "the check can fail: a public function removed against the baseline is refused (scripts/semver-check.sh --self-test)"
scripts/semver-check.sh --self-test
