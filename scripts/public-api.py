#!/usr/bin/env python3
"""The public API of each library crate, as rustdoc documents it: every public
item and the inherent methods, variants and fields of each, one per line.

    scripts/public-api.py            write api/<crate>.txt from target/doc
    scripts/public-api.py --check    fail (with a diff) if they differ

Run after `cargo doc --workspace --no-deps`. A change to the public API then
shows up in review as a change to api/*.txt.
"""
import difflib
import html
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "target" / "doc"
CRATES = ["stateseal", "stateseal_vault", "stateseal_aws_kms", "stateseal_gcp_kms", "stateseal_azure_kv", "stateseal_object_store", "stateseal_providers", "stateseal_sim", "stateseal_oauth", "stateseal_contract"]
MEMBER = re.compile(r'id="((?:ty)?method|variant|structfield|associatedconstant)\.([A-Za-z0-9_]+)"')


def inherent(page: str) -> str:
    """The part of an item page that documents the item itself (not trait impls)."""
    cut = len(page)
    for marker in ('id="trait-implementations"', 'id="synthetic-implementations"', 'id="blanket-implementations"', 'id="foreign-impls"', 'id="implementors"'):
        at = page.find(marker)
        if at != -1:
            cut = min(cut, at)
    return page[:cut]


def listing(krate: str) -> list[str]:
    base = DOC / krate
    index = (base / "all.html").read_text()
    lines = []
    for section, items in re.findall(r'<h3 id="([a-z-]+)">.*?</h3><ul class="all-items">(.*?)</ul>', index):
        for href, name in re.findall(r'<a href="([^"]+)">(.*?)</a>', items):
            kind = href.rsplit("/", 1)[-1].split(".", 1)[0]
            lines.append(f"{kind} {krate}::{html.unescape(name)}")
            if kind in ("struct", "enum", "trait", "union"):
                page = inherent((base / href).read_text())
                members = sorted({f"{k.replace('tymethod', 'method')} {n}" for k, n in MEMBER.findall(page)})
                lines.extend(f"    {m}" for m in members)
    return lines


def main() -> int:
    check = "--check" in sys.argv[1:]
    failed = False
    for krate in CRATES:
        want = "\n".join(listing(krate)) + "\n"
        path = ROOT / "api" / f"{krate}.txt"
        if check:
            have = path.read_text() if path.exists() else ""
            if have != want:
                failed = True
                sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True), str(path), "rustdoc"))
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(want)
    if failed:
        print("the public API changed: if intended, run scripts/public-api.py and commit api/*.txt", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
