#!/usr/bin/env bash
# Publishes the Node packages from the release workflow's artifacts
# (ARTIFACTS/node-PLATFORM/stateseal.PLATFORM.node): every platform package
# first, then the main package whose optional dependencies name them, so that
# no user ever installs a main package whose binaries are not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."
artifacts="${1:?usage: publish-node.sh ARTIFACTS}"
stage="$(mktemp -d)"
specs=()
for dir in "$artifacts"/node-*/; do
  platform="$(basename "$dir")"
  specs+=("${platform#node-}=$(echo "$dir"*.node)")
done
node bindings/node/scripts/stage.cjs "$stage" "${specs[@]}"
for pkg in "$stage"/stateseal-*/; do
  (cd "$pkg" && npm publish --access public)
done
(cd "$stage/stateseal" && npm publish --access public)
