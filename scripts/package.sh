#!/usr/bin/env bash
# Everything users install, built from this checkout into dist/:
#   dist/python/  the abi3 manylinux_2_17 x86_64 wheel and the sdist
#   dist/node/    the main npm package and its linux-x64-gnu binary package (tarballs)
#   dist/crates/  the .crate of every published crate, each checked from itself
#   dist/SHA256SUMS
# The other platforms come from .github/workflows/release.yml (this host has
# one Rust target). Refuses (exit 2) when the versions disagree.
#
#   scripts/package.sh [python] [node] [crates]
# builds only the parts named (all three without any), replacing only theirs in
# dist/; SHA256SUMS covers whatever dist/ then holds. The Node binary is linked
# by the wheel build's zig wrappers: `node` needs `python` in the same run or
# an earlier one. scripts/test.sh builds `python node` while other tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
dist="${STATESEAL_DIST:-dist}"
started=$SECONDS
log() { echo "== package: $*" >&2; }
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python node crates)
for part in "${parts[@]}"; do
  case "$part" in
    python | node | crates) ;;
    *)
      echo "package.sh: unknown part '$part' (expected python, node or crates)" >&2
      exit 2
      ;;
  esac
done
want() { [[ " ${parts[*]} " == *" $1 "* ]]; }

# One version for the workspace, the Python package (maturin reads the crate's)
# and the Node packages; exit 2 naming the file to fix.
version="$(python3 scripts/versions.py)"

tools="$(scripts/pkg-env.sh)"
export PATH="$tools:$PATH"
# Builds share the workspace's target directory (incremental across runs).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
zig_env="$CARGO_TARGET_DIR/zig-env.sh"
if want node && ! want python && [ ! -f "$zig_env" ]; then
  echo "package.sh: the node part links with the python part's zig wrappers ($zig_env): build python first" >&2
  exit 2
fi
for part in "${parts[@]}"; do
  rm -rf "${dist:?}/$part"
  mkdir -p "$dist/$part"
done
python_s=0
node_s=0
crates_s=0

if want python; then
  log "Python: the sdist, then the abi3 wheel for manylinux_2_17 x86_64 built from it (zig links against glibc 2.17)"
  maturin sdist -m bindings/python/Cargo.toml --out "$dist/python" >&2
  # The wheel users get is built from the sdist, unpacked away from this checkout,
  # by pip through the package's own build backend (maturin's PEP 517 hooks; no
  # build isolation, so this venv's pinned maturin and zig): the sdist builds from
  # itself alone, and what it builds is what ships. One release build, where a
  # wheel from the checkout and a dev build of the sdist took two.
  sdist_dir="$(mktemp -d)"
  tar -xzf "$(python3 scripts/artifacts.py sdist --dist "$dist")" -C "$sdist_dir"
  # The archive's files carry fixed old times (a reproducible sdist), and the
  # workspace's crates get the same artifact names wherever they are built: in
  # the shared target directory cargo would take an older build of them for
  # fresh. Newer files make it compile the sdist's own sources.
  find "$sdist_dir" -type f -exec touch {} +
  # maturin sets up zig (wrappers for the C compiler, archiver and linker) in the
  # environment it runs cargo in. A cargo shim records that environment once the
  # build's own cargo call has it, so the Node binary below is compiled and linked
  # by the same wrappers in the same target directory: its dependencies, the C
  # ones included, are the wheel's builds, not a second build of each.
  shim_dir="$(mktemp -d)"
  trap 'rm -rf "$shim_dir" "$sdist_dir"' EXIT
  rm -f "$zig_env"
  cat > "$shim_dir/cargo" <<SHIM
#!/bin/sh
if [ -n "\${CC_x86_64_unknown_linux_gnu:-}" ]; then
  export -p | grep -E '^export (CC_|CXX_|AR_|RANLIB_|CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=|CMAKE_TOOLCHAIN_FILE_|BINDGEN_EXTRA_CLANG_ARGS_|ZIG_COMMAND=|CARGO_ZIGBUILD_|CARGO_TARGET_APPLIES_TO_HOST=|CARGO_UNSTABLE_TARGET_APPLIES_TO_HOST=|__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS=)' > "$zig_env"
