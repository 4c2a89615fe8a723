#!/usr/bin/env bash
# scripts/glibc-env.sh refuses what does not verify: a mirror on 127.0.0.1 serves
# (1) an unsigned InRelease, (2) Debian's real InRelease with a tampered package
# index, (3) the real InRelease and index with a tampered .deb. Each must fail
# with its message and exit 1, and leave nothing unpacked.
set -euo pipefail
cd "$(dirname "$0")/.."
upstream="${DEBIAN_MIRROR:-https://deb.debian.org/debian}"
arch="$(dpkg --print-architecture)"
work="$(mktemp -d)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mirror="$work/mirror"
dists="$mirror/dists/trixie"
mkdir -p "$dists/main/binary-$arch"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$mirror" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
expect_refusal() {  # CASE MESSAGE
  local out rc=0 root="$work/root-$1"
  out="$(GLIBC_ENV_ROOT="$root" DEBIAN_MIRROR="http://127.0.0.1:$port" scripts/glibc-env.sh 2>&1)" || rc=$?
  if [ "$rc" -ne 1 ] || [[ "$out" != *"$2"* ]] || [ -e "$root" ]; then
    echo "glibc-env-check: case '$1': expected exit 1 with '$2' and nothing unpacked; got exit $rc: $out" >&2
    exit 1
  fi
  echo "glibc-env-check: $1: refused ($2)"
}
# 1. Not signed by Debian.
printf 'Origin: Debian\nSuite: trixie\n' > "$dists/InRelease"
expect_refusal unsigned-release "InRelease signature does not verify"
# 2. Debian's signed InRelease, an index that is not the one it names.
curl -sSf --retry 3 -o "$dists/InRelease" "$upstream/dists/trixie/InRelease"
echo "not the index" | xz > "$dists/main/binary-$arch/Packages.xz"
expect_refusal tampered-index "does not match Release"
# 3. The real index, a package that is not the one it names.
curl -sSf --retry 3 -o "$dists/main/binary-$arch/Packages.xz" "$upstream/dists/trixie/main/binary-$arch/Packages.xz"
xz -dc "$dists/main/binary-$arch/Packages.xz" > "$work/Packages"
file="$(awk '/^Package: libc6$/{p=1} p&&/^Filename: /{print $2; exit}' "$work/Packages")"
mkdir -p "$mirror/$(dirname "$file")"
echo "not a package" > "$mirror/$file"
expect_refusal tampered-package "does not match the index"
