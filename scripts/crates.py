#!/usr/bin/env python3
"""Which of the workspace's crates are published, read from each crate's own
manifest (`publish = false` keeps one off crates.io), so the packaging script
and the release workflow never keep a list of their own.

    scripts/crates.py published   # one name a line
    scripts/crates.py excludes    # `--exclude NAME` for each unpublished crate, one word a line
    scripts/crates.py drop-registry-builds TARGET_DIR

`drop-registry-builds` removes the debug builds of our crates that a dry run
made from its local registry (cargo never checks a registry crate's sources
again once built, and every run's registry serves the same names and versions),
and nothing else: a build's dep-info file names the sources it read.

`--metadata FILE` reads `cargo metadata --no-deps --format-version 1`'s output
from FILE instead of running cargo. Exits 2 with the reason when the metadata
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys

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


def drop_registry_builds(target: pathlib.Path) -> list[str]:
    """Removes the debug builds of `stateseal*` crates whose dep-info names a
    source under a registry's `src/`: their fingerprints and their files in
    `deps/`, all named by the build's hash. Returns the hashes dropped."""
    debug = target / "debug"
    dropped = []
    for dep_info in sorted((debug / "deps").glob("stateseal*.d")):
        if "/registry/src/" not in dep_info.read_text(errors="replace"):
            continue
        build = dep_info.stem.rsplit("-", 1)[1]
        for path in [*(debug / ".fingerprint").glob(f"stateseal*-{build}"), *(debug / "deps").glob(f"*stateseal*-{build}*")]:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        dropped.append(build)
    return dropped


def main(argv: list[str]) -> int:
    if argv[:1] == ["drop-registry-builds"]:
        if len(argv) != 2:
            print("usage: crates.py drop-registry-builds TARGET_DIR", file=sys.stderr)
            return 2
        target = pathlib.Path(argv[1])
        if not target.is_dir():
            print(f"crates: {target} is not a directory", file=sys.stderr)
            return 2
        dropped = drop_registry_builds(target)
        print(f"crates: dropped {len(dropped)} registry builds of our crates", file=sys.stderr)
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["published", "excludes"])
    parser.add_argument("--metadata", type=pathlib.Path)
    args = parser.parse_args(argv)
    try:
        published, unpublished = split(metadata(args.metadata))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"crates: cannot read the workspace's crates: {e}", file=sys.stderr)
        return 2
    if args.what == "published":
        print("\n".join(published))
    else:
        print("\n".join(word for name in unpublished for word in ("--exclude", name)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
