#!/usr/bin/env bash
# The CLI (target/<profile>/stateseal) and the examples a script runs beside it, built as
# `cargo test --workspace` builds them. With an example in the build, cargo resolves the
# workspace's features with the dev-dependencies' on (the test-only `internals`, tokio's
# `test-util`), as the test suite does; `--bin stateseal` alone resolves them without, and
# after the tests compiled 79 units again, ten of our crates among them (about 2 minutes
# on two cores). The http_server example is always in: most scripts run it, and it keeps a
# build that names no other example in the tests' feature set.
# Usage: scripts/build-cli.sh [--release] [cargo build arguments: --example X, --bin Y]
set -euo pipefail
cd "$(dirname "$0")/.."
# scripts/test.sh builds them once before the crates' dry run, which holds cargo's lock on
# target/debug while it builds, and says so: then the scripts it runs beside it build nothing.
if [ -n "${STATESEAL_CLI_BUILT:-}" ]; then exit 0; fi
cargo build --quiet --workspace --bin stateseal --example http_server "$@"