fi
exec "$(command -v cargo)" "\$@"
SHIM
  chmod +x "$shim_dir/cargo"
  CARGO="$shim_dir/cargo" MATURIN_PEP517_ARGS="--zig --compatibility manylinux2014 --strip" \
    "$tools/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    --wheel-dir "$dist/python" "$sdist_dir/stateseal-$version" >&2
  if ! grep -q '^export CC_x86_64_unknown_linux_gnu=' "$zig_env" 2>/dev/null; then
    echo "package.sh: maturin ran cargo without its zig environment (CC_x86_64_unknown_linux_gnu): $zig_env was not written" >&2
    exit 1
  fi
  # The wheel under the name every other script looks for (scripts/artifacts.py).
  if ! wheel="$(python3 scripts/artifacts.py wheel --dist "$dist")"; then
    echo "package.sh: maturin built $(cd "$dist/python" && echo *.whl), not the wheel expected" >&2
    exit 1
  fi
  # auditwheel reads the symbols the extension needs: the tag must be one it would grant.
  auditwheel show "$wheel" > "$dist/python/auditwheel.txt"
  if ! grep -q 'manylinux_2_17_x86_64' "$dist/python/auditwheel.txt"; then
    cat "$dist/python/auditwheel.txt" >&2
    echo "package.sh: auditwheel does not grant manylinux_2_17_x86_64 to $wheel" >&2
    exit 1
  fi
  rm "$dist/python/auditwheel.txt"
  twine check --strict "$dist"/python/* >&2

  python_s=$((SECONDS - started))
fi

if want node; then
  log "Node: linux-x64-gnu binary (glibc 2.17), the main package and the binary package"
  # In maturin's zig environment (above): any other C compiler or archiver path
  # would make cargo rebuild every C dependency and all that depends on them.
  (
    # shellcheck source=/dev/null
    . "$zig_env"
    cargo build --quiet --release -p stateseal-node --lib --target x86_64-unknown-linux-gnu >&2
  )
  binary="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/libstateseal_node.so"
  # The newest glibc symbol version it needs must be 2.17 at most (what the package promises).
  needs="$(objdump -T "$binary" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
  if [ "$(printf '%s\n2.17\n' "$needs" | sort -V | tail -1)" != "2.17" ]; then
    echo "package.sh: $binary needs glibc $needs, above the 2.17 its package promises" >&2
    exit 1
  fi
  stage="$CARGO_TARGET_DIR/npm-stage"
  mkdir -p "$stage"
  strip --strip-unneeded -o "$stage/linux-x64-gnu.node" "$binary"
  node bindings/node/scripts/stage.cjs "$stage" "linux-x64-gnu=$stage/linux-x64-gnu.node"
  for pkg in "$stage"/*/; do
    (cd "$pkg" && npm pack --silent --pack-destination "$OLDPWD/$dist/node" >/dev/null)
  done

  node_s=$((SECONDS - started - python_s))
fi

if want crates; then
  log "Rust: every published crate packaged (cargo publish --dry-run), then checked from its .crate alone, in dependency order"
  # --allow-dirty: CI packages a clean clone; on a work tree this checks what is there.
  # Which crates are published is each crate's own `publish` setting (scripts/crates.py).
  excludes="$(python3 scripts/crates.py excludes)"
  published="$(python3 scripts/crates.py published)"
  mapfile -t unpublished < <(printf '%s' "$excludes")
  # What crates.io would be sent, in publishing order (manifests normalised, path
  # dependencies versioned). cargo's own verification builds each crate apart,
  # every dependency again in each crate's feature set: twelve builds, 11 minutes
  # here. crates.py checks the same .crate files instead, each alone with its own
  # features and packaged lockfile (docs/testing.md says what that leaves out).
  cargo publish --dry-run --no-verify --allow-dirty --workspace "${unpublished[@]}" >&2
  # The same .crate files, kept (the dry run removes them).
  cargo package --quiet --no-verify --allow-dirty --workspace "${unpublished[@]}" >&2
  # Each crate is checked alone, outside the workspace, so without the workspace's
  # [profile.dev]: the same settings given here let it reuse what clippy and
  # cargo doc checked of its dependencies.
  CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0 \
    python3 scripts/crates.py check-packaged "$CARGO_TARGET_DIR/package" >&2
  for crate in $published; do
    cp "$CARGO_TARGET_DIR/package/$crate-$version.crate" "$dist/crates/"
  done

  crates_s=$((SECONDS - started - python_s - node_s))
fi

rm -f "$dist/SHA256SUMS"
present=()
for part in python node crates; do
  if [ -d "$dist/$part" ]; then present+=("$part"); fi
done
(cd "$dist" && find "${present[@]}" -type f | sort | xargs sha256sum > SHA256SUMS)
log "done in $((SECONDS - started)) s (Python ${python_s} s, Node ${node_s} s, crates ${crates_s} s):"
(cd "$dist" && find "${parts[@]}" -type f | sort | xargs ls -l | awk '{printf "   %10d  %s\n", $5, $9}') >&2
