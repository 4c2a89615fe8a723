"""A codec used in a child after `os.fork()` (pre-fork servers build the app
in the parent): the child gets an instance of its own and never repeats the
parent's nonces; parent and child open each other's tokens."""

from __future__ import annotations

import base64
import json
import os

from conftest import TIMING, Keyset

from stateseal import KeysetCodec

N = 2000


def nonce(token: str) -> bytes:
    body = token[3:]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))[4:16]


def test_a_forked_child_never_repeats_the_parents_nonces(local_keyset: Keyset) -> None:
    codec = KeysetCodec.start(local_keyset.store, allow_local_kek=True, **TIMING)  # type: ignore[arg-type]
    parent_pid = codec.status()["pid"]
    codec.seal(b"warm")  # the parent has sealed before the fork
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child, reports through the pipe
        try:
            tokens = [codec.seal(b"child-%d" % i) for i in range(N)]
            report = {"pid": codec.status()["pid"], "tokens": tokens}
        except BaseException as e:  # noqa: BLE001 - the parent asserts on the report
            report = {"error": repr(e)}
        with os.fdopen(write, "w") as w:
            w.write(json.dumps(report))
        os._exit(0)
    os.close(write)
    parent_tokens = [codec.seal(b"parent-%d" % i) for i in range(N)]
    with os.fdopen(read) as r:
        report = json.loads(r.read())
    os.waitpid(child, 0)
    assert "error" not in report, report
    assert report["pid"] != parent_pid == os.getpid()
    child_nonces = {nonce(t) for t in report["tokens"]}
    parent_nonces = {nonce(t) for t in parent_tokens}
    assert len(child_nonces) == len(parent_nonces) == N
    assert not child_nonces & parent_nonces
    # Same keyset, same keys: each side opens the other's tokens.
    assert codec.unseal(report["tokens"][7]) == b"child-7"
    codec.close()
