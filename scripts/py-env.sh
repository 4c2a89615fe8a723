#!/usr/bin/env bash
# Creates (once) the project's Python venv with the real MCP Python SDK and
# prints the path of its interpreter. Used by the interop tests and benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_PYENV:-target/pyenv}"
if ! "$venv/bin/python" -c 'import mcp.server.request_state' >/dev/null 2>&1; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'mcp==2.3.0' >&2
fi
echo "$(cd "$venv" && pwd)/bin/python"
