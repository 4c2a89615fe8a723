#!/usr/bin/env python3
"""Where the packages scripts/package.sh builds are in dist/: one home for
their names, read by the scripts that install or test them. Prints the
artifact's path; exits 2 naming the file it expected, and what builds it,
when it is not there.

    scripts/artifacts.py {wheel,sdist,node-main,node-binary} [--dist DIR] [--version V]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from versions import CARGO, NODE, ROOT, problems

#: Each artifact's path under dist/, for a version.
NAMES = {
    "wheel": "python/stateseal-{v}-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "sdist": "python/stateseal-{v}.tar.gz",
    "node-main": "node/stateseal-{v}.tgz",
    "node-binary": "node/stateseal-linux-x64-gnu-{v}.tgz",
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("artifact", choices=sorted(NAMES))
    parser.add_argument("--dist", type=pathlib.Path, default=ROOT / "dist")
    parser.add_argument("--version", help="the workspace's version unless given")
    args = parser.parse_args(argv)
    version = args.version
    if version is None:
        version, found = problems(CARGO, NODE)
        if found:
            for p in found:
                print(f"artifacts: {p}", file=sys.stderr)
            return 2
    path = args.dist / NAMES[args.artifact].format(v=version)
    if not path.is_file():
        print(f"artifacts: {path} is missing: scripts/package.sh builds it", file=sys.stderr)
        return 2
    print(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
