#!/usr/bin/env python3
"""The public API of each library crate with its signatures, as rustdoc
renders them: every public item (with its declaration for functions,
constants, statics and type aliases) and the inherent methods, trait
methods, associated items, variants and fields of each, one per line, each
with its full signature (argument and return types, generics, where clauses).

    scripts/public-api.py            write api/<crate>.txt from target/doc
    scripts/public-api.py --check    fail (with a diff) if they differ

Run after `cargo doc --workspace --no-deps`. Any change to a public
signature (a `&str` argument becoming `&[u8]`, a new generic bound, a field's
type) then shows up in review as a change to api/*.txt; `--check` is CI's.
Trait implementations are not listed (cargo-semver-checks, where installed,
judges those against a baseline revision).
"""
import difflib
import html
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "target" / "doc"
CRATES = ["stateseal", "stateseal_vault", "stateseal_aws_kms", "stateseal_gcp_kms", "stateseal_azure_kv", "stateseal_object_store", "stateseal_providers", "stateseal_sim", "stateseal_oauth", "stateseal_contract", "stateseal_proxy"]
# A member's anchor and the rendered signature right after it.
MEMBER = re.compile(
    r'<section id="((?:ty)?method|associatedconstant|associatedtype|variant)\.([A-Za-z0-9_]+)"[^>]*>.*?'
    r'<h[34] class="code-header">(.*?)</h[34]>'
    r'|<span id="(structfield)\.([A-Za-z0-9_]+)"[^>]*>.*?<code>(.*?)</code></span>',
    re.S,
)
DECL = re.compile(r'<pre class="rust item-decl"><code>(.*?)</code></pre>', re.S)
TAG = re.compile(r"<[^>]+>")
NOTABLE = re.compile(r'<a[^>]*class="tooltip"[^>]*>.*?</a>', re.S)
COMMENT = re.compile(r'<span class="comment">.*?</span>', re.S)


def text(fragment: str) -> str:
    """Rendered HTML as one line of Rust: tags dropped, entities decoded,
    whitespace collapsed, no space inside brackets, no trailing comma."""
    s = html.unescape(TAG.sub("", COMMENT.sub("", NOTABLE.sub("", fragment))))
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"([(\[<]) ", r"\1", s)
    s = re.sub(r",? ([)\]>])", r"\1", s)
    return re.sub(r"(#\[[^\]]*\])(?=\S)", r"\1 ", s)


def inherent(page: str) -> str:
    """The part of an item page that documents the item itself (not trait impls)."""
    cut = len(page)
    for marker in ('id="trait-implementations"', 'id="synthetic-implementations"', 'id="blanket-implementations"', 'id="foreign-impls"', 'id="implementors"'):
        at = page.find(marker)
        if at != -1:
            cut = min(cut, at)
    return page[:cut]


def members(page: str) -> list[str]:
    found = set()
    for m in MEMBER.finditer(inherent(page)):
        kind, name, sig = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(4), m.group(5), m.group(6))
        kind = kind.replace("tymethod", "method")
        found.add(f"{kind} {name}: {text(sig)}")
    return sorted(found)


def listing(krate: str) -> list[str]:
    base = DOC / krate
    index = (base / "all.html").read_text()
    lines = []
    for _section, items in re.findall(r'<h3 id="([a-z-]+)">.*?</h3><ul class="all-items">(.*?)</ul>', index):
        for href, name in re.findall(r'<a href="([^"]+)">(.*?)</a>', items):
            kind = href.rsplit("/", 1)[-1].split(".", 1)[0]
            lines.append(f"{kind} {krate}::{html.unescape(name)}")
            if kind in ("macro", "derive", "attr"):
                continue
            page = (base / href).read_text()
            if kind in ("struct", "enum", "trait", "union"):
                # Its header: attributes (#[non_exhaustive]), generics, bounds, supertraits.
                decl = DECL.search(page)
                if decl:
                    head = re.split(r"[{;]", text(decl.group(1)), maxsplit=1)[0].strip()
                    lines.append(f"    decl: {head}")
                lines.extend(f"    {m}" for m in members(page))
            else:
                decl = DECL.search(page)
                if decl:
                    lines.append(f"    {text(decl.group(1))}")
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
