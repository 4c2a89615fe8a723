#!/usr/bin/env python3
"""Which of the workspace's crates are published, read from each crate's own
manifest (`publish = false` keeps one off crates.io), so the packaging script
and the release workflow never keep a list of their own.

    scripts/crates.py published   # one name a line
    scripts/crates.py excludes    # `--exclude NAME` for each unpublished crate, one word a line
    scripts/crates.py check-packaged PACKAGE_DIR  # each .crate there checked alone

Crates are listed in dependency order. `check-packaged` checks each published
crate from its `.crate` in PACKAGE_DIR (what `cargo package --no-verify
--workspace` writes), alone and in that order: exit 1 naming the first that does
not build or whose build writes into its sources, 2 when a `.crate` is missing
or cannot be unpacked.
It unpacks into PACKAGE_DIR/checked/ and, without CARGO_TARGET_DIR, builds in
PACKAGE_DIR's parent: it is meant for cargo's own `target/package`.

`--metadata FILE` reads `cargo metadata --no-deps --format-version 1`'s output
from FILE instead of running cargo. Exits 2 with the reason when the metadata
cannot be read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def metadata(path: pathlib.Path | None) -> dict:
    """The workspace's metadata, from `path` or from cargo."""
    if path is not None:
        return json.loads(path.read_text())
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--manifest-path", str(ROOT / "Cargo.toml")],
        capture_output=True, text=True, check=False,
    )
    if out.returncode != 0:
        raise ValueError(f"cargo metadata failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def split(meta: dict) -> tuple[list[str], list[str]]:
    """The workspace members' names: (published, unpublished), each sorted.

    cargo writes `publish` as null (any registry), a list of registries, or
    `[]` for `publish = false`.
    """
    members = set(meta["workspace_members"])
    published, unpublished = [], []
    for package in meta["packages"]:
        if package["id"] not in members:
            continue
        registries = package.get("publish")
        (unpublished if registries == [] else published).append(package["name"])
    return sorted(published), sorted(unpublished)


def dependencies(meta: dict, names: list[str], kinds: tuple[str | None, ...] = (None, "build")) -> dict[str, set[str]]:
    """The crates of `names` each of them builds on, directly or not: by its
    dependencies of `kinds` (normal and build ones by default; dev-dependencies
    are not part of a published crate's build), then by those crates' normal and build ones."""
    def direct(of: tuple[str | None, ...]) -> dict[str, set[str]]:
        return {
            p["name"]: {d["name"] for d in p.get("dependencies", []) if d.get("path") and d["name"] in names and d.get("kind") in of}
            for p in meta["packages"] if p["name"] in names
        }
    first, then = direct(kinds), direct((None, "build"))
    closure = {}
    for name in names:
        seen, todo = set(), list(first.get(name, ()))
        while todo:
            dep = todo.pop()
            if dep not in seen:
                seen.add(dep)
                todo.extend(then.get(dep, ()))
        closure[name] = seen
    return closure


def order(meta: dict, names: list[str]) -> list[str]:
    """`names` in dependency order (a crate after the crates of `names` it
    builds on; otherwise by name), as cargo publishes them."""
    deps = dependencies(meta, names)
    done: list[str] = []
    while len(done) < len(names):
        ready = sorted(n for n in names if n not in done and deps[n] <= set(done))
        if not ready:
            raise ValueError(f"the crates depend on each other in a cycle: {sorted(set(names) - set(done))}")
        done.append(ready[0])
    return done


def digest(tree: pathlib.Path) -> dict[str, str]:
    """Each file's SHA-256 under `tree`, but the lockfile (a patched check rewrites it)."""
    return {
        str(f.relative_to(tree)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(tree.rglob("*")) if f.is_file() and f.name != "Cargo.lock"
    }


def check_packaged(package_dir: pathlib.Path, deps: dict[str, set[str]], names: list[str], version: str) -> int:
    """Checks each crate from its own `.crate` alone: unpacked under
    `package_dir/checked/`, `cargo check` of its library and binaries with its
    own default features and the lockfile packaged with it, every crate of ours
    it depends on taken from its unpacked `.crate` too (a path patch). Then, as
    cargo's own verification does, its sources must be as unpacked."""
    crates = [package_dir / f"{name}-{version}.crate" for name in names]
    missing = [str(c) for c in crates if not c.is_file()]
    if missing:
        print(f"crates: no packaged crate {', '.join(missing)} (cargo package --no-verify --workspace writes them)", file=sys.stderr)
        return 2
    root = package_dir / "checked"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for crate in crates:
        try:
            with tarfile.open(crate) as archive:
                archive.extractall(root, filter="data")
        except (tarfile.TarError, OSError) as e:
            print(f"crates: cannot unpack {crate}: {e}", file=sys.stderr)
            shutil.rmtree(root, ignore_errors=True)
            return 2
    # The archive's files carry their old times, and each crate is unpacked at the
    # same path every run: newer files make cargo check these sources, never
    # take an earlier run's check of other ones for fresh.
    for f in root.rglob("*"):
        os.utime(f)
    # Outside the unpacked sources (cargo's default would be a `target/` among them).
    target = os.environ.get("CARGO_TARGET_DIR") or str(package_dir.parent)
    for name in names:
        tree = root / f"{name}-{version}"
        patches = [
            word for dep in sorted(deps[name] - {name})
            for word in ("--config", f"patch.crates-io.{dep}.path={json.dumps(str(root / f'{dep}-{version}'))}")
        ]
        before = digest(tree)
        started = time.monotonic()
        checked = subprocess.run(
            ["cargo", "check", "--manifest-path", str(tree / "Cargo.toml"), "--target-dir", target, *patches],
            check=False,
        )
        if checked.returncode != 0:
            print(f"crates: {name} does not build from its .crate (cargo check exit {checked.returncode})", file=sys.stderr)
            return 1
        if digest(tree) != before:
            print(f"crates: checking {name} changed its unpacked sources (a build script writes into them)", file=sys.stderr)
            return 1
        print(f"crates: {name} checked from its .crate in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["published", "excludes", "check-packaged"])
    parser.add_argument("package_dir", nargs="?", type=pathlib.Path, help="check-packaged: where the .crate files are")
    parser.add_argument("--metadata", type=pathlib.Path)
    args = parser.parse_args(argv)
    if (args.what == "check-packaged") != (args.package_dir is not None):
        parser.error("a package directory goes with check-packaged, and only with it")
    try:
        meta = metadata(args.metadata)
        published, unpublished = split(meta)
        # A check resolves the crate's own dev-dependencies too (cargo keeps those with a version).
        deps = dependencies(meta, published, (None, "build", "dev"))
        published = order(meta, published)
        versions = {p["version"] for p in meta["packages"] if p["name"] in published}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"crates: cannot read the workspace's crates: {e}", file=sys.stderr)
        return 2
    if args.what == "published":
        print("\n".join(published))
    elif args.what == "excludes":
        print("\n".join(word for name in unpublished for word in ("--exclude", name)))
    else:
        if len(versions) != 1:
            print(f"crates: expected one version for the published crates, found {sorted(versions)}", file=sys.stderr)
            return 2
        return check_packaged(args.package_dir, deps, published, versions.pop())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
