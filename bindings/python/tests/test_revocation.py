"""Revocations in the Python package: `stateseal revoke` writes an entry into
the keyset, the codec's instance learns it at its next refresh, and
`stateseal.RequestStateBoundary` refuses the covered states with the Rust
servers' reason (`revoked`), with the principal the SDK bound, after the SDK's
own checks; everything else verifies. Under the SDK's own boundary the
principal is unknown, so a state a live revocation may cover is refused.
"""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import pytest
from conftest import TIMING, Keyset, cli
from mcp.server import request_state as sdk
from mcp.shared.exceptions import MCPError

import stateseal
from stateseal import KeysetCodec

DEPLOY = {"name": "deploy", "arguments": {"env": "prod"}}
STATE = "confirm-deploy"
ALICE = '["app-1","https://as.example","alice"]'
BOB = '["app-1","https://as.example","bob"]'


def boundary(codec: KeysetCodec, principal: str, cls: type[sdk.RequestStateBoundary] = stateseal.RequestStateBoundary) -> sdk.RequestStateBoundary:
    security = sdk.RequestStateSecurity(codec=codec, ttl=TIMING["ttl"], bind_principal=lambda ctx: principal)
    return cls(security, default_audience="svc")


def mint(b: sdk.RequestStateBoundary) -> str:
    return b._seal(SimpleNamespace(method="tools/call", params=DEPLOY), STATE)


def verify(b: sdk.RequestStateBoundary, token: str) -> str:
    state, _ = b._unseal(SimpleNamespace(method="tools/call", params={**DEPLOY, "requestState": token}))
    return state


def refused(b: sdk.RequestStateBoundary, token: str, caplog: pytest.LogCaptureFixture) -> str:
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(MCPError) as e:
        verify(b, token)
    assert e.value.error.code == -32602
    assert token not in caplog.text and "alice" not in caplog.text
    return caplog.records[-1].getMessage().rsplit(": ", 1)[1]


def revoke_alice(codec: KeysetCodec, keyset: Keyset) -> None:
    """`stateseal revoke` of ALICE's states issued until now, then waits (at most 5 s, R = 1 s) for the codec to adopt it."""
    generation = codec.status()["generation"]
    time.sleep(0.01)
    cli("revoke", "--store", keyset.store, "--principal", ALICE, env=keyset.env)
    deadline = time.monotonic() + 5
    while codec.status()["generation"] == generation:
        assert time.monotonic() < deadline, "the codec did not adopt the revocation within 5 s (R = 1 s)"
        time.sleep(0.1)


def test_a_revoked_principal_is_refused_after_a_refresh_and_nothing_else(local_keyset: Keyset, caplog: pytest.LogCaptureFixture) -> None:
    codec = KeysetCodec.start(local_keyset.store, allow_local_kek=True, **TIMING)  # type: ignore[arg-type]
    try:
        alice, bob = boundary(codec, ALICE), boundary(codec, BOB)
        early_alice, early_bob = mint(alice), mint(bob)
        revoke_alice(codec, local_keyset)
        assert refused(alice, early_alice, caplog) == "revoked"
        # Another principal's state, and alice's states issued after, verify.
        assert verify(bob, early_bob) == STATE
        assert verify(alice, mint(alice)) == STATE
        # The SDK's own boundary cannot give the codec the principal: a state a
        # live revocation may cover is refused there; a later one is not.
        theirs = boundary(codec, BOB, sdk.RequestStateBoundary)
        assert refused(theirs, early_bob, caplog) == "revoked"
        assert verify(theirs, mint(theirs)) == STATE
    finally:
        codec.close()


def test_a_principal_with_a_lone_surrogate_completes_as_it_does_under_the_sdk(local_keyset: Keyset, caplog: pytest.LogCaptureFixture) -> None:
    """The SDK binds and verifies a principal holding a lone surrogate; while a
    revocation is live, ours asks Rust about it, and that principal must cross
    (as WTF-8) rather than raise: the round completes, and a state of the
    principal the revocation names is still refused."""
    odd = '["app-1","https://as.example","al\udcffice"]'
    codec = KeysetCodec.start(local_keyset.store, allow_local_kek=True, **TIMING)  # type: ignore[arg-type]
    try:
        early = mint(boundary(codec, ALICE))
        revoke_alice(codec, local_keyset)
        ours, theirs = boundary(codec, odd), boundary(codec, odd, sdk.RequestStateBoundary)
        # Issued after the revocation: both boundaries take it.
        assert verify(theirs, mint(theirs)) == STATE
        assert verify(ours, mint(ours)) == STATE
        # Issued before: ours looks the principal up (not the one revoked) and takes it.
        older = mint(ours)
        assert verify(ours, older) == STATE
        assert refused(boundary(codec, ALICE), early, caplog) == "revoked"
    finally:
        codec.close()
