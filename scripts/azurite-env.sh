#!/usr/bin/env bash
# Installs (once) Azurite, the Azure Storage emulator, from the npm registry
# into target/azurite-env (no root, nothing installed system-wide; the
# version is pinned and npm checks each tarball against the registry's
# integrity hash) and prints the path of the `azurite-blob` launcher. The
# tests start one blob service per test on a loopback port and stop it by
# PID, e.g.:
#   azurite-blob --blobHost 127.0.0.1 --blobPort PORT --inMemoryPersistence \
#     --silent --disableTelemetry
# (--inMemoryPersistence keeps database files out of the working directory,
# --disableTelemetry keeps it from trying to reach Azure Monitor.)
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="${STATESEAL_AZURITE_ENV:-target/azurite-env}"
package="azurite@3.35.0"
stamp="$env_dir/.installed"
launcher="$env_dir/node_modules/.bin/azurite-blob"
if [ ! -x "$launcher" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$package" ]; then
  command -v npm >/dev/null || { echo "azurite-env: npm is needed (apt-get install npm)" >&2; exit 1; }
  rm -rf "$env_dir"
  mkdir -p "$env_dir"
  # 3.35.0: the newest release whose declared engines include Debian's node 20.
  npm install --prefix "$env_dir" --no-audit --no-fund "$package" >&2
  "$launcher" --version >&2
  echo "$package" > "$stamp"
fi
echo "$(cd "$(dirname "$launcher")" && pwd)/azurite-blob"
