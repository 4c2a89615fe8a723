#!/usr/bin/env bash
# Runs stateseal's in-process bench and the Python SDK's own code on the same
# workload, interleaved in the same run (ROUNDS times each, default 3), and
# prints medians and ratios. Usage: scripts/bench-compare.sh [SIZES] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="${1:-64,1024,16384}"
rounds="${2:-3}"
py="$(scripts/py-env.sh)"
cargo build --release -q -p stateseal-cli
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  target/release/stateseal bench --json --sizes "$sizes" >>"$out"
  "$py" scripts/bench-python.py "$sizes" >>"$out"
done
"$py" - "$out" <<'PY'
import json, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        runs[(r.get("impl", "rust"), r["op"], r["state_bytes"])].append(r["ns_per_op"])
        if "ratio_to_raw" in r:
            runs[("ratio", r["op"], r["state_bytes"])].append(r["ratio_to_raw"])
med = {k: statistics.median(v) for k, v in runs.items()}
print(f'{"op":<7} {"state_B":>7} {"rust_ns":>9} {"python_ns":>10} {"python/rust":>11} {"raw_ns":>8} {"rust/raw":>8}')
for (impl, op, size) in sorted(k for k in med if k[0] == "rust" and k[1] in ("mint", "verify")):
    ns = med[(impl, op, size)]
    p = med[("python", op, size)]
    raw = med[("rust", "raw_seal" if op == "mint" else "raw_open", size)]
    # rust/raw: median of the ratios measured batch by batch, alternating with the raw floor.
    print(f"{op:<7} {size:>7} {ns:>9.0f} {p:>10.0f} {p/ns:>10.1f}x {raw:>8.0f} {med[('ratio', op, size)]:>7.2f}x")
PY
