#!/usr/bin/env bash
# The test tools under target/ keep working when their directory moves (a
# checkout renamed or moved): scripts/redis-env.sh's launcher is unpacked into
# a scratch directory, moved, and must still start Redis, and one it cannot
# run is unpacked again; a venv of scripts/venv.sh, moved, is made again
# rather than handed over with scripts whose #! lines name its old path.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
STATESEAL_REDIS_ENV="$work/before" scripts/redis-env.sh >/dev/null
mv "$work/before" "$work/after"
if ! version="$("$work/after/redis-server" --version 2>&1)"; then
  echo "tools-env-check: the Redis launcher no longer runs once its directory moved: $version" >&2
  exit 1
fi
# A launcher that cannot run (here: its server removed) is rebuilt, not printed.
rm "$work/after/root/usr/bin/redis-check-rdb"
launcher="$(STATESEAL_REDIS_ENV="$work/after" scripts/redis-env.sh)"
if ! "$launcher" --version >/dev/null 2>&1; then
  echo "tools-env-check: scripts/redis-env.sh printed a Redis launcher that does not run" >&2
  exit 1
fi
# A venv (no packages: its own pip is a script like any other), moved.
scripts/venv.sh "$work/venv-before"
"$work/venv-before/bin/pip" --version >/dev/null
mv "$work/venv-before" "$work/venv-after"
scripts/venv.sh "$work/venv-after"
if ! pip_version="$("$work/venv-after/bin/pip" --version 2>&1)"; then
  echo "tools-env-check: scripts/venv.sh kept a moved venv whose scripts name its old path: $pip_version" >&2
  exit 1
fi
echo "tools-env-check: the Redis launcher runs after a move ($version) and a broken one is unpacked again; a moved venv is made again"
