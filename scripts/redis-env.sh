#!/usr/bin/env bash
# Unpacks (once) Debian's Redis server and the libraries it needs but the
# base system lacks into target/redis-env (no root, nothing installed
# system-wide; apt checks the packages against the signed archive index) and
# prints the path of a `redis-server` launcher. The tests start one server
# per test on a loopback port and stop it by PID (testkit/src/redis.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir="${STATESEAL_REDIS_ENV:-target/redis-env}"
packages=(redis-tools libjemalloc2 liblzf1)
stamp="$env_dir/.installed"
# The stamp names the launcher's layout too: an older, path-bound one is replaced.
installed="${packages[*]} relocatable with-cli"
# Reused only if its launcher runs: a directory moved or damaged is unpacked again.
if [ "$(cat "$stamp" 2>/dev/null)" != "$installed" ] || ! "$env_dir/redis-server" --version >/dev/null 2>&1; then
  rm -rf "$env_dir"
  mkdir -p "$env_dir/debs" "$env_dir/root"
  (cd "$env_dir/debs" && apt-get download "${packages[@]}" >&2)
  for deb in "$env_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$env_dir/root"; done
  # Debian's redis-server is redis-check-rdb under another name (it acts on argv[0]).
  ln -sf redis-check-rdb "$env_dir/root/usr/bin/redis-server"
  # Paths relative to the launcher, so the directory may move (a renamed checkout).
  cat > "$env_dir/redis-server" <<'LAUNCHER'
#!/bin/sh
root="$(cd "$(dirname "$0")/root" && pwd)"
LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$root/usr/bin/redis-server" "$@"
LAUNCHER
  chmod +x "$env_dir/redis-server"
  # redis-cli beside it (the cluster tests create their cluster with `redis-cli --cluster create`).
  cat > "$env_dir/redis-cli" <<'LAUNCHER'
#!/bin/sh
root="$(cd "$(dirname "$0")/root" && pwd)"
LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$root/usr/bin/redis-cli" "$@"
LAUNCHER
  chmod +x "$env_dir/redis-cli"
  "$env_dir/redis-server" --version >&2
  echo "$installed" > "$stamp"
fi
echo "$(cd "$env_dir" && pwd)/redis-server"
