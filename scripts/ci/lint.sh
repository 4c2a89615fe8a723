#!/usr/bin/env bash
# CI job "lint": the front page's length, format, clippy (the library alone and
# without the key plane too), the layering checks, the fuzz targets, the docs
# and the public API. Needs Rust only.
source "$(dirname "$0")/lib.sh"
step "README.md under 200 lines (a user's front page; the rest lives in docs/)"
readme_lines="$(wc -l < README.md)"
if [ "$readme_lines" -ge 200 ]; then
  echo "README.md has $readme_lines lines: move detail into docs/" >&2
  exit 1
fi
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p stateseal --lib -- -D warnings
cargo clippy -p stateseal --lib --no-default-features -- -D warnings
step "the layers: no cycle of modules in src/, no data-plane module on the key plane (scripts/layers.py)"
python3 scripts/layers.py
# The check can fail: a copy of src/ with one arrow back up is refused.
layers_copy="$(mktemp -d)"
cp -r src "$layers_copy/src"
echo 'use crate::rotation::Phase;' >> "$layers_copy/src/ring.rs"
if layers_out="$(python3 scripts/layers.py "$layers_copy/src" 2>&1)"; then
  echo "scripts/layers.py passed a data-plane import of the key plane" >&2
  exit 1
fi
rm -rf "$layers_copy"
grep -q "the data plane's ring imports the key plane's rotation" <<<"$layers_out"
step "the data plane builds without the key plane's dependencies"
for dep in tokio moka toml time; do
  if cargo tree -p stateseal --no-default-features -e normal -i "$dep" 2>/dev/null | grep -q .; then
    echo "stateseal --no-default-features depends on $dep" >&2
    exit 1
  fi
done
step "each object store builds alone (a GCP-only build links no AWS SDK)"
cargo clippy -p stateseal-object-store --no-default-features --features gcs -- -D warnings
cargo clippy -p stateseal-object-store --no-default-features --features s3 -- -D warnings
cargo clippy -p stateseal-object-store --no-default-features --features azure -- -D warnings
for only in gcs azure; do
  if cargo tree -p stateseal-object-store --no-default-features --features $only -e normal -i aws-config 2>/dev/null | grep -q .; then
    echo "stateseal-object-store --features $only depends on aws-config" >&2
    exit 1
  fi
done
step "the fuzz targets build (fuzz/ is outside the workspace; running them: docs/testing.md#fuzzing)"
cargo check --quiet --manifest-path fuzz/Cargo.toml --bins --target-dir target
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
step "public API unchanged, signatures included (api/*.txt; scripts/public-api.py rewrites them)"
python3 scripts/public-api.py --check
