#!/usr/bin/env bash
# Installs the Python package `stateseal` as users get it, the wheel in dist/
# (scripts/package.sh, run first: it also builds the sdist from itself, which
# is what `pip install ./bindings/python` does), into a project venv that has
# the real MCP SDK (mcp==2.3.0), then runs its tests with
# pytest: the SDK's codec contract, fork safety, KMS faults on OpenBao, the
# mixed Rust/Python fleet, and single-use states on a real Redis. Prints the
# venv's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_PYPKG_ENV:-target/pypkg-env}"
wheel="$(python3 scripts/artifacts.py wheel --dist "${STATESEAL_DIST:-dist}")"
packages=("mcp==2.3.0" "pytest==8.3.5")
scripts/venv.sh "$venv" "${packages[@]}"
# The CLI and the Rust example server the tests run beside the Python server.
scripts/build-cli.sh
"$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
  --force-reinstall --no-deps "$wheel" >&2
SVC_BIN="$(scripts/svc-env.sh)"
STATESEAL_REDIS_SERVER="$(scripts/redis-env.sh)" \
STATESEAL_CLI="$PWD/target/debug/stateseal" \
STATESEAL_HTTP_SERVER="$PWD/target/debug/examples/http_server" \
STATESEAL_BAO="${STATESEAL_BAO:-$SVC_BIN/bao}" \
  "$venv/bin/python" -m pytest bindings/python/tests -q -s -p no:cacheprovider "$@" >&2
echo "$(cd "$venv/bin" && pwd)/python"
