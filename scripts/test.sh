#!/usr/bin/env bash
# The test command: format, lints, every test (including the live Python SDK
# interop), and the docs. What CI runs; what a newcomer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# The real Python MCP SDK (mcp==2.3.0) in a project-local venv, for the interop tests.
STATESEAL_PYTHON="$(scripts/py-env.sh)"
export STATESEAL_PYTHON
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace
echo "== MCP conformance suite (input-required-result-*)"
scripts/conformance.sh
echo "== cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
echo "== all checks passed"
