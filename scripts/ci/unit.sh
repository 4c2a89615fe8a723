#!/usr/bin/env bash
# CI job "unit": every crate's unit tests and doc tests (no service needed).
source "$(dirname "$0")/lib.sh"
step "unit tests (cargo test --workspace --lib --bins)"
cargo test --workspace --lib --bins
step "doc tests (cargo test --workspace --doc)"
cargo test --workspace --doc
