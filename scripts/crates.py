#!/usr/bin/env python3
"""Which of the workspace's crates are published, read from each crate's own
manifest (`publish = false` keeps one off crates.io), so the packaging script
and the release workflow never keep a list of their own.

    scripts/crates.py published   # one name a line
    scripts/crates.py excludes    # `--exclude NAME` for each unpublished crate, one word a line

`--metadata FILE` reads `cargo metadata --no-deps --format-version 1`'s output
from FILE instead of running cargo. Exits 2 with the reason when the metadata
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import pathlib
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


def main(argv: list[str]) -> int:
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
