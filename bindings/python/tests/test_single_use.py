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


def start(keyset: Keyset, redis: Redis) -> KeysetCodec:
    return KeysetCodec.start(
        keyset.store,
        allow_local_kek=True,
        replay_store=redis.uri,
        single_use_tools=["transfer"],
        **TIMING,  # type: ignore[arg-type]
    )


def boundary(codec: KeysetCodec, cls: type[sdk.RequestStateBoundary] = stateseal.RequestStateBoundary) -> sdk.RequestStateBoundary:
    security = sdk.RequestStateSecurity(codec=codec, ttl=TIMING["ttl"], bind_principal=lambda ctx: "alice")
    return cls(security, default_audience="bank")


def mint(b: sdk.RequestStateBoundary, params: dict[str, object]) -> str:
    return b._seal(SimpleNamespace(method="tools/call", params=params), STATE)


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
        once, multi = mint(b, TRANSFER), mint(b, DEPLOY)
        redis.stop()
        started = time.monotonic()
        assert refused(b, TRANSFER, once, caplog) == "replay store unavailable"
        assert time.monotonic() - started < 5
        assert verify(b, DEPLOY, multi) == STATE
        redis.start()
        deadline = time.monotonic() + 10
        while True:  # back: the state refused unrecorded is accepted once the store answers
            try:
                assert verify(b, TRANSFER, once) == STATE
                break
            except MCPError:
                assert time.monotonic() < deadline, "the store never came back"
                time.sleep(0.1)
    finally:
        codec.close()


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
