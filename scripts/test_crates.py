"""scripts/crates.py: which crates are published, from each crate's own
`publish` setting, and its refusal of unreadable metadata (message, exit code 2,
nothing printed), in dependency order; `check-packaged` checks each crate from
its own `.crate` (toy crates) and refuses what does not build from it."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parent / "crates.py"


def package(name: str, publish: list[str] | None, deps: tuple[tuple[str, str | None], ...] = ()) -> dict:
    return {
        "id": f"path+file:///w/{name}#0.1.0", "name": name, "version": "0.1.0", "publish": publish,
        "dependencies": [{"name": d, "path": f"/w/{d}", "kind": kind} for d, kind in deps],
    }


#: Three members (any registry, one named registry, `publish = false`) and a
#: package outside the workspace, which is never listed. lib-a builds on lib-b,
#: which dev-depends on lib-a (a test's dependency: no cycle for publishing).
META = {
    "packages": [
        package("lib-b", None, (("lib-a", "dev"),)), package("lib-a", ["crates-io"], (("lib-b", None), ("kit", "dev"))),
        package("kit", []), package("outside", []),
    ],
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
    def test_published_are_the_members_without_publish_false_in_dependency_order(self) -> None:
        out = run("published")
        self.assertEqual((out.returncode, out.stdout, out.stderr), (0, "lib-b\nlib-a\n", ""))

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


def toy(root: pathlib.Path, *, exclude_data: bool = False, writing_build: bool = False) -> pathlib.Path:
    """A workspace of two crates, `b` building on `a`, packaged (no verify) into
    `root/target/package`; `a` reads `data.txt`. Returns its metadata's path."""
    (root / "Cargo.toml").write_text('[workspace]\nmembers = ["a", "b"]\nresolver = "2"\n')
    meta = '[package]\nname = "{}"\nversion = "0.1.0"\nedition = "2021"\nlicense = "MIT"\ndescription = "toy"\n'
    (root / "a" / "src").mkdir(parents=True)
    (root / "a" / "Cargo.toml").write_text(meta.format("a") + ('exclude = ["data.txt"]\n' if exclude_data else ""))
    (root / "a" / "data.txt").write_text("data")
    (root / "a" / "src" / "lib.rs").write_text('pub const DATA: &str = include_str!("../data.txt");\n')
    if writing_build:
        (root / "a" / "build.rs").write_text(
            'fn main() { std::fs::write(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("made.txt"), "x").unwrap(); }\n'
        )
    (root / "b" / "src").mkdir(parents=True)
    (root / "b" / "Cargo.toml").write_text(meta.format("b") + '[dependencies]\na = { path = "../a", version = "0.1.0" }\n')
    (root / "b" / "src" / "lib.rs").write_text("pub fn data() -> &'static str { a::DATA }\n")
    cargo = {"cwd": root, "env": {**os.environ, "CARGO_TARGET_DIR": str(root / "target"), "CARGO_NET_OFFLINE": "true"}}
    subprocess.run(["cargo", "package", "--quiet", "--no-verify", "--workspace"], check=True, **cargo)
    path = root / "metadata.json"
    path.write_text(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], check=True, capture_output=True, text=True, **cargo).stdout)
    return path


def check(root: pathlib.Path, meta: pathlib.Path, package_dir: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CARGO_TARGET_DIR": str(root / "target"), "CARGO_NET_OFFLINE": "true"}
    package_dir = package_dir or root / "target" / "package"
    return subprocess.run([sys.executable, str(SCRIPT), "check-packaged", str(package_dir), "--metadata", str(meta)],
                          capture_output=True, text=True, env=env, cwd=root)


class CheckPackaged(unittest.TestCase):
    def checked(self, **options: bool) -> tuple[pathlib.Path, subprocess.CompletedProcess[str]]:
        """A toy workspace (`toy`'s options), packaged and checked; its root lives as long as the test."""
        root = pathlib.Path(self.enterContext(tempfile.TemporaryDirectory()))
        return root, check(root, toy(root, **options))

    def test_each_crate_is_checked_from_its_crate_in_order(self) -> None:
        _, out = self.checked()
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [line for line in out.stderr.splitlines() if line.startswith("crates:")]
        self.assertEqual([line.split()[1] for line in lines], ["a", "b"], out.stderr)
        # b's dependency is a's unpacked .crate, not the workspace's a.
        self.assertIn(f"checked{os.sep}a-0.1.0", out.stderr)

    def test_a_file_left_out_of_the_crate_fails_it(self) -> None:
        root, out = self.checked(exclude_data=True)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("crates: a does not build from its .crate (cargo check exit 101)", out.stderr)
        self.assertNotIn("crates: b", out.stderr)
        # The workspace's own copy is untouched.
        self.assertEqual((root / "a" / "data.txt").read_text(), "data")

    def test_a_build_that_writes_into_its_sources_fails_it(self) -> None:
        _, out = self.checked(writing_build=True)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("crates: checking a changed its unpacked sources (a build script writes into them)", out.stderr)

    def test_a_missing_crate_is_refused_before_any_check(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            meta = toy(root)
            package_dir = root / "target" / "package"
            (package_dir / "b-0.1.0.crate").unlink()
            kept = sorted(p.name for p in package_dir.iterdir())
            out = check(root, meta)
            self.assertEqual((out.returncode, out.stdout), (2, ""))
            self.assertIn(f"crates: no packaged crate {package_dir}/b-0.1.0.crate", out.stderr)
            self.assertEqual(sorted(p.name for p in package_dir.iterdir()), kept)
            self.assertFalse((package_dir / "checked").exists())

    def test_a_package_directory_goes_with_check_packaged_only(self) -> None:
        for args in (["check-packaged"], ["published", "somewhere"]):
            out = run(*args)
            self.assertEqual((out.returncode, out.stdout), (2, ""), args)
            self.assertIn("a package directory goes with check-packaged, and only with it", out.stderr)


if __name__ == "__main__":
    unittest.main()
