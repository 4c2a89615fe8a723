"""scripts/crates.py: which crates are published, from each crate's own
`publish` setting, and its refusal of unreadable metadata (message, exit code 2,
nothing printed); `drop-registry-builds` removes a dry run's registry builds of
our crates and nothing else."""

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


def build(target: pathlib.Path, file: str, build_hash: str, fingerprint: str, sources: str) -> list[pathlib.Path]:
    """One build in `target`'s debug directory: its dep-info naming `sources`,
    its library and metadata, its fingerprint directory. Returns its paths."""
    deps = target / "debug" / "deps"
    fp = target / "debug" / ".fingerprint" / f"{fingerprint}-{build_hash}"
    deps.mkdir(parents=True, exist_ok=True)
    fp.mkdir(parents=True)
    (fp / "lib").write_text("fingerprint")
    paths = [deps / f"{file}-{build_hash}.d", deps / f"lib{file}-{build_hash}.rlib", deps / f"lib{file}-{build_hash}.rmeta"]
    paths[0].write_text(f"{deps}/{file}-{build_hash}.d: {sources}\n")
    for p in paths[1:]:
        p.write_text("build")
    return [*paths, fp]


class DropRegistryBuilds(unittest.TestCase):
    def test_drops_registry_builds_of_our_crates_only(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            target = pathlib.Path(d)
            registry = "/root/.cargo/registry/src/-edb66b17a71311d3/stateseal-aws-kms-0.1.0/src/lib.rs"
            dropped = build(target, "stateseal_aws_kms", "ccf02fc600232f57", "stateseal-aws-kms", registry)
            kept = [
                # The workspace's build (a path relative to the workspace), and a crate
                # verified in its package directory (a path relative to it).
                *build(target, "stateseal_aws_kms", "57c9f2b07946208a", "stateseal-aws-kms", "providers/aws-kms/src/lib.rs"),
                *build(target, "stateseal", "11d3d89d9cf5a14a", "stateseal", "src/lib.rs"),
                # Another crate from the registry: not ours.
                *build(target, "tokio", "0123456789abcdef", "tokio", "/root/.cargo/registry/src/x/tokio-1.0.0/src/lib.rs"),
            ]
            out = subprocess.run([sys.executable, str(SCRIPT), "drop-registry-builds", d], capture_output=True, text=True)
            self.assertEqual((out.returncode, out.stdout), (0, ""), out.stderr)
            self.assertIn("dropped 1 registry builds", out.stderr)
            self.assertEqual([p for p in dropped if p.exists()], [])
            self.assertEqual([p for p in kept if not p.exists()], [])

    def test_bad_arguments_are_refused_and_nothing_removed(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            registry = "/root/.cargo/registry/src/r/stateseal-0.1.0/src/lib.rs"
            paths = build(pathlib.Path(d), "stateseal", "04e50d48a7def874", "stateseal", registry)
            for args, message in (([], "usage: crates.py drop-registry-builds TARGET_DIR"),
                                  ([d, d], "usage: crates.py drop-registry-builds TARGET_DIR"),
                                  ([f"{d}/missing"], f"crates: {d}/missing is not a directory")):
                out = subprocess.run([sys.executable, str(SCRIPT), "drop-registry-builds", *args], capture_output=True, text=True)
                self.assertEqual((out.returncode, out.stdout), (2, ""), args)
                self.assertIn(message, out.stderr)
            self.assertEqual([p for p in paths if not p.exists()], [])


if __name__ == "__main__":
    unittest.main()
