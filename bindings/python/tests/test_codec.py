"""The SDK's codec contract for `KeysetCodec`, through the SDK's own boundary
(`RequestStateBoundary._seal` / `_unseal`), on a keyset rotated by the CLI."""

from __future__ import annotations

import base64
import logging
import os
from types import SimpleNamespace

import pytest
from conftest import TIMING, Keyset, cli, init, wait_for
from mcp.server.request_state import (
    AESGCMRequestStateCodec,
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateSecurity,
)
from mcp.shared.exceptions import MCPError

from stateseal import KeysetCodec, _native

PARAMS = {"name": "deploy", "arguments": {"env": "prod"}}


def start(keyset: Keyset, **extra: object) -> KeysetCodec:
    return KeysetCodec.start(keyset.store, allow_local_kek=True, **{**TIMING, **extra})  # type: ignore[arg-type]


def boundary(codec: KeysetCodec) -> RequestStateBoundary:
    security = RequestStateSecurity(codec=codec, ttl=TIMING["ttl"], bind_principal=lambda ctx: "alice")
    return RequestStateBoundary(security, default_audience="svc")


def mint(b: RequestStateBoundary, state: str = "awaiting-confirm") -> str:
    return b._seal(SimpleNamespace(method="tools/call", params=PARAMS), state)


def verify(b: RequestStateBoundary, token: str) -> str:
    state, _ = b._unseal(SimpleNamespace(method="tools/call", params={**PARAMS, "requestState": token}))
    return state


def rejected(b: RequestStateBoundary, token: str) -> bool:
    try:
        verify(b, token)
    except MCPError as e:
        assert e.error.code == -32602
        return True
    return False


def raw(token: str) -> bytes:
    body = token[3:]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))


def encode(body: bytes, prefix: str = "v2.") -> str:
    return prefix + base64.urlsafe_b64encode(body).decode().rstrip("=")


