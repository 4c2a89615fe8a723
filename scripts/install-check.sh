#!/usr/bin/env bash
# The packages in dist/ (scripts/package.sh) as users install them, on a PATH
# with no cargo or rustc: the wheel into a fresh venv, the npm tarballs into a
# fresh npm project, never anything from the repository. Then each package's
# quick check (a keyset the Python package creates, whose token the Node
# package opens), and the real thing: a Python MCP server of the Python SDK and
# a Node server of the TypeScript SDK on that keyset, a round minted on each
# and finished on the other, attacks refused (scripts/install_check/).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dist="$(cd "${STATESEAL_DIST:-dist}" && pwd)"
wheel="$(python3 scripts/artifacts.py wheel --dist "$dist")"
node_main="$(python3 scripts/artifacts.py node-main --dist "$dist")"
node_binary="$(python3 scripts/artifacts.py node-binary --dist "$dist")"
python="$(python3 -c 'import sys; print(sys.executable)')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# The user's machine: Python, Node and npm, the C library; no Rust toolchain.
mkdir "$work/bin"
ln -s "$python" "$work/bin/python3"
export PATH="$work/bin:/usr/bin:/bin"
export CARGO=/nonexistent/cargo RUSTC=/nonexistent/rustc
unset CARGO_TARGET_DIR
for tool in cargo rustc rustup; do
  if command -v "$tool" >/dev/null; then
    echo "install-check: $tool is on PATH ($(command -v "$tool")); this check needs a machine without it" >&2
    exit 2
  fi
done

echo "== install-check: pip install the wheel from dist/python into a fresh venv" >&2
python3 -m venv "$work/py"
"$work/py/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
  "$wheel" \
  "mcp==2.3.0" "pytest==8.3.5"

echo "== install-check: npm install the tarballs from dist/node into a fresh project" >&2
mkdir "$work/node"
cp bindings/node/test/fleet_server.mjs bindings/node/test/smoke.cjs "$work/node/"
cat > "$work/node/package.json" <<JSON
{
  "name": "stateseal-install-check",
  "private": true,
  "type": "module",
  "dependencies": {
    "@modelcontextprotocol/node": "2.1.2",
    "@modelcontextprotocol/server": "2.4.0",
    "jose": "6.2.18",
    "stateseal": "file:$node_main",
    "stateseal-linux-x64-gnu": "file:$node_binary",
    "zod": "4.6.7"
  }
}
JSON
(cd "$work/node" && npm install --no-audit --no-fund --loglevel=error) >&2
installed_in="$(cd "$work/node" && node -p 'require.resolve("stateseal")')"
case "$installed_in" in
  "$work/node/node_modules/stateseal/"*) ;;
  *) echo "install-check: stateseal resolved to $installed_in, not the fresh project" >&2; exit 1 ;;
esac

echo "== install-check: each package's quick check; the Node package opens what the Python package sealed" >&2
mkdir -p "$work/smoke"
"$work/py/bin/python" bindings/python/tests/smoke.py "$work/smoke/smoke.json" >&2
(cd "$work/node" && node smoke.cjs "$work/smoke/smoke.json") >&2

echo "== install-check: Python SDK server and TypeScript SDK server on one keyset" >&2
STATESEAL_INSTALL_NODE="$work/node" "$work/py/bin/python" -m pytest -q -p no:cacheprovider \
  "$root/scripts/install_check/test_installed.py"
echo "== install-check: done in $((SECONDS - started)) s" >&2
