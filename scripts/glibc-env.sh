#!/usr/bin/env bash
# Unpacks Debian 13's C library (glibc 2.41, the container image's libc) into
# the project's target directory, once, and prints a command prefix that runs
# a program under it:  $(scripts/glibc-env.sh) target/release/stateseal bench
#
# Why: glibc >= 2.41 answers getrandom() from the kernel's vDSO generator
# (no system call per nonce), and the `getrandom` crate calls glibc's
# getrandom(). Debian 12's glibc 2.36 makes one system call per nonce. This
# lets one machine measure both. Nothing is installed system-wide.
#
# The package is checked the way apt checks it: the suite's InRelease is
# verified against Debian's archive keyring, the package index against the
# hash InRelease gives, and the .deb against the hash in the index; nothing is
# unpacked unless all three hold (scripts/glibc-env-check.sh tests each).
# DEBIAN_MIRROR and GLIBC_ENV_ROOT (default target/glibc-trixie) override.
set -euo pipefail
cd "$(dirname "$0")/.."
suite="trixie"
package="libc6"
arch="$(dpkg --print-architecture)"
mirror="${DEBIAN_MIRROR:-https://deb.debian.org/debian}"
keyring="/usr/share/keyrings/debian-archive-keyring.gpg"
root="${GLIBC_ENV_ROOT:-target/glibc-$suite}"
libdir="$root/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
loader="$(basename "$(ls "$libdir"/ld-linux-*.so.* 2>/dev/null | head -1)" 2>/dev/null || true)"
if [ -z "$loader" ] || [ ! -x "$libdir/$loader" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  fetch() { curl -sSf --retry 3 -o "$2" "$1" || { echo "glibc-env: cannot fetch $1" >&2; exit 1; }; }
  fetch "$mirror/dists/$suite/InRelease" "$work/InRelease"
  gpgv --keyring "$keyring" --output "$work/Release" "$work/InRelease" 2>/dev/null \
    || { echo "glibc-env: InRelease signature does not verify against $keyring" >&2; exit 1; }
  index="main/binary-$arch/Packages.xz"
  want="$(awk -v f="$index" '/^SHA256:/{s=1;next} /^[A-Za-z]/{s=0} s && $3==f {print $1}' "$work/Release")"
  [ -n "$want" ] || { echo "glibc-env: $index not listed in Release" >&2; exit 1; }
  fetch "$mirror/dists/$suite/$index" "$work/Packages.xz"
  echo "$want  $work/Packages.xz" | sha256sum -c --quiet - \
    || { echo "glibc-env: $index does not match Release" >&2; exit 1; }
  read -r file sha < <(xz -dc "$work/Packages.xz" | awk -v p="$package" '
    /^Package: /{cur=$2} cur==p && /^Filename: /{f=$2} cur==p && /^SHA256: /{s=$2}
    /^$/{if (cur==p && f!="") {print f, s; exit} cur=""}')
  [ -n "${file:-}" ] || { echo "glibc-env: $package not in $index" >&2; exit 1; }
  fetch "$mirror/$file" "$work/pkg.deb"
  echo "$sha  $work/pkg.deb" | sha256sum -c --quiet - \
    || { echo "glibc-env: $file does not match the index" >&2; exit 1; }
  rm -rf "$root.tmp" && dpkg-deb -x "$work/pkg.deb" "$root.tmp"
  rm -rf "$root" && mv "$root.tmp" "$root"
  loader="$(basename "$(ls "$libdir"/ld-linux-*.so.* | head -1)")"
fi
libdir="$(cd "$libdir" && pwd)"
echo "$libdir/$loader --library-path $libdir"
