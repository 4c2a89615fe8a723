#!/usr/bin/env bash
# The Node package `stateseal` as its users install it: bindings/node/test is a
# project depending on it (`file:..`, so npm links the package and runs its
# install script, which builds the native module with cargo) and on the real
# TypeScript MCP SDK from npm (versions pinned by its package-lock.json). Then
# the package's tests (node --test; the single-use ones on a real Redis), a type check of the documented TypeScript
# server, and the mint+verify benchmark against the SDK's own codec (reported).
set -euo pipefail
cd "$(dirname "$0")/.."
project=bindings/node/test
cargo build --quiet -p stateseal-cli --bin stateseal
# `npm ci` installs exactly the lock file's versions; the install script's cargo build is incremental.
(cd "$project" && npm ci --no-audit --no-fund --foreground-scripts --loglevel=error) >&2
(cd "$project" && npx --no-install tsc -p tsconfig.json) >&2
# The single-use tests start their own Redis servers (Debian's, unpacked once).
STATESEAL_REDIS_SERVER="$(scripts/redis-env.sh)" \
STATESEAL_CLI="$PWD/target/debug/stateseal" node --test --test-concurrency=1 --test-reporter=spec "$project"/*.test.mjs >&2
node "$project/bench.mjs" >&2
