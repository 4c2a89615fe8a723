#!/usr/bin/env bash
# Creates (once) the packaging tools' venv and prints its bin directory:
# maturin (wheels, sdist), ziglang (linking against glibc 2.17 from this host:
# the wheel, and the Node binary through maturin's zig wrappers), auditwheel
# (the wheel's platform tag, checked), twine (the metadata users read,
# checked), check-jsonschema (the release workflow).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${STATESEAL_PKGENV:-target/pkgenv}"
packages=("maturin==1.16.0" "ziglang==0.15.2" "auditwheel==6.8.2" "twine==6.2.0" "check-jsonschema==0.39.0")
scripts/venv.sh "$venv" "${packages[@]}"
echo "$(cd "$venv/bin" && pwd)"
