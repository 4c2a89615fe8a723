"""The Python SDK's boundary (`RequestStateBoundary._seal` / `_unseal`) with
`KeysetCodec` against the SDK's built-in `AESGCMRequestStateCodec`, in the
same run, at 64 B / 1 KiB / 16 KiB of state: medians of repeated timings.

    python bench_codec.py KEYSET_STORE_URI [--rounds N]

Prints one JSON line per size: medians in microseconds and the ratio
KeysetCodec / built-in (below 1: the binding is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from types import SimpleNamespace

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from stateseal import KeysetCodec

PARAMS = {"name": "deploy", "arguments": {"env": "prod"}}


def per_call(fn, batch: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(batch):
        fn()
    return (time.perf_counter_ns() - start) / batch / 1000


def measure(boundary: RequestStateBoundary, state: str, rounds: int, batch: int) -> dict[str, float]:
    ctx = SimpleNamespace(method="tools/call", params=PARAMS)
    token = boundary._seal(ctx, state)
    echo = SimpleNamespace(method="tools/call", params={**PARAMS, "requestState": token})
    seal = [per_call(lambda: boundary._seal(ctx, state), batch) for _ in range(rounds)]
    unseal = [per_call(lambda: boundary._unseal(echo), batch) for _ in range(rounds)]
    return {"seal_us": statistics.median(seal), "unseal_us": statistics.median(unseal)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--allow-local-kek", action="store_true")
    args = parser.parse_args()
    keyset = KeysetCodec.start(args.store, allow_local_kek=args.allow_local_kek)
    codecs = {
        "keyset": RequestStateSecurity(codec=keyset, bind_principal=lambda ctx: "alice"),
        "builtin": RequestStateSecurity(keys=[os.urandom(32)], bind_principal=lambda ctx: "alice"),
    }
    for size in (64, 1024, 16384):
        state = "x" * size
        batch = 2000 if size < 16384 else 400
        # Interleaved, so drift in the machine's speed hits both alike.
        results: dict[str, list[dict[str, float]]] = {name: [] for name in codecs}
        for _ in range(3):
            for name, security in codecs.items():
                b = RequestStateBoundary(security, default_audience="bench")
                results[name].append(measure(b, state, args.rounds, batch))
        med = {
            name: {k: statistics.median(r[k] for r in runs) for k in ("seal_us", "unseal_us")}
            for name, runs in results.items()
        }
        print(json.dumps({
            "size": size,
            "keyset": med["keyset"],
            "builtin": med["builtin"],
            "ratio_seal": med["keyset"]["seal_us"] / med["builtin"]["seal_us"],
            "ratio_unseal": med["keyset"]["unseal_us"] / med["builtin"]["unseal_us"],
        }), flush=True)
    keyset.close()


if __name__ == "__main__":
    main()
