"""Single-use states through the Python package, on a real Redis shared by
two codecs (two servers of a fleet): the SDK's claims of a single-use round
are sealed with the `u` claim, `stateseal.RequestStateBoundary` accepts the
state once (after the SDK's own checks) and refuses it `replayed` anywhere
after; with the store down single-use states are refused `replay store
unavailable` while multi-use states verify; the SDK's own boundary and a
direct `unseal` refuse single-use states."""

from __future__ import annotations

import logging
import os
import pathlib
import socket
import subprocess
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from conftest import ROOT, TIMING, Keyset, free_port
from mcp.server import request_state as sdk
from mcp.shared.exceptions import MCPError

import stateseal
from stateseal import InvalidRequestState, KeysetCodec

REDIS_SERVER = os.environ.get("STATESEAL_REDIS_SERVER", str(ROOT / "target/redis-env/redis-server"))
TRANSFER = {"name": "transfer", "arguments": {"to": "bob"}}
DEPLOY = {"name": "deploy", "arguments": {"env": "prod"}}
STATE = "secret-amount-42"


class Redis:
    """One `redis-server` on a free loopback port, stopped by its PID."""

    def __init__(self, dir: pathlib.Path) -> None:
        self.port, self.dir, self.proc = free_port(), dir, None
        self.uri = f"redis://127.0.0.1:{self.port}/0"
        # When the first codec connected (and set the store's epoch).
        self.epoch: float | None = None

    def start(self) -> None:
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.dir)]
        self.proc = subprocess.Popen([REDIS_SERVER, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, 9)
            self.proc.wait()


@pytest.fixture
def redis(tmp_path: pathlib.Path) -> Iterator[Redis]:
    server = Redis(tmp_path)
    server.start()
    yield server
    server.stop()


def start(keyset: Keyset, redis: Redis, single_use: bool = True) -> KeysetCodec:
    codec = KeysetCodec.start(
        keyset.store,
        allow_local_kek=True,
        replay_store=redis.uri,
        single_use_tools=["transfer"] if single_use else [],
        **TIMING,  # type: ignore[arg-type]
    )
    if single_use and redis.epoch is None:
        redis.epoch = time.time()
        settle(redis)
    return codec


def settle(redis: Redis) -> None:
    """Waits out the skew allowance S after the store's epoch: a single-use
    state issued within S of it is refused (a state minted before a loss may
    carry an `iat` up to S ahead). The cost of a new or emptied store."""
    assert redis.epoch is not None
    time.sleep(max(0.0, redis.epoch + TIMING["max_skew"] + 0.05 - time.time()))


def boundary(codec: KeysetCodec, cls: type[sdk.RequestStateBoundary] = stateseal.RequestStateBoundary) -> sdk.RequestStateBoundary:
    security = sdk.RequestStateSecurity(codec=codec, ttl=TIMING["ttl"], bind_principal=lambda ctx: "alice")
    return cls(security, default_audience="bank")


def mint(b: sdk.RequestStateBoundary, params: dict[str, object], state: str = STATE) -> str:
    return b._seal(SimpleNamespace(method="tools/call", params=params), state)


def verify(b: sdk.RequestStateBoundary, params: dict[str, object], token: str) -> str:
    state, _ = b._unseal(SimpleNamespace(method="tools/call", params={**params, "requestState": token}))
    return state


def refused(b: sdk.RequestStateBoundary, params: dict[str, object], token: str, caplog: pytest.LogCaptureFixture) -> str:
    """The logged reason of a refusal (the SDK's frozen -32602); the log never shows the token or the state."""
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(MCPError) as e:
        verify(b, params, token)
    assert e.value.error.code == -32602
    assert token not in caplog.text and STATE not in caplog.text and token not in str(e.value)
    return caplog.records[-1].getMessage().rsplit(": ", 1)[1]


def test_a_single_use_state_verifies_once_on_the_fleet(local_keyset: Keyset, redis: Redis, caplog: pytest.LogCaptureFixture) -> None:
    a, b = start(local_keyset, redis), start(local_keyset, redis)
    try:
        ba, bb = boundary(a), boundary(b)
        token = mint(ba, TRANSFER)
        assert token.startswith("v2.")
        assert verify(ba, TRANSFER, token) == STATE
        assert refused(bb, TRANSFER, token, caplog) == "replayed"
        assert refused(ba, TRANSFER, token, caplog) == "replayed"
        # A presentation the SDK's checks refuse is not recorded: the state stays unspent.
        fresh = mint(ba, TRANSFER)
        assert refused(bb, {**TRANSFER, "arguments": {"to": "mallory"}}, fresh, caplog) == "request binding"
        assert verify(bb, TRANSFER, fresh) == STATE
        # Another tool's states stay multi-use, on either server.
        multi = mint(ba, DEPLOY)
        for x in (ba, bb, ba):
            assert verify(x, DEPLOY, multi) == STATE
    finally:
        a.close()
        b.close()


def test_the_store_down_refuses_single_use_states_only(local_keyset: Keyset, redis: Redis, caplog: pytest.LogCaptureFixture) -> None:
    codec = start(local_keyset, redis)
    try:
        b = boundary(codec)
        spent = mint(b, TRANSFER)
        assert verify(b, TRANSFER, spent) == STATE
        once, multi = mint(b, TRANSFER), mint(b, DEPLOY)
        redis.stop()
        started = time.monotonic()
        assert refused(b, TRANSFER, once, caplog) == "replay store unavailable"
        assert time.monotonic() - started < 5
        assert verify(b, DEPLOY, multi) == STATE
        # Back with nothing persisted: its records are gone, so every state
        # issued before is refused (the spent one must not verify again), and
        # the first presentation reconnects and sets a new epoch.
        redis.start()
        assert refused(b, TRANSFER, spent, caplog) == "issued before the replay store's epoch"
        redis.epoch = time.time()
        assert refused(b, TRANSFER, once, caplog) == "issued before the replay store's epoch"
        settle(redis)
        fresh = mint(b, TRANSFER)
        assert verify(b, TRANSFER, fresh) == STATE
        assert refused(b, TRANSFER, fresh, caplog) == "replayed"
    finally:
        codec.close()


def test_a_lone_surrogate_in_a_single_use_state_completes_once(local_keyset: Keyset, redis: Redis, caplog: pytest.LogCaptureFixture) -> None:
    """The SDK escapes a lone surrogate in the state (its compact_json) and its
    claims parser reads it; ours must too, or the round is sealed multi-use."""
    codec = start(local_keyset, redis)
    try:
        b = boundary(codec)
        state = "env=\ud800"
        token = mint(b, TRANSFER, state)
        got, _ = b._unseal(SimpleNamespace(method="tools/call", params={**TRANSFER, "requestState": token}))
        assert got == state
        outcomes = []
        for _ in range(2):
            caplog.clear()
            with caplog.at_level(logging.WARNING), pytest.raises(MCPError):
                verify(b, TRANSFER, token)
            outcomes.append(caplog.records[-1].getMessage().rsplit(": ", 1)[1])
        assert outcomes == ["replayed", "replayed"]
    finally:
        codec.close()


def test_a_state_of_a_single_use_round_minted_without_the_claim_is_refused(local_keyset: Keyset, redis: Redis, caplog: pytest.LogCaptureFixture) -> None:
    strict, lax = start(local_keyset, redis), start(local_keyset, redis, single_use=False)
    try:
        plain = mint(boundary(lax), TRANSFER)
        assert verify(boundary(lax), TRANSFER, plain) == STATE
        for _ in range(2):
            assert refused(boundary(strict), TRANSFER, plain, caplog) == "single-use claim missing"
    finally:
        strict.close()
        lax.close()


def test_paths_that_record_nothing_refuse_single_use_states(local_keyset: Keyset, redis: Redis, caplog: pytest.LogCaptureFixture) -> None:
    codec = start(local_keyset, redis)
    try:
        token = mint(boundary(codec), TRANSFER)
        # The SDK's own boundary: its checks pass, but nothing would record the state.
        assert refused(boundary(codec, sdk.RequestStateBoundary), TRANSFER, token, caplog) == "replay store unavailable"
        with pytest.raises(InvalidRequestState, match="^replay store unavailable$"):
            codec.unseal(token)
        # Still unspent: the stateseal boundary records and accepts it.
        assert verify(boundary(codec), TRANSFER, token) == STATE
    finally:
        codec.close()


def test_single_use_settings_need_a_replay_store(local_keyset: Keyset) -> None:
    with pytest.raises(ValueError, match="replay_store"):
        KeysetCodec.start(local_keyset.store, allow_local_kek=True, single_use_prompts=["confirm"], **TIMING)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="single_use_tools: expected a list"):
        KeysetCodec.start(local_keyset.store, allow_local_kek=True, replay_store="memory://", single_use_tools=3)  # type: ignore[arg-type]


def test_install_boundary_replaces_the_sdks_in_an_mcpserver(local_keyset: Keyset) -> None:
    from mcp.server.mcpserver import MCPServer

    codec = KeysetCodec.start(local_keyset.store, allow_local_kek=True, **TIMING)  # type: ignore[arg-type]
    try:
        security = sdk.RequestStateSecurity(codec=codec, ttl=codec.ttl)
        server = MCPServer("bank", request_state_security=security)
        ours = stateseal.install_boundary(server)
        boundaries = [m for m in server._lowlevel_server.middleware if isinstance(m, sdk.RequestStateBoundary)]
        assert boundaries == [ours] and type(ours) is stateseal.RequestStateBoundary
        assert ours._security is security and ours._audience == "bank"
        with pytest.raises(ValueError):
            stateseal.install_boundary(server)
    finally:
        codec.close()
