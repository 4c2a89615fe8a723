"""scripts/versions.py: the version every package carries, and its refusals
(message, exit code 2, nothing written)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parent / "versions.py"
CARGO = '[workspace]\nmembers = []\n\n[workspace.package]\nversion = "1.2.3"\n'


def run(files: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for name, text in files.items():
            (root / name).write_text(text)
        out = subprocess.run(
            [sys.executable, str(SCRIPT), "--cargo", str(root / "Cargo.toml"), "--node", str(root / "package.json")],
            capture_output=True, text=True,
        )
        after = {p.name: p.read_text() for p in root.iterdir()}
    return out, after


class Versions(unittest.TestCase):
    def test_agreeing_versions_print_the_version(self) -> None:
        out, _ = run({"Cargo.toml": CARGO, "package.json": '{"version": "1.2.3"}'})
        self.assertEqual((out.returncode, out.stdout, out.stderr), (0, "1.2.3\n", ""))

    def test_a_node_package_behind_is_refused_by_name(self) -> None:
        files = {"Cargo.toml": CARGO, "package.json": '{"version": "1.2.2"}'}
        out, after = run(files)
        self.assertEqual(out.returncode, 2)
        self.assertEqual(out.stdout, "")
        self.assertIn("package.json says version 1.2.2, the workspace", out.stderr)
        self.assertIn("1.2.3", out.stderr)
        self.assertEqual(after, files, "nothing written")

    def test_unreadable_files_are_named(self) -> None:
        out, _ = run({"Cargo.toml": "[workspace]\n", "package.json": "{}"})
        self.assertEqual(out.returncode, 2)
        self.assertIn("Cargo.toml: no [workspace.package] version", out.stderr)
        out, _ = run({"Cargo.toml": CARGO, "package.json": "{not json"})
        self.assertEqual(out.returncode, 2)
        self.assertIn("package.json: not readable as JSON", out.stderr)


if __name__ == "__main__":
    unittest.main()
