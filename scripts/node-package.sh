#!/usr/bin/env bash
# The Node package `stateseal` with the real TypeScript MCP SDK: bindings/node/test
# is a project depending on it (`file:..`, so npm links the package and runs its
# install script, which builds the native module from source with cargo) and on
# the SDK from npm (versions pinned by its package-lock.json). The from-source
# build proves the contributors' path (the install script runs cargo, finds the
# library it built, puts it in place, and it loads and seals); the tests and the
# benchmark then run on the binary users get, the one in dist/'s linux-x64-gnu
# package (scripts/package.sh, run first). Then the package's tests (node --test;
# the single-use ones on a real Redis), a type check of the documented TypeScript
# server, and the mint+verify benchmark against the SDK's own codec (reported).
set -euo pipefail
cd "$(dirname "$0")/.."
project=bindings/node/test
packaged="$(python3 scripts/artifacts.py node-binary --dist "${STATESEAL_DIST:-dist}")"
# The install script's cargo build (below) runs with the target and the zig environment
# package.sh built the packaged binary with, so it is the same build: cargo finds it done.
# (A debug build of the crate alone compiled 99 units the workspace's builds do not share,
# two minutes on two cores.)
zig_env="${CARGO_TARGET_DIR:-target}/zig-env.sh"
if [ ! -f "$zig_env" ]; then
  echo "node-package.sh: $zig_env is missing: run scripts/package.sh python node first" >&2
  exit 2
fi
scripts/build-cli.sh
# `npm ci` installs exactly the lock file's versions.
(
  # shellcheck source=/dev/null
  . "$zig_env"
  cd "$project" && CARGO_BUILD_TARGET=x86_64-unknown-linux-gnu npm ci --no-audit --no-fund --foreground-scripts --loglevel=error
) >&2
# The source build loads and seals.
(cd "$project" && node -e '
  const { KeysetCodec } = require("stateseal");
  const codec = KeysetCodec.fromKeys(["k".repeat(32)]);
  if (codec.unseal(codec.seal("sealed")).toString() !== "sealed") process.exit(1);
') >&2
# Then the packaged binary (its package's `main`) takes the source build's place
# (the loader takes `stateseal.node` first).
main="$(tar -xzOf "$packaged" package/package.json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).main')"
tar -xzOf "$packaged" "package/$main" > bindings/node/stateseal.node.tmp
mv bindings/node/stateseal.node.tmp bindings/node/stateseal.node
(cd "$project" && npx --no-install tsc -p tsconfig.json) >&2
# The single-use tests start their own Redis servers (Debian's, unpacked once).
STATESEAL_REDIS_SERVER="$(scripts/redis-env.sh)" \
STATESEAL_CLI="$PWD/target/debug/stateseal" node --test --test-concurrency=1 --test-reporter=spec "$project"/*.test.mjs >&2
# The oldest SDK the package supports (package.json's peerDependencies): the SDK
# rounds again, from a project pinned to @modelcontextprotocol/server 2.0.0 (its
# own lock file). The tests are copied in so that they load that project's SDK;
# stateseal is linked as above (its binary already in place, so no install script).
oldest="$project/oldest-sdk"
(cd "$oldest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
cp "$project/harness.mjs" "$project/sdk.test.mjs" "$oldest/"
STATESEAL_CLI="$PWD/target/debug/stateseal" node --test --test-concurrency=1 --test-reporter=spec "$oldest/sdk.test.mjs" >&2
rm -f "$oldest/harness.mjs" "$oldest/sdk.test.mjs"
# A release outside the range (a pre-release of 2.0.0) is refused when stateseal loads.
outside="${CARGO_TARGET_DIR:-target}/node-sdk-outside"
mkdir -p "$outside"
(cd "$outside" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error --no-save \
  "@modelcontextprotocol/server@2.0.0-beta.5") >&2
package="$PWD/bindings/node"
if refused="$(cd "$outside" && node -e "require('$package')" 2>&1)"; then
  echo "node-package.sh: loading stateseal beside @modelcontextprotocol/server 2.0.0-beta.5 was not refused" >&2
  exit 1
fi
grep -q "supports the TypeScript MCP SDK @modelcontextprotocol/server >=2.0.0 <2.5.0, and 2.0.0-beta.5 is installed" <<<"$refused" || {
  echo "node-package.sh: loading beside 2.0.0-beta.5 failed without the range's message: $refused" >&2
  exit 1
}
node "$project/bench.mjs" >&2
