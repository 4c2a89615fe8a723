#!/usr/bin/env bash
# Creates (once, through scripts/venv.sh) the project's Python venv with the
# real MCP Python SDK and prints the path of its interpreter. Used by the
# interop tests and benchmarks. STATESEAL_PYENV names another directory for it
# (scripts/venv.sh makes it again unless it made it there for these packages).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_PYENV:-target/pyenv}"
scripts/venv.sh "$venv" 'mcp==2.3.0'
echo "$(cd "$venv" && pwd)/bin/python"
