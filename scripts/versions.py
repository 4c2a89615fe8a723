#!/usr/bin/env python3
"""One version for everything users install: the workspace's (Cargo.toml
`[workspace.package] version`), which every crate inherits and maturin gives
the Python package, must be the Node package's too. Prints the version;
exits 2 naming the file to fix when they differ.

    scripts/versions.py [--cargo Cargo.toml] [--node bindings/node/package.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Where the workspace's version and the Node package's are written.
CARGO = ROOT / "Cargo.toml"
NODE = ROOT / "bindings/node/package.json"


def problems(cargo: pathlib.Path, node: pathlib.Path) -> tuple[str | None, list[str]]:
    """The workspace version, and what disagrees with it."""
    try:
        version = tomllib.loads(cargo.read_text())["workspace"]["package"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as e:
        return None, [f"{cargo}: no [workspace.package] version ({e})"]
    try:
        node_version = json.loads(node.read_text()).get("version")
    except (OSError, json.JSONDecodeError) as e:
        return version, [f"{node}: not readable as JSON ({e})"]
    if node_version != version:
        return version, [
            f"{node} says version {node_version}, the workspace ({cargo}) {version}: "
            "every package carries the workspace's version (see CHANGELOG.md)"
        ]
    return version, []


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cargo", type=pathlib.Path, default=CARGO)
    parser.add_argument("--node", type=pathlib.Path, default=NODE)
    args = parser.parse_args(argv)
    version, found = problems(args.cargo, args.node)
    for p in found:
        print(f"versions: {p}", file=sys.stderr)
    if found:
        return 2
    print(version)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
