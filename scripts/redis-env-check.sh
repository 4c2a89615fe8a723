#!/usr/bin/env bash
# scripts/redis-env.sh's launcher keeps working when its directory moves (a
# checkout renamed or moved, target/ copied): it is unpacked into a scratch
# directory, moved, and must still start Redis; an environment it cannot run
# is unpacked again rather than handed to the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
STATESEAL_REDIS_ENV="$work/before" scripts/redis-env.sh >/dev/null 2>&1
mv "$work/before" "$work/after"
if ! version="$("$work/after/redis-server" --version 2>&1)"; then
  echo "redis-env-check: the launcher no longer runs once its directory moved: $version" >&2
  exit 1
fi
# A launcher that cannot run (here: its server removed) is rebuilt, not printed.
rm "$work/after/root/usr/bin/redis-check-rdb"
launcher="$(STATESEAL_REDIS_ENV="$work/after" scripts/redis-env.sh 2>/dev/null)"
if ! "$launcher" --version >/dev/null 2>&1; then
  echo "redis-env-check: scripts/redis-env.sh printed a launcher that does not run" >&2
  exit 1
fi
echo "redis-env-check: the launcher runs after a move ($version), and a broken one is unpacked again"
