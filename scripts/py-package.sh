#!/usr/bin/env bash
# Installs the Python package `stateseal` as users get it, the wheel in dist/
# (scripts/package.sh, run first: it also builds the sdist from itself, which
# is what `pip install ./bindings/python` does), into a project venv that has
# the real MCP SDK (mcp==2.3.0, the newest supported; then again beside
# mcp==2.0.0, the oldest, and checks mcp 1.27.0 is refused at import), then runs its tests with
# pytest: the SDK's codec contract, fork safety, KMS faults on OpenBao, the
# mixed Rust/Python fleet, and single-use states on a real Redis. Prints the
# venv's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_PYPKG_ENV:-target/pypkg-env}"
wheel="$(python3 scripts/artifacts.py wheel --dist "${STATESEAL_DIST:-dist}")"
# The CLI and the Rust example server the tests run beside the Python server.
scripts/build-cli.sh
SVC_BIN="$(scripts/svc-env.sh)"
# tests VENV MCP: the wheel installed into VENV beside the MCP SDK release MCP, then pytest.
tests() {
  scripts/venv.sh "$1" "mcp==$2" "pytest==8.3.5"
  "$1/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
    --force-reinstall --no-deps "$wheel" >&2
  STATESEAL_REDIS_SERVER="$(scripts/redis-env.sh)" \
  STATESEAL_CLI="$PWD/target/debug/stateseal" \
  STATESEAL_HTTP_SERVER="$PWD/target/debug/examples/http_server" \
  STATESEAL_BAO="${STATESEAL_BAO:-$SVC_BIN/bao}" \
    "$1/bin/python" -m pytest bindings/python/tests -q -s -p no:cacheprovider "${pytest_args[@]}" >&2
}
pytest_args=("$@")
# The newest MCP SDK the package supports, then the oldest (pyproject.toml's `mcp` extra).
tests "$venv" 2.3.0
tests "${venv}-mcp-oldest" 2.0.0
# A release outside the range (1.27.0, a 1.x release) is refused at import.
outside="${venv}-mcp-outside"
scripts/venv.sh "$outside" "mcp==1.27.0"
"$outside/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
  --force-reinstall --no-deps "$wheel" >&2
if refused="$("$outside/bin/python" -c 'import stateseal' 2>&1)"; then
  echo "py-package.sh: import stateseal beside mcp 1.27.0 was not refused" >&2
  exit 1
fi
grep -q "supports the MCP Python SDK mcp>=2.0.0,<2.4, and mcp 1.27.0 is installed" <<<"$refused" || {
  echo "py-package.sh: import beside mcp 1.27.0 failed without the range's message: $refused" >&2
  exit 1
}
echo "$(cd "$venv/bin" && pwd)/python"
