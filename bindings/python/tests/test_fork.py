"""A codec used in a child after `os.fork()` (pre-fork servers build the app
in the parent): the child gets an instance of its own and never repeats the
parent's nonces; parent and child open each other's tokens."""

from __future__ import annotations

import base64
import json
import os
import signal
import time

from conftest import TIMING, Keyset

from stateseal import KeysetCodec

N = 2000


def nonce(token: str) -> bytes:
    """The whole nonce after the 4-byte key id: 12 bytes in v1., 24 in v2. (whose
    first half a batch of seals shares)."""
    body = token[3:]
    length = 24 if token.startswith("v2.") else 12
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))[4 : 4 + length]


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


def test_a_forked_child_with_many_threads_starts_once_without_deadlock(local_keyset: Keyset) -> None:
    """gunicorn --preload --threads: the child's first calls come from many
    threads at once; one starts the child's instance, the others wait for it
    without holding the GIL."""
    codec = KeysetCodec.start(local_keyset.store, allow_local_kek=True, **TIMING)  # type: ignore[arg-type]
    token = codec.seal(b"from the parent")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child, reports through the pipe
        import threading

        results: list[object] = []
        start = threading.Barrier(16)

        def work(i: int) -> None:
            start.wait()
            try:
                if i % 3 == 0:
                    results.append(codec.status()["pid"])
                elif i % 3 == 1:
                    results.append(codec.unseal(codec.seal(b"t%d" % i)).decode())
                else:
                    results.append(codec.unseal(token).decode())
            except BaseException as e:  # noqa: BLE001 - the parent asserts on the report
                results.append(repr(e))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with os.fdopen(write, "w") as w:
            w.write(json.dumps({"pid": os.getpid(), "results": results}))
        os._exit(0)
    os.close(write)
    # A deadlocked child never answers: give it 30 s, then fail (and kill it).
    deadline = time.monotonic() + 30
    while os.waitpid(child, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            raise AssertionError("the forked child deadlocked on its first concurrent calls")
        time.sleep(0.05)
    with os.fdopen(read) as r:
        report = json.loads(r.read())
    results = report["results"]
    assert len(results) == 16, results
    pids = [r for r in results if isinstance(r, int)]
    assert pids and all(p == report["pid"] for p in pids), results
    texts = [r for r in results if isinstance(r, str)]
    assert all(t == "from the parent" or t.startswith("t") for t in texts), results
    codec.close()
