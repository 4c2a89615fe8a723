"""scripts/artifacts.py: the path of each package in dist/, and its refusals
(message, exit code 2, nothing written)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parent / "artifacts.py"
WHEEL = "python/stateseal-1.2.3-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
SDIST = "python/stateseal-1.2.3.tar.gz"


def run(dist: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--dist", str(dist), "--version", "1.2.3"],
        capture_output=True, text=True,
    )


def listing(root: pathlib.Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


class Artifacts(unittest.TestCase):
    def test_each_built_artifact_is_found(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            dist = pathlib.Path(d)
            for name in (WHEEL, SDIST, "node/stateseal-1.2.3.tgz", "node/stateseal-linux-x64-gnu-1.2.3.tgz"):
                (dist / name).parent.mkdir(parents=True, exist_ok=True)
                (dist / name).write_bytes(b"built")
            for kind, name in (("wheel", WHEEL), ("sdist", SDIST), ("node-main", "node/stateseal-1.2.3.tgz"),
                               ("node-binary", "node/stateseal-linux-x64-gnu-1.2.3.tgz")):
                out = run(dist, kind)
                self.assertEqual((out.returncode, out.stdout, out.stderr), (0, f"{(dist / name).resolve()}\n", ""))

    def test_a_missing_artifact_is_refused_naming_it_and_its_builder(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            dist = pathlib.Path(d)
            (dist / "node").mkdir()
            # Another version's binary is not this version's.
            (dist / "node/stateseal-linux-x64-gnu-1.2.2.tgz").write_bytes(b"older")
            before = listing(dist)
            out = run(dist, "node-binary")
            self.assertEqual(out.returncode, 2)
            self.assertEqual(out.stdout, "")
            self.assertEqual(
                out.stderr,
                f"artifacts: {dist / 'node/stateseal-linux-x64-gnu-1.2.3.tgz'} is missing: scripts/package.sh builds it\n",
            )
            self.assertEqual(listing(dist), before)

    def test_an_unknown_artifact_is_refused_with_the_choices(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            out = run(pathlib.Path(d), "crate")
            self.assertEqual(out.returncode, 2)
            self.assertEqual(out.stdout, "")
            self.assertIn("invalid choice: 'crate' (choose from", out.stderr)
            self.assertIn("'node-binary', 'node-main', 'sdist', 'wheel'", out.stderr)
            self.assertEqual(listing(pathlib.Path(d)), [])


if __name__ == "__main__":
    unittest.main()
