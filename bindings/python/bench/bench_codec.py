"""The Python SDK's boundary (`RequestStateBoundary._seal` / `_unseal`) with
`KeysetCodec` against the SDK's built-in `AESGCMRequestStateCodec`, in the
same run, at 64 B / 1 KiB / 16 KiB of state: medians of repeated timings.

    python bench_codec.py KEYSET_STORE_URI [--rounds N] [--runs N] [--allow-local-kek]

Per size and run, one JSON line: medians in microseconds of the boundary's
seal and unseal, of the round (unseal the echo, seal the next state: what a
server does per request), and of the codec part alone (the codec's `seal`
then `unseal` of the same payload, the rest of the boundary's work left
out), each with the ratio built-in / KeysetCodec (above 1: the binding is
faster). The two codecs are timed alternately, so drift in the machine's
speed hits both alike.
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

# The workload of `stateseal bench` and scripts/bench-python.py: a tools/call with five arguments.
PARAMS = {
    "name": "deploy",
    "arguments": {"env": "prod", "region": "eu-west-1", "replicas": 3, "dry_run": False, "ratio": 0.25},
}


def per_call(fn, batch: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(batch):
        fn()
    return (time.perf_counter_ns() - start) / batch / 1000


def measure(security: RequestStateSecurity, state: str, rounds: int, batch: int) -> dict[str, float]:
    boundary = RequestStateBoundary(security, default_audience="bench")
    codec = security.codec
    ctx = SimpleNamespace(method="tools/call", params=PARAMS)
    token = boundary._seal(ctx, state)
    echo = SimpleNamespace(method="tools/call", params={**PARAMS, "requestState": token})
    payload = state.encode()
    sealed = codec.seal(payload)
    assert codec.unseal(sealed) == payload

    def round_trip() -> None:
        boundary._unseal(echo)
        boundary._seal(ctx, state)

    def codec_part() -> None:
        codec.unseal(codec.seal(payload))

    ops = {
        "seal_us": lambda: boundary._seal(ctx, state),
        "unseal_us": lambda: boundary._unseal(echo),
        "round_us": round_trip,
        "codec_us": codec_part,
    }
    return {name: statistics.median(per_call(fn, batch) for _ in range(rounds)) for name, fn in ops.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--allow-local-kek", action="store_true")
    args = parser.parse_args()
    keyset = KeysetCodec.start(args.store, allow_local_kek=args.allow_local_kek)
    codecs = {
        "keyset": RequestStateSecurity(codec=keyset, bind_principal=lambda ctx: "alice"),
        "builtin": RequestStateSecurity(keys=[os.urandom(32)], bind_principal=lambda ctx: "alice"),
    }
    for run in range(1, args.runs + 1):
        for size in (64, 1024, 16384):
            state = "x" * size
            batch = 2000 if size < 16384 else 400
            results: dict[str, list[dict[str, float]]] = {name: [] for name in codecs}
            for _ in range(3):
                for name, security in codecs.items():
                    results[name].append(measure(security, state, args.rounds, batch))
            fields = ("seal_us", "unseal_us", "round_us", "codec_us")
            med = {name: {k: statistics.median(r[k] for r in runs) for k in fields} for name, runs in results.items()}
            line = {"run": run, "size": size, "keyset": med["keyset"], "builtin": med["builtin"]}
            for k in fields:
                line[f"builtin_over_keyset_{k[:-3]}"] = round(med["builtin"][k] / med["keyset"][k], 2)
            print(json.dumps(line), flush=True)
    keyset.close()


if __name__ == "__main__":
    main()
