#!/usr/bin/env python3
"""Times the Python MCP SDK's own requestState code on stateseal's bench workload.

mint   = RequestStateBoundary._seal(ctx, state)   (request identity + claims + AES-GCM seal)
verify = RequestStateBoundary._unseal(ctx)        (AES-GCM unseal + claim checks + request identity)

Prints one JSON object per line: {"op","state_bytes","ns_per_op","impl":"python"}; the
median of repeated timeit batches.
"""
import json
import os
import statistics
import sys
import timeit
from types import SimpleNamespace

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

PARAMS = {
    "name": "deploy",
    "arguments": {"env": "prod", "region": "eu-west-1", "replicas": 3, "dry_run": False, "ratio": 0.25},
}


def median_ns(fn, budget_s):
    number = 1
    while True:
        t = timeit.timeit(fn, number=number)
        if t * 25 >= budget_s or number >= 1 << 22:
            break
        number *= 2
    samples = []
    deadline = timeit.default_timer() + budget_s
    while len(samples) < 5 or (timeit.default_timer() < deadline and len(samples) < 200):
        samples.append(timeit.timeit(fn, number=number) / number * 1e9)
    return statistics.median(samples)


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "64,1024,16384").split(",")]
    budget = float(os.environ.get("BENCH_SECONDS", "0.4"))
    security = RequestStateSecurity(keys=[os.urandom(32)], bind_principal=None)
    boundary = RequestStateBoundary(security, default_audience="bench")
    for size in sizes:
        state = "x" * size
        ctx = SimpleNamespace(method="tools/call", params=dict(PARAMS))
        token = boundary._seal(ctx, state)
        echo = SimpleNamespace(method="tools/call", params={**PARAMS, "requestState": token})
        assert boundary._unseal(echo)[0] == state
        for op, fn in (("mint", lambda: boundary._seal(ctx, state)), ("verify", lambda: boundary._unseal(echo))):
            ns = median_ns(fn, budget)
            print(json.dumps({"op": op, "state_bytes": size, "ns_per_op": round(ns, 1), "impl": "python"}), flush=True)


if __name__ == "__main__":
    main()
