"""The installed package's quick check, with nothing but the package (no SDK,
no Rust toolchain): a keyset created in a temporary directory under a local
KEK, a state sealed and opened, a tampered one refused without its reason
leaking the token, a bad setting refused by name. The release workflow runs
it on every platform's wheel; scripts/install-check.sh on the Linux one.

    python smoke.py [OUT]   # OUT: also write the keyset's store URI and a sealed token there
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile

import stateseal
from stateseal import InvalidRequestState, KeysetCodec


def main() -> None:
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else None
    directory = pathlib.Path(out.parent if out else tempfile.mkdtemp(prefix="stateseal-smoke-"))
    kek = directory / "kek.bin"
    if not kek.exists():
        kek.write_bytes(os.urandom(32))
        kek.chmod(0o600)
    store = (directory / "keyset.json").as_uri()
    codec = KeysetCodec.start(
        store, kek=f"local://{kek}", create_if_missing=True, allow_local_kek=True, ttl=600
    )
    token = codec.seal(b"step-2")
    assert token.startswith("v2."), token
    assert codec.unseal(token) == b"step-2"
    tampered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    try:
        codec.unseal(tampered)
    except InvalidRequestState as e:
        assert tampered not in str(e), "a refusal quotes the token"
    else:
        raise AssertionError("a tampered token opened")
    status = codec.status()
    assert status["ready"] and status["generation"] >= 1, status
    try:
        KeysetCodec.start(store, ttl=-1)
    except ValueError as e:
        assert "ttl" in str(e), e
    else:
        raise AssertionError("a negative ttl was accepted")
    if out:
        out.write_text(json.dumps({"store": store, "kek": f"local://{kek}", "token": token}))
    codec.close()
    print(f"stateseal {stateseal.__name__} from {pathlib.Path(stateseal.__file__).parent}: ok")


if __name__ == "__main__":
    main()
