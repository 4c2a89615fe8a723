#!/usr/bin/env bash
# Unpacks Debian's `prometheus` package (the server and promtool) into the
# project's target directory, once, and prints its bin directory. Nothing is
# installed system-wide and no service is started.
set -euo pipefail
cd "$(dirname "$0")/.."
version="2.42.0+ds-5+b6"
root="target/prometheus-$version"
if [ ! -x "$root/usr/bin/promtool" ]; then
  mkdir -p target/debs
  (cd target/debs && apt-get download "prometheus=$version" >/dev/null 2>&1)
  rm -rf "$root.tmp" && dpkg-deb -x "target/debs/prometheus_${version}_$(dpkg --print-architecture).deb" "$root.tmp"
  mv "$root.tmp" "$root"
fi
echo "$(cd "$root/usr/bin" && pwd)"
