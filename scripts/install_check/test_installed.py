"""The installed packages doing the real thing (run by scripts/install-check.sh
in a fresh venv, beside a fresh npm project, with no Rust toolchain on PATH):
a Python MCP server of the Python SDK (`fleet_server.py`, `KeysetCodec` from
the wheel) and a Node server of the TypeScript SDK (`fleet_server.mjs`,
`createStatesealCodec` from the npm tarballs) on one file keyset. The real
Python client mints a round on each and finishes it on the other; a tampered
state, another user's and one for other arguments are refused by both."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import subprocess
import sys

import anyio
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE_PROJECT = pathlib.Path(os.environ["STATESEAL_INSTALL_NODE"])
sys.path.insert(0, str(ROOT / "bindings/python/tests"))

import conftest as fleet  # noqa: E402  (the package tests' ports, services and timing)
from issuer import Issuer  # noqa: E402
from test_mixed_fleet import first_round, refused, second_round, session, tamper  # noqa: E402

import stateseal  # noqa: E402
from stateseal import KeysetCodec  # noqa: E402


def test_nothing_comes_from_a_toolchain_or_the_repository() -> None:
    assert shutil.which("cargo") is None and shutil.which("rustc") is None
    site = pathlib.Path(stateseal.__file__).resolve()
    assert pathlib.Path(sys.prefix).resolve() in site.parents, site
    resolved = subprocess.run(
        ["node", "-p", "require.resolve('stateseal-linux-x64-gnu')"],
        cwd=NODE_PROJECT, capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert resolved.startswith(str(NODE_PROJECT / "node_modules")), resolved
    assert resolved.endswith("stateseal.linux-x64-gnu.node"), resolved


@pytest.fixture
def keyset(tmp_path: pathlib.Path) -> fleet.Keyset:
    """A file keyset under a local KEK, created by the Python package itself."""
    kek_file = tmp_path / "kek.bin"
    kek_file.write_bytes(os.urandom(32))
    kek_file.chmod(0o600)
    kek, store = f"local://{kek_file}", (tmp_path / "keyset.json").as_uri()
    KeysetCodec.start(store, kek=kek, create_if_missing=True, allow_local_kek=True, **fleet.TIMING).close()
    # The pins the servers need: the keyset id, from the document's payload (base64 JSON).
    payload = json.loads(base64.b64decode(json.loads((tmp_path / "keyset.json").read_text())["payload"]))
    return fleet.Keyset(store, kek, {}, tmp_path, payload["id"], [kek])


@pytest.fixture(scope="module")
def issuer():
    it = Issuer()
    yield it
    it.close()


def test_a_round_minted_on_one_language_finishes_on_the_other(keyset, tmp_path, issuer) -> None:
    fleet.NODE_SERVER = NODE_PROJECT / "fleet_server.mjs"
    members = {
        "python": fleet.python_server(keyset, tmp_path / "python.log", issuer),
        "node": fleet.node_server(keyset, tmp_path / "node.log", issuer),
    }
    try:
        anyio.run(rounds, {name: m.url for name, m in members.items()}, issuer)
    finally:
        for m in members.values():
            m.stop()


async def rounds(urls: dict[str, str], issuer: Issuer) -> None:
    for a, b in [("python", "node"), ("node", "python")]:
        async with (
            session(urls[a], issuer.token("alice")) as alice_a,
            session(urls[b], issuer.token("alice")) as alice_b,
            session(urls[b], issuer.token("bob")) as bob_b,
        ):
            for i in range(3):
                env = f"{a}-{i}"
                state = await first_round(alice_a, env)
                assert await refused(alice_b, env, tamper(state)), f"tampered, minted on {a}, at {b}"
                assert await refused(bob_b, env, state), f"another user, minted on {a}, at {b}"
                assert await refused(alice_b, env + "-x", state), f"other arguments, minted on {a}, at {b}"
                assert await second_round(alice_b, env, state), f"minted on {a}, refused on {b}"
