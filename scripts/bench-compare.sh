#!/usr/bin/env bash
# Runs stateseal's in-process bench and the Python SDK's own code on the same
# workload, in the same run, and prints medians and ratios (Python / Rust).
# Usage: scripts/bench-compare.sh [SIZES]   (default 64,1024,16384)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="${1:-64,1024,16384}"
py="$(scripts/py-env.sh)"
cargo build --release -q -p stateseal-cli
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
target/release/stateseal bench --json --sizes "$sizes" >"$out"
"$py" scripts/bench-python.py "$sizes" >>"$out"
"$py" - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rust = {(r["op"], r["state_bytes"]): r["ns_per_op"] for r in rows if r.get("impl") != "python"}
py = {(r["op"], r["state_bytes"]): r["ns_per_op"] for r in rows if r.get("impl") == "python"}
print(f'{"op":<7} {"state":>6} {"rust_ns":>9} {"python_ns":>10} {"py/rust":>8} {"raw_ns":>8} {"rust/raw":>8}')
for (op, size), ns in sorted(rust.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    if op not in ("mint", "verify"):
        continue
    raw = rust[("raw_seal" if op == "mint" else "raw_open", size)]
    p = py[(op, size)]
    print(f"{op:<7} {size:>6} {ns:>9.0f} {p:>10.0f} {p/ns:>7.1f}x {raw:>8.0f} {ns/raw:>7.2f}x")
PY
