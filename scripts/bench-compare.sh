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
        impl = r.get("impl", "rust")
        runs[(impl, r["op"], r["state_bytes"])].append(r["ns_per_op"])
        for k in ("ratio_to_raw", "with_identity_ns", "with_identity_ratio_to_raw"):
            if k in r:
                runs[(k, r["op"], r["state_bytes"])].append(r[k])
med = {k: statistics.median(v) for k, v in runs.items()}
# Python's _seal/_unseal digest the request themselves: compare them with identity + op.
print(f'{"op":<7} {"state_B":>7} {"rust_ns":>8} {"+id_ns":>8} {"python_ns":>10} {"py/(rust+id)":>12} {"raw_ns":>7} {"rust/raw":>8} {"(rust+id)/raw":>13}')
for (impl, op, size) in sorted(k for k in med if k[0] == "rust" and k[1] in ("mint", "verify")):
    ns = med[(impl, op, size)]
    with_id = med[("with_identity_ns", op, size)]
    p = med[("python", op, size)]
    raw = med[("rust", "raw_seal" if op == "mint" else "raw_open", size)]
    print(f"{op:<7} {size:>7} {ns:>8.0f} {with_id:>8.0f} {p:>10.0f} {p/with_id:>11.1f}x {raw:>7.0f} "
          f"{med[('ratio_to_raw', op, size)]:>7.2f}x {med[('with_identity_ratio_to_raw', op, size)]:>12.2f}x")
PY
