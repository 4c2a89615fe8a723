"""A mixed fleet: the Rust example server and a Python `MCPServer` (the SDK's
boundary over `KeysetCodec`) share one keyset. The real Python MCP client
holds conversations whose two rounds alternate between them while the CLI
rotates the keyset three times; no round may be rejected, and every attack is
rejected by both servers. Once on a file store under a local KEK, once on
OpenBao (KV store, transit KEK)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field

import anyio
from conftest import TIMING, Keyset, cli, python_server, rust_server
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ElicitResult, InputRequiredResult

YES = {"confirm": ElicitResult(action="accept", content={"ok": True})}


@dataclass
class Tally:
    rounds: int = 0
    rejected: list[str] = field(default_factory=list)
    attacks: int = 0
    attacks_accepted: list[str] = field(default_factory=list)
    phases: set[int] = field(default_factory=set)
    rotations: int = 0


@contextlib.asynccontextmanager
async def session(url: str, bearer: str):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
    async with client, streamable_http_client(f"{url}/mcp", http_client=client) as (read, write):
        async with ClientSession(read, write) as s:
            await s.discover()
            yield s


async def first_round(s: ClientSession, env: str) -> str:
    r = await s.call_tool("deploy", {"env": env}, allow_input_required=True)
    assert isinstance(r, InputRequiredResult), r
    assert r.request_state
    return r.request_state


async def second_round(s: ClientSession, env: str, state: str) -> bool:
    """Whether the server accepted the echo and finished the deployment."""
    try:
        r = await s.call_tool(
            "deploy", {"env": env}, input_responses=YES, request_state=state, allow_input_required=True
        )
    except MCPError:
        return False
    if isinstance(r, CallToolResult):
        assert r.content[0].text == f"deployed to {env}", r
        return True
    return False


def tamper(state: str) -> str:
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]


def status(keyset: Keyset) -> dict:
    return json.loads(cli("status", "--store", keyset.store, "--json", env=keyset.env, check=False).stdout)


async def run_fleet(keyset: Keyset, tmp_path) -> Tally:
    rust = rust_server(keyset, tmp_path / "rust.log")
    python = python_server(keyset, tmp_path / "python.log")
    tally = Tally()
    try:
        async with contextlib.AsyncExitStack() as stack:
            servers = [rust.url, python.url]
            alice = [await stack.enter_async_context(session(u, "alice-token")) for u in servers]
            bob = [await stack.enter_async_context(session(u, "bob-token")) for u in servers]
            held: list[tuple[float, str, str]] = []  # (minted at, env, state) for the expiry attack
            deadline = time.monotonic() + 120
            while tally.rotations < 3 or 3 not in tally.phases or tally.rounds < 200:
                assert time.monotonic() < deadline, f"the fleet did not finish: {tally}"
                st = status(keyset)
                tally.phases.add(st.get("phase", 0))
                if st.get("phase") == 3 and tally.rotations < 3 and tally.rounds > 20:
                    cli("rotate", "--store", keyset.store, env=keyset.env)
                    tally.rotations += 1
                for a in (0, 1):
                    b = 1 - a
                    env = f"e{tally.rounds}"
                    state = await first_round(alice[a], env)
                    if tally.rounds % 25 == 0:
                        held.append((time.monotonic(), env, state))
                        # Attacks on the fresh state, at the other server and at the minting one.
                        for target in (a, b):
                            for name, (s, e, tok) in {
                                "tampered": (alice[target], env, tamper(state)),
                                "other user": (bob[target], env, state),
                                "other arguments": (alice[target], env + "-x", state),
                            }.items():
                                tally.attacks += 1
                                if await second_round(s, e, tok):
                                    tally.attacks_accepted.append(f"{name} at {servers[target]}")
                    tally.rounds += 1
                    if not await second_round(alice[b], env, state):
                        tally.rejected.append(f"round {env}: minted at {servers[a]}, refused at {servers[b]}")
                # States older than T + S are expired everywhere.
                stale = [h for h in held if time.monotonic() - h[0] > TIMING["ttl"] + TIMING["max_skew"] + 1]
                for h in stale:
                    held.remove(h)
                    for target in (0, 1):
                        tally.attacks += 1
                        if await second_round(alice[target], h[1], h[2]):
                            tally.attacks_accepted.append(f"expired at {servers[target]}")
                await anyio.sleep(0.05)
    finally:
        rust.stop()
        python.stop()
    return tally


def check(tally: Tally) -> None:
    print(
        f"mixed fleet: {tally.rounds} rounds, {len(tally.rejected)} rejected, {tally.rotations} rotations, "
        f"phases {sorted(tally.phases)}, {tally.attacks} attacks, {len(tally.attacks_accepted)} accepted"
    )
    assert tally.rotations == 3
    assert {1, 2, 3} <= tally.phases
    assert not tally.rejected, tally.rejected[:5]
    assert tally.attacks > 50
    assert not tally.attacks_accepted, tally.attacks_accepted


def test_mixed_fleet_on_a_file_keyset_under_a_local_kek(local_keyset: Keyset, tmp_path) -> None:
    check(anyio.run(run_fleet, local_keyset, tmp_path))


def test_mixed_fleet_on_openbao(vault_keyset: Keyset, tmp_path) -> None:
    check(anyio.run(run_fleet, vault_keyset, tmp_path))
