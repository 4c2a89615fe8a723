#!/usr/bin/env bash
# The semver check: cargo-semver-checks compares the public API of each
# published library crate against a baseline git revision, so a breaking
# change is a deliberate, reviewed act. Until the first release the baseline is
# the last commit that changed api/semver-baseline: a commit that breaks the
# API against it fails here, and passes only when it also records the break in
# api/semver-baseline (which makes it the baseline), for review to see. After a
# release the baseline becomes the release's tag.
#
#   scripts/semver-check.sh [REV]     # REV: the baseline (default: as above)
#
# Both sides' rustdoc JSON are built with this toolchain in the shared target
# directory (the baseline from a git worktree of REV), so the dependencies
# lint already built are reused; cargo-semver-checks (pinned) is installed once
# into target/tools/semver.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.51.0
root="${CARGO_TARGET_DIR:-target}/tools/semver"
tool="$root/bin/cargo-semver-checks"
target="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
if [ ! -x "$tool" ] || ! "$tool" --version | grep -qF "$version"; then
  # Its release profile is fat LTO in one codegen unit (19.5 minutes on two
  # cores here, most of them one core on the last crate); the check does not
  # need that speed, so this build goes without.
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install --quiet --locked --version "$version" cargo-semver-checks \
    --root "$root" --target-dir "$target/tools/semver-build"
fi
[ "${1:-}" = "--install-only" ] && exit 0
rev="${1:-$(git log -1 --format=%H -- api/semver-baseline)}"
if [ -z "$rev" ]; then
  echo "semver-check.sh: api/semver-baseline has no commit yet: commit it first" >&2
  exit 2
fi
if ! base="$(git rev-parse --verify --quiet "$rev^{commit}")"; then
  echo "semver-check.sh: the baseline revision $rev is not in this clone (a shallow clone? fetch its history)" >&2
  exit 2
fi
# The crates users depend on (the CLI, the bindings, the test kit and the
# simulation's calibration are not libraries of ours to keep stable).
crates=(stateseal stateseal-vault stateseal-aws-kms stateseal-gcp-kms stateseal-azure-kv
  stateseal-object-store stateseal-redis stateseal-providers stateseal-contract stateseal-oauth
  stateseal-sim)
worktree="$target/semver-baseline"
git worktree remove --force "$worktree" 2>/dev/null || rm -rf "$worktree"
git worktree prune
git worktree add --quiet --detach "$worktree" "$base"
trap 'git worktree remove --force "$worktree" 2>/dev/null || true' EXIT
json() {
  # json DIR CRATE SIDE: the crate's rustdoc JSON, built from DIR in the shared
  # target directory (the two sides' paths differ, so their builds coexist),
  # kept as target/semver-json/SIDE/CRATE.json; prints its path.
  local dir="$1" crate="$2" out="$target/semver-json/$3"
  mkdir -p "$out"
  (cd "$dir" && RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$target" cargo rustdoc --quiet \
    -p "$crate" --lib -- -Zunstable-options --output-format json) >&2
  cp "$target/doc/${crate//-/_}.json" "$out/${crate//-/_}.json"
  echo "$out/${crate//-/_}.json"
}
failed=0
for crate in "${crates[@]}"; do
  if ! (cd "$worktree" && cargo metadata --no-deps --format-version 1 | grep -q "\"name\":\"$crate\""); then
    echo "semver-check.sh: $crate is new since $rev (nothing to compare)"
    continue
  fi
  current="$(json . "$crate" current)"
  baseline="$(json "$worktree" "$crate" baseline)"
  echo "== $crate against $rev"
  if ! "$tool" semver-checks check-release --manifest-path Cargo.toml -p "$crate" \
    --current-rustdoc "$current" --baseline-rustdoc "$baseline"; then
    failed=1
  fi
done
if [ "$failed" = 1 ]; then
  echo "semver-check.sh: a public API broke against $rev: if that is deliberate, record the break in api/semver-baseline in the same commit" >&2
  exit 1
fi
