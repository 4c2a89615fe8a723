"""scripts/crates.py: which crates are published, from each crate's own
`publish` setting, and its refusal of unreadable metadata (message, exit code 2,
nothing printed)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parent / "crates.py"


def package(name: str, publish: list[str] | None) -> dict:
    return {"id": f"path+file:///w/{name}#0.1.0", "name": name, "publish": publish}


#: Three members (any registry, one named registry, `publish = false`) and a
#: package outside the workspace, which is never listed.
META = {
    "packages": [package("lib-b", None), package("lib-a", ["crates-io"]), package("kit", []), package("outside", [])],
    "workspace_members": [package(n, None)["id"] for n in ("lib-b", "lib-a", "kit")],
}


def run(*args: str, meta: str | None = json.dumps(META)) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as d:
        extra: list[str] = []
        if meta is not None:
            path = pathlib.Path(d) / "metadata.json"
            path.write_text(meta)
            extra = ["--metadata", str(path)]
        return subprocess.run([sys.executable, str(SCRIPT), *args, *extra], capture_output=True, text=True)


class Crates(unittest.TestCase):
    def test_published_are_the_members_without_publish_false(self) -> None:
        out = run("published")
        self.assertEqual((out.returncode, out.stdout, out.stderr), (0, "lib-a\nlib-b\n", ""))

    def test_excludes_name_each_unpublished_member_once(self) -> None:
        out = run("excludes")
        self.assertEqual((out.returncode, out.stdout, out.stderr), (0, "--exclude\nkit\n", ""))

    def test_unreadable_metadata_is_refused_and_nothing_listed(self) -> None:
        for meta in ("{not json", '{"packages": []}'):
            out = run("excludes", meta=meta)
            self.assertEqual((out.returncode, out.stdout), (2, ""), meta)
            self.assertIn("crates: cannot read the workspace's crates", out.stderr)

    def test_this_workspace(self) -> None:
        published = run("published", meta=None)
        excludes = run("excludes", meta=None)
        self.assertEqual((published.returncode, excludes.returncode), (0, 0), published.stderr + excludes.stderr)
        names = published.stdout.split()
        self.assertIn("stateseal", names)
        self.assertIn("stateseal-cli", names)
        words = excludes.stdout.split()
        self.assertEqual(words[::2], ["--exclude"] * (len(words) // 2))
        self.assertIn("stateseal-testkit", words[1::2])
        self.assertTrue(set(names).isdisjoint(words[1::2]))


if __name__ == "__main__":
    unittest.main()
