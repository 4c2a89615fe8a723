"""scripts/package.sh's parts: an unknown part, and the Node part without the wheel
build's zig wrappers, are refused (message, exit code 2) before anything in dist/ or
the target directory is touched; so is scripts/node-package.sh without them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile
import unittest

from artifacts import NAMES
from versions import CARGO, NODE, problems

SCRIPT = pathlib.Path(__file__).resolve().parent / "package.sh"
NODE_PACKAGE = SCRIPT.parent / "node-package.sh"


def run(*parts: str, dist: pathlib.Path, target: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, STATESEAL_DIST=str(dist), CARGO_TARGET_DIR=str(target))
    return subprocess.run([str(SCRIPT), *parts], capture_output=True, text=True, env=env, check=False)


class Parts(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        root = pathlib.Path(self._tmp.name)
        self.dist, self.target = root / "dist", root / "target"
        for part in ("python", "node", "crates"):
            (self.dist / part).mkdir(parents=True)
            (self.dist / part / "kept").write_text(part)
        (self.dist / "SHA256SUMS").write_text("sums")
        self.target.mkdir()

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def assert_untouched(self) -> None:
        found = {str(p.relative_to(self.dist)): p.read_text() for p in self.dist.rglob("*") if p.is_file()}
        self.assertEqual(
            found,
            {"python/kept": "python", "node/kept": "node", "crates/kept": "crates", "SHA256SUMS": "sums"},
        )
        self.assertEqual(list(self.target.iterdir()), [])

    def test_an_unknown_part_is_refused(self) -> None:
        r = run("python", "wheels", dist=self.dist, target=self.target)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr, "package.sh: unknown part 'wheels' (expected python, node or crates)\n")
        self.assert_untouched()

    def test_node_without_the_wheel_builds_zig_wrappers_is_refused(self) -> None:
        r = run("node", dist=self.dist, target=self.target)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(
            r.stderr.splitlines()[-1],
            f"package.sh: the node part links with the python part's zig wrappers ({self.target}/zig-env.sh): build python first",
        )
        self.assert_untouched()

    def test_the_node_package_without_the_zig_wrappers_is_refused(self) -> None:
        # The binary package it would test is there; the environment it was built in is not.
        binary = self.dist / NAMES["node-binary"].format(v=problems(CARGO, NODE)[0])
        binary.write_text("tarball")
        # Every tool that could build or put a binary in place is a shim that records
        # its call: none may run. (Not the loaded binary's mtime: scripts/test.sh runs
        # this beside the bindings job, which puts bindings/node/stateseal.node in place.)
        shims = pathlib.Path(self._tmp.name) / "shims"
        shims.mkdir()
        calls = shims / "calls"
        for tool in ("cargo", "npm", "npx", "node", "tar", "mv", "cp"):
            shim = shims / tool
            shim.write_text(f'#!/bin/sh\necho {tool} >> "{calls}"\nexit 1\n')
            shim.chmod(0o755)
        env = dict(
            os.environ,
            STATESEAL_DIST=str(self.dist),
            CARGO_TARGET_DIR=str(self.target),
            PATH=f"{shims}{os.pathsep}{os.environ['PATH']}",
        )
        r = subprocess.run([str(NODE_PACKAGE)], capture_output=True, text=True, env=env, check=False)
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertEqual(
            r.stderr.splitlines()[-1],
            f"node-package.sh: {self.target}/zig-env.sh is missing: run scripts/package.sh python node first",
        )
        self.assertFalse(calls.exists(), calls.read_text() if calls.exists() else "")
        binary.unlink()
        self.assert_untouched()


if __name__ == "__main__":
    unittest.main()
