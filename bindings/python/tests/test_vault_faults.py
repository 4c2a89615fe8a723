"""KMS faults behave as in a Rust server: through an OpenBao outage cached
keys keep sealing and unsealing (within `outage_grace`); when the KEK's
`decrypt` is revoked, the key is dropped once its cached unwrap expires
(`max_key_age`) and the codec fails closed."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from conftest import BAO, TIMING, Keyset, Service, wait_for
from mcp.server.request_state import InvalidRequestState

from stateseal import KeysetCodec

POLICY = """
path "transit/decrypt/stateseal" { capabilities = ["update"] }
path "transit/datakey/plaintext/stateseal" { capabilities = ["update"] }
path "secret/data/stateseal/keyset" { capabilities = ["read"] }
"""


def sealing(codec: KeysetCodec) -> bool:
    try:
        return codec.unseal(codec.seal(b"still here")) == b"still here"
    except InvalidRequestState:
        return False


def test_an_openbao_outage_keeps_cached_keys_serving(
    openbao: Service, vault_keyset: Keyset, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in vault_keyset.env.items():
        monkeypatch.setenv(k, v)
    codec = KeysetCodec.start(
        vault_keyset.store, max_key_age=2, outage_grace=600, **vault_keyset.pins(), **TIMING  # type: ignore[arg-type]
    )
    token = codec.seal(b"before")
    openbao.stop()
    # Refreshes fail (store and KMS are down), past max_key_age: the keys keep serving.
    wait_for("a failed refresh", lambda: codec.status()["last_error"])
    # The cached unwraps outlive max_key_age (the codec's clock is the system clock).
    wait_for("max_key_age to pass", lambda: time.time() - codec.status()["last_store_read"] > 2.5, timeout=10)
    assert codec.status()["last_error"] is not None
    assert sealing(codec)
    assert codec.unseal(token) == b"before"
    codec.close()


def test_revoked_decrypt_drops_the_key_after_max_key_age(
    openbao: Service, vault_keyset: Keyset, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    bao = openbao.bao  # type: ignore[attr-defined]
    (tmp_path / "policy.hcl").write_text(POLICY)
    bao("policy", "write", "stateseal-server", str(tmp_path / "policy.hcl"))
    out = subprocess.run(
        [BAO, "token", "create", "-policy=stateseal-server", "-format=json"],
        capture_output=True, check=True, env={**os.environ, **vault_keyset.env},
    )
    server_token = json.loads(out.stdout)["auth"]["client_token"]
    monkeypatch.setenv("VAULT_ADDR", vault_keyset.env["VAULT_ADDR"])
    monkeypatch.setenv("VAULT_TOKEN", server_token)
    codec = KeysetCodec.start(
        vault_keyset.store, max_key_age=2, outage_grace=600, seal_reservation_block=0, **vault_keyset.pins(),
        **TIMING,  # type: ignore[arg-type]
    )
    assert sealing(codec)
    (tmp_path / "policy.hcl").write_text(POLICY.replace('path "transit/decrypt/stateseal" { capabilities = ["update"] }', ""))
    bao("policy", "write", "stateseal-server", str(tmp_path / "policy.hcl"))
    # Denied is not an outage: once the cached unwrap is older than max_key_age the key goes.
    wait_for("the revoked key to be dropped", lambda: not sealing(codec), timeout=20)
    with pytest.raises(InvalidRequestState, match="not ready"):
        codec.seal(b"x")
    assert "denied" in (codec.status()["last_error"] or "").lower() or not codec.status()["ready"]
    codec.close()
