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
    """A workspace of four crates packaged (no verify) into `root/target/package`:
    `a` builds on `m`, which builds on `z` (which reads `data.txt`), and `a`
    dev-depends on `d`; dependency order (d, z, m, a) is not the names' order.
    Returns its metadata's path."""
    (root / "Cargo.toml").write_text('[workspace]\nmembers = ["a", "d", "m", "z"]\nresolver = "2"\n')
    manifest = '[package]\nname = "{}"\nversion = "0.1.0"\nedition = "2021"\nlicense = "MIT"\ndescription = "toy"\n'
    crates = {
        "z": ('exclude = ["data.txt"]\n' if exclude_data else "", 'pub const DATA: &str = include_str!("../data.txt");\n'),
        "m": ('[dependencies]\nz = { path = "../z", version = "0.1.0" }\n', "pub fn data() -> &'static str { z::DATA }\n"),
        "a": ('[dependencies]\nm = { path = "../m", version = "0.1.0" }\n[dev-dependencies]\nd = { path = "../d", version = "0.1.0" }\n',
              "pub fn data() -> &'static str { m::data() }\n"),
        "d": ("", "pub const D: u8 = 1;\n"),
    }
    for name, (extra, lib) in crates.items():
        (root / name / "src").mkdir(parents=True)
        (root / name / "Cargo.toml").write_text(manifest.format(name) + extra)
        (root / name / "src" / "lib.rs").write_text(lib)
    (root / "z" / "data.txt").write_text("data")
    if writing_build:
        (root / "z" / "build.rs").write_text(
            'fn main() { std::fs::write(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("made.txt"), "x").unwrap(); }\n'
        )
    package(root)
    path = root / "metadata.json"
    path.write_text(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], check=True, capture_output=True, text=True, **cargo(root)).stdout)
    return path


def cargo(root: pathlib.Path) -> dict:
    """How the tests run cargo on a toy: in it, its own target directory, offline."""
    return {"cwd": root, "env": {**os.environ, "CARGO_TARGET_DIR": str(root / "target"), "CARGO_NET_OFFLINE": "true"}}


def package(root: pathlib.Path) -> None:
    subprocess.run(["cargo", "package", "--quiet", "--no-verify", "--workspace"], check=True, **cargo(root))


def check(root: pathlib.Path, meta: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "check-packaged", str(root / "target" / "package"), "--metadata", str(meta)],
                          capture_output=True, text=True, **cargo(root))


class CheckPackaged(unittest.TestCase):
    def workspace(self, **options: bool) -> tuple[pathlib.Path, pathlib.Path]:
        """A toy workspace (`toy`'s options), packaged, living as long as the test: its root and metadata."""
        root = pathlib.Path(self.enterContext(tempfile.TemporaryDirectory()))
        return root, toy(root, **options)

    def checked(self, **options: bool) -> tuple[pathlib.Path, subprocess.CompletedProcess[str]]:
        """A toy workspace (`toy`'s options), packaged and checked."""
        root, meta = self.workspace(**options)
        return root, check(root, meta)

    def test_each_crate_is_checked_from_its_crate_in_order(self) -> None:
        root, meta = self.workspace()
        # The checkout's z no longer builds: each check must take z (and d) from the .crate files.
        (root / "z" / "src" / "lib.rs").write_text("not rust\n")
        out = check(root, meta)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [line for line in out.stderr.splitlines() if line.startswith("crates:")]
        self.assertEqual([line.split()[1] for line in lines], ["d", "z", "m", "a"], out.stderr)

    def test_a_crate_packaged_again_is_checked_again(self) -> None:
        root, meta = self.workspace()
        self.assertEqual(check(root, meta).returncode, 0)
        # Packaged anew with an error: its files carry the archive's old times, and the
        # earlier check at the same path must not be taken for fresh.
        (root / "z" / "src" / "lib.rs").write_text("pub const DATA: &str = 1;\n")
        package(root)
        out = check(root, meta)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("crates: z does not build from its .crate (cargo check exit 101)", out.stderr)

    def test_a_file_left_out_of_the_crate_fails_it(self) -> None:
        root, out = self.checked(exclude_data=True)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("crates: z does not build from its .crate (cargo check exit 101)", out.stderr)
        self.assertNotIn("crates: m", out.stderr)
        # The workspace's own copy is untouched.
        self.assertEqual((root / "z" / "data.txt").read_text(), "data")

    def test_a_build_that_writes_into_its_sources_fails_it(self) -> None:
        _, out = self.checked(writing_build=True)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("crates: checking z changed its unpacked sources (a build script writes into them)", out.stderr)

    def test_a_missing_crate_is_refused_before_any_check(self) -> None:
        root, meta = self.workspace()
        package_dir = root / "target" / "package"
        (package_dir / "m-0.1.0.crate").unlink()
        kept = sorted(p.name for p in package_dir.iterdir())
        out = check(root, meta)
        self.assertEqual((out.returncode, out.stdout), (2, ""))
        self.assertIn(f"crates: no packaged crate {package_dir}/m-0.1.0.crate", out.stderr)
        self.assertEqual(sorted(p.name for p in package_dir.iterdir()), kept)
        self.assertFalse((package_dir / "checked").exists())

    def test_a_corrupt_crate_is_refused_before_any_check(self) -> None:
        root, meta = self.workspace()
        package_dir = root / "target" / "package"
        (package_dir / "z-0.1.0.crate").write_bytes(b"not a tarball")
        out = check(root, meta)
        self.assertEqual((out.returncode, out.stdout), (2, ""))
        self.assertIn(f"crates: cannot unpack {package_dir}/z-0.1.0.crate", out.stderr)
        self.assertNotIn("checked from its .crate", out.stderr)
        self.assertFalse((package_dir / "checked").exists())
        self.assertEqual((package_dir / "z-0.1.0.crate").read_bytes(), b"not a tarball")

    def test_a_package_directory_goes_with_check_packaged_only(self) -> None:
        for args in (["check-packaged"], ["published", "somewhere"]):
            out = run(*args)
            self.assertEqual((out.returncode, out.stdout), (2, ""), args)
            self.assertIn("a package directory goes with check-packaged, and only with it", out.stderr)


if __name__ == "__main__":
    unittest.main()