def test_round_trip_and_every_tampering_is_rejected(local_keyset: Keyset) -> None:
    with start(local_keyset) as codec:
        b = boundary(codec)
        token = mint(b)
        assert verify(b, token) == "awaiting-confirm"
        # A keyset key seals v2 tokens (XAES-256-GCM, no seal budget).
        assert token.startswith("v2.")
        # Any byte of the sealed body flipped.
        body = raw(token)
        for i in range(len(body)):
            flipped = bytearray(body)
            flipped[i] ^= 0x01
            assert rejected(b, encode(bytes(flipped))), f"byte {i}"
        # An alias base64 character (same bits modulo padding), junk, a newline, another prefix.
        last = token[-1]
        alias = chr(ord(last) + 1) if last not in "9_-zZ" else "A"
        for bad in [token[:-1] + alias, token + "A", token + "\n", "v1." + token[3:], token[3:], token + "=="]:
            assert rejected(b, bad), repr(bad[-8:])
        # The codec itself raises the SDK's exception, with a reason and nothing secret.
        with pytest.raises(InvalidRequestState) as e:
            codec.unseal(token[:-2])
        assert token[3:20] not in str(e.value)
        # Longer than the envelope's 1 MiB limit: refused as malformed before any decoding,
        # even when the rest would be a valid token (a well-formed body padded past the limit).
        huge = token + "A" * (1 << 20)
        with pytest.raises(InvalidRequestState, match="malformed"):
            codec.unseal(huge)
        padded = codec.seal(b"x" * ((1 << 20) * 3 // 4))
        assert len(padded) > 1 << 20
        with pytest.raises(InvalidRequestState, match="malformed"):
            codec.unseal(padded)


def test_unknown_key_and_key_id_transplant_are_rejected(local_keyset: Keyset, tmp_path) -> None:
    other = init(f"local://{tmp_path / 'other.bin'}", f"file://{tmp_path / 'other.json'}", tmp_path)
    with start(local_keyset) as ours, start(other) as theirs:
        foreign = mint(boundary(theirs))
        b = boundary(ours)
        assert rejected(b, foreign)
        with pytest.raises(InvalidRequestState, match="unknown key"):
            ours.unseal(foreign)
        # Our key id on their ciphertext: the id is bound under the tag.
        transplanted = raw(mint(b))[:4] + raw(foreign)[4:]
        assert rejected(b, encode(transplanted))
        # And the SDK's built-in codec cannot open ours, nor we its.
        builtin = AESGCMRequestStateCodec([b"k" * 32])
        with pytest.raises(InvalidRequestState):
            builtin.unseal(ours.seal(b"x"))
        with pytest.raises(InvalidRequestState):
            ours.unseal(builtin.seal(b"x"))


def test_a_state_sealed_before_a_rotation_lives_through_phases_one_and_two(local_keyset: Keyset) -> None:
    with start(local_keyset) as codec:
        b = boundary(codec)
        before = mint(b)
        first = codec.status()["primary"]
        cli("rotate", "--store", local_keyset.store)
        # Phase 1: the new key is known, the old one still seals.
        # (Generations also count the fleet's seal reservations: wait for the new key itself.)
        st = wait_for("the rotation to reach the codec", lambda: len((s := codec.status())["ring"]) == 2 and s)
        assert st["phase"] == 1 and st["primary"] == first
        assert verify(b, before) == "awaiting-confirm"
        # Phase 2 (after P = 3 s): the new key seals, the old one still unseals.
        st = wait_for("phase 2", lambda: (s := codec.status())["phase"] == 2 and s)
        assert st["primary"] != first and st["ring"][1] == first
        assert verify(b, before) == "awaiting-confirm"
        assert raw(mint(b))[:4] != raw(before)[:4]
        # Phase 3 (after T more): the old key retires; its tokens are unknown.
        wait_for("phase 3", lambda: codec.status()["phase"] == 3, timeout=30)
        assert codec.status()["ring"] == [codec.status()["primary"]]
        with pytest.raises(InvalidRequestState, match="unknown key"):
            codec.unseal(before)


def test_not_ready_and_closed_raise(local_keyset: Keyset, caplog: pytest.LogCaptureFixture) -> None:
    codec = start(local_keyset)
    token = codec.seal(b"payload")
    assert codec.unseal(token) == b"payload"
    codec.close()
    for call in (lambda: codec.seal(b"x"), lambda: codec.unseal(token)):
        with pytest.raises(InvalidRequestState, match="closed"):
            call()
    # Through the boundary a seal failure is an internal error, never an unsealed response.
    b = boundary(codec)
    with caplog.at_level(logging.DEBUG), pytest.raises(MCPError) as e:
        mint(b, "plaintext-canary-91c2")
    assert e.value.error.code == -32603
    assert "closed" in caplog.text
    assert "plaintext-canary-91c2" not in caplog.text


def test_timing_follows_the_keyset_unless_given(local_keyset: Keyset) -> None:
    # The keyset was created with T = 6 s: a codec started without timing takes
    # the fleet's profile (the default 600 s would be refused as longer than T).
    with KeysetCodec.start(local_keyset.store, allow_local_kek=True) as codec:
        assert codec.ttl == TIMING["ttl"]
        assert codec.unseal(codec.seal(b"x")) == b"x"
    with KeysetCodec.start(local_keyset.store, allow_local_kek=True, ttl=3) as shorter:
        assert shorter.ttl == 3
    with pytest.raises(RuntimeError, match="timing|ttl"):
        KeysetCodec.start(local_keyset.store, allow_local_kek=True, ttl=60, ready_timeout=0.5)


def test_from_env_reads_the_servers_variables(local_keyset: Keyset, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESEAL_STORE", local_keyset.store)
    monkeypatch.setenv("STATESEAL_ALLOW_LOCAL_KEK", "true")
    monkeypatch.setenv("STATESEAL_REFRESH_INTERVAL", "2")
    with KeysetCodec.from_env() as codec:
        assert codec.ttl == TIMING["ttl"]  # not given: the keyset's
        assert codec.unseal(codec.seal(b"x")) == b"x"
    monkeypatch.setenv("STATESEAL_TTL", "soon")
    with pytest.raises(ValueError, match="STATESEAL_TTL"):
        KeysetCodec.from_env()


def test_bad_settings_say_what_to_fix(local_keyset: Keyset) -> None:
    with pytest.raises(TypeError, match="refresh"):
        KeysetCodec.start(local_keyset.store, **{"refresh": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='unknown setting "refresh"'):
        _native.NativeCodec.start(local_keyset.store, {"refresh": 1})
    with pytest.raises(ValueError, match="ttl"):
        KeysetCodec.start(local_keyset.store, ttl=-1)
    # A local KEK is refused unless asked for; the error names the switch and no key.
    with pytest.raises(RuntimeError, match="allow_local_kek") as e:
        KeysetCodec.start(local_keyset.store, ready_timeout=0.5, **TIMING)  # type: ignore[arg-type]
    assert "kek.bin" not in str(e.value) or "local://" in str(e.value)
    with pytest.raises(RuntimeError, match="no keyset|gave no usable key"):
        KeysetCodec.start(f"file://{local_keyset.dir / 'missing.json'}", ready_timeout=0.5)


def test_a_bad_aead_setting_is_refused_before_the_keyset_is_read(tmp_path):
    """STATESEAL_AEAD picks the AES-256-GCM implementation once per process; another
    value than auto, aws-lc, ring or split stops KeysetCodec.start before any store read."""
    import subprocess
    import sys

    probe = (
        "import stateseal\n"
        "try:\n"
        f"    stateseal.KeysetCodec.start('file://{tmp_path}/missing.json', allow_local_kek=True)\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    env = {**os.environ, "STATESEAL_AEAD": "openssl"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert "STATESEAL_AEAD: unknown AEAD backend (expected auto, aws-lc, ring or split)" in out.stdout
    assert "missing.json" not in out.stdout
    assert list(tmp_path.iterdir()) == []
