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
#   scripts/semver-check.sh --self-test   # shows the check refusing a removed function
#
# Both sides' rustdoc JSON are built with this toolchain in target/semver (the
# baseline from a git worktree of REV), apart from the other jobs' builds;
# cargo-semver-checks (pinned) is installed once into target/tools/semver.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.51.0
target="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
root="$target/tools/semver"
tool="$root/bin/cargo-semver-checks"
# worktree DIR REV: a fresh detached git worktree of REV at DIR.
worktree() {
  git worktree remove --force "$1" 2>/dev/null || rm -rf "$1"
  git worktree prune
  git worktree add --quiet --detach "$1" "$2"
}
if [ ! -x "$tool" ] || ! "$tool" --version | grep -qF "$version"; then
  # Its release profile is fat LTO in one codegen unit (19.5 minutes on two
  # cores here, most of them one core on the last crate); the check does not
  # need that speed, so this build goes without.
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install --quiet --locked --version "$version" cargo-semver-checks \
    --root "$root" --target-dir "$target/tools/semver-build"
fi
[ "${1:-}" = "--install-only" ] && exit 0
if [ "${1:-}" = "--self-test" ]; then
  # The check can fail: against a baseline that has one more public function
  # (a commit of HEAD plus that function, in a scratch worktree), this tree
  # must be refused, naming the function.
  scratch="$target/semver-self-test"
  worktree "$scratch" HEAD
  echo 'pub fn semver_self_test_gone() {}' >> "$scratch/src/lib.rs"
  git -C "$scratch" -c user.name=semver-self-test -c user.email=self-test@semver.invalid \
    commit --quiet -am "semver self-test: one more public function"
  extra="$(git -C "$scratch" rev-parse HEAD)"
  git worktree remove --force "$scratch"
  if out="$(SEMVER_CRATES=stateseal "$0" "$extra" 2>&1)"; then
    echo "semver-check.sh --self-test: a removed public function passed the check" >&2
    echo "$out" >&2
    exit 1
  fi
  grep -q "semver_self_test_gone" <<<"$out" || {
    echo "semver-check.sh --self-test: the check failed without naming the removed function:" >&2
    echo "$out" >&2
    exit 1
  }
  echo "semver-check.sh --self-test: a removed public function is refused"
  exit 0
fi
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
# SEMVER_CRATES (space-separated) checks fewer.
all_crates="stateseal stateseal-vault stateseal-aws-kms stateseal-gcp-kms stateseal-azure-kv"
all_crates+=" stateseal-object-store stateseal-redis stateseal-providers stateseal-contract"
all_crates+=" stateseal-oauth stateseal-sim stateseal-proxy"
read -r -a crates <<<"${SEMVER_CRATES:-$all_crates}"
baseline_tree="$target/semver-baseline"
worktree "$baseline_tree" "$base"
trap 'git worktree remove --force "$baseline_tree" 2>/dev/null || true' EXIT
# docs DIR SIDE: every checked crate's rustdoc JSON, built from DIR in one
# cargo call (the crates' features unified, as api/*.txt sees them), kept in
# target/semver-json/SIDE. Both sides build in target/semver, apart from the
# other jobs' builds: RUSTC_BOOTSTRAP (rustdoc's JSON output is unstable)
# reruns some build scripts, which would rebuild the shared target twice.
docs() {
  local dir="$1" out="$target/semver-json/$2" args=() crate
  for crate in "${crates[@]}"; do
    if (cd "$dir" && cargo metadata --no-deps --format-version 1 | grep -q "\"name\":\"$crate\""); then
      args+=(-p "$crate")
    fi
  done
  rm -rf "$target/semver/doc"
  (cd "$dir" && RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$target/semver" \
    RUSTDOCFLAGS="-Zunstable-options --output-format json" cargo doc --quiet --no-deps "${args[@]}") >&2
  rm -rf "$out"
  mkdir -p "$out"
  cp "$target/semver/doc/"*.json "$out/"
}
docs "$baseline_tree" baseline
docs . current
failed=0
for crate in "${crates[@]}"; do
  json="${crate//-/_}.json"
  if [ ! -f "$target/semver-json/baseline/$json" ]; then
    echo "semver-check.sh: $crate is new since $rev (nothing to compare)"
    continue
  fi
  echo "== $crate against $rev"
  if ! "$tool" semver-checks check-release --manifest-path Cargo.toml -p "$crate" \
    --current-rustdoc "$target/semver-json/current/$json" \
    --baseline-rustdoc "$target/semver-json/baseline/$json"; then
    failed=1
  fi
done
if [ "$failed" = 1 ]; then
  echo "semver-check.sh: a public API broke against $rev: if that is deliberate, record the break in api/semver-baseline in the same commit" >&2
  exit 1
fi
