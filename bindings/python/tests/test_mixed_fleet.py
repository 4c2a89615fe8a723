"""A three-language fleet: the Rust example server, a Python `MCPServer` (the
SDK's boundary over `KeysetCodec`) and a Node server of the TypeScript SDK
(`createStatesealCodec` over the Node package's `KeysetCodec`) share one
keyset. The real Python MCP client holds conversations whose first round
lands on each member in turn and whose second lands on a random other one,
while the CLI rotates the keyset three times; no round may be rejected, and
every attack is rejected by every member. Once on a file store under a local
KEK, once on OpenBao (KV store, transit KEK)."""

from __future__ import annotations

import contextlib
import json
import random
import time
from dataclasses import dataclass, field

import anyio
from conftest import TIMING, Keyset, cli, node_server, python_server, rust_server, start_all
from issuer import Issuer
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ElicitResult, InputRequiredResult

YES = {"confirm": ElicitResult(action="accept", content={"ok": True})}
NAMES = ["rust", "python", "node"]


@dataclass
class Tally:
    rounds: int = 0
    rejected: list[str] = field(default_factory=list)
    attacks: int = 0
    attacks_accepted: list[str] = field(default_factory=list)
    phases: set[int] = field(default_factory=set)
    rotations: int = 0
    # Rounds by (member that minted, member that finished).
    pairs: dict[str, int] = field(default_factory=dict)


async def confirm(_context: object, _params: object) -> ElicitResult:
    """The client answers its rounds itself; this declares the form-elicitation capability
    (which the TypeScript SDK's server checks before asking)."""
    return YES["confirm"]


@contextlib.asynccontextmanager
async def session(url: str, bearer: str):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
    async with client, streamable_http_client(f"{url}/mcp", http_client=client) as (read, write):
        async with ClientSession(read, write, elicitation_callback=confirm) as s:
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


async def refused(s: ClientSession, env: str, state: str) -> bool:
    """Whether the server's boundary refused the echo (-32602, the fixed message): not
    the handler, which would also decline a state for other arguments."""
    try:
        await s.call_tool("deploy", {"env": env}, input_responses=YES, request_state=state, allow_input_required=True)
    except MCPError as e:
        return e.error.code == -32602 and e.error.message == "Invalid or expired requestState"
    return False


def tamper(state: str) -> str:
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]


def status(keyset: Keyset) -> dict:
    return json.loads(cli("status", "--store", keyset.store, "--json", env=keyset.env, check=False).stdout)


async def run_fleet(keyset: Keyset, tmp_path, issuer: Issuer, starters=None, names=None) -> Tally:
    """The fleet's conversations, rotations and attacks, over the members
    `starters` start (default: the Rust, Python and Node servers)."""
    labels = names or NAMES
    # A member that fails to start stops those started before it.
    members = start_all(
        *(
            starters
            or (
                lambda: rust_server(keyset, tmp_path / "rust.log", issuer),
                lambda: python_server(keyset, tmp_path / "python.log", issuer),
                lambda: node_server(keyset, tmp_path / "node.log", issuer),
            )
        )
    )
    tally = Tally()
    pick = random.Random(0x5EA1)
    try:
        async with contextlib.AsyncExitStack() as stack:
            servers = [m.url for m in members]
            alice = [await stack.enter_async_context(session(u, issuer.token("alice"))) for u in servers]
            bob = [await stack.enter_async_context(session(u, issuer.token("bob"))) for u in servers]
            held: list[tuple[float, str, str]] = []  # (minted at, env, state) for the expiry attack
            deadline = time.monotonic() + 120
            while tally.rotations < 3 or 3 not in tally.phases or tally.rounds < 200:
                assert time.monotonic() < deadline, f"the fleet did not finish: {tally}"
                st = status(keyset)
                tally.phases.add(st.get("phase", 0))
                if st.get("phase") == 3 and tally.rotations < 3 and tally.rounds > 20:
                    cli("rotate", "--store", keyset.store, env=keyset.env)
                    tally.rotations += 1
                for a in range(len(servers)):
                    b = pick.choice([i for i in range(len(servers)) if i != a])
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
                                if not await refused(s, e, tok):
                                    tally.attacks_accepted.append(f"{name} at {servers[target]}")
                    tally.rounds += 1
                    pair = f"{labels[a]}->{labels[b]}"
                    tally.pairs[pair] = tally.pairs.get(pair, 0) + 1
                    if not await second_round(alice[b], env, state):
                        tally.rejected.append(f"round {env}: minted at {servers[a]}, refused at {servers[b]}")
                # States older than T + S are expired everywhere.
                stale = [h for h in held if time.monotonic() - h[0] > TIMING["ttl"] + TIMING["max_skew"] + 1]
                for h in stale:
                    held.remove(h)
                    for target in range(len(servers)):
                        tally.attacks += 1
                        if not await refused(alice[target], h[1], h[2]):
                            tally.attacks_accepted.append(f"expired at {servers[target]}")
                await anyio.sleep(0.05)
    finally:
        for m in members:
            m.stop()
    return tally


def check(tally: Tally) -> None:
    print(
        f"mixed fleet: {tally.rounds} rounds, {len(tally.rejected)} rejected, {tally.rotations} rotations, "
        f"phases {sorted(tally.phases)}, {tally.attacks} attacks, {len(tally.attacks_accepted)} not refused by the boundary; "
        f"rounds minted->finished {dict(sorted(tally.pairs.items()))}"
    )
    assert len(tally.pairs) == 6, tally.pairs  # every member finished every other's rounds
    assert tally.rotations == 3
    assert {1, 2, 3} <= tally.phases
    assert not tally.rejected, tally.rejected[:5]
    assert tally.attacks > 75
    assert not tally.attacks_accepted, tally.attacks_accepted


def test_mixed_fleet_on_a_file_keyset_under_a_local_kek(local_keyset: Keyset, tmp_path, issuer: Issuer) -> None:
    check(anyio.run(run_fleet, local_keyset, tmp_path, issuer))


def test_mixed_fleet_on_openbao(vault_keyset: Keyset, tmp_path, issuer: Issuer) -> None:
    check(anyio.run(run_fleet, vault_keyset, tmp_path, issuer))
