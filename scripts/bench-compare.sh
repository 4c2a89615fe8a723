#!/usr/bin/env bash
# Runs stateseal's in-process bench and the Python SDK's own code on the same
# workload, interleaved in the same run (ROUNDS rounds, default 3: each round
# runs Rust then Python), and prints medians and ratios. Ratios to Python are
# taken round by round (the two measurements of a round are minutes apart at
# most) and summarised as median [min-max] over the rounds.
# Usage: [BENCH_LIBC=host|debian13] scripts/bench-compare.sh [SIZES] [ROUNDS]
# BENCH_LIBC=debian13 runs both sides under Debian 13's glibc 2.41 (the
# container image's C library, whose getrandom() uses the kernel's vDSO;
# scripts/glibc-env.sh); the default is the host's C library.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="${1:-64,1024,16384}"
rounds="${2:-3}"
py="$(scripts/py-env.sh)"
case "${BENCH_LIBC:-host}" in
  host) under="" ;;
  debian13) under="$(scripts/glibc-env.sh)" ;;
  *) echo "bench-compare: BENCH_LIBC must be host or debian13, not '${BENCH_LIBC}'" >&2; exit 2 ;;
esac
cargo build --release -q -p stateseal-cli
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
libc="$($under "$py" -c 'import platform; print("-".join(platform.libc_ver()))')"
for i in $(seq "$rounds"); do
  $under target/release/stateseal bench --json --sizes "$sizes" >"$dir/$i.rust"
  $under "$py" scripts/bench-python.py "$sizes" >"$dir/$i.python"
done
"$py" - "$dir" "$rounds" "$libc" <<'PY'
import json, statistics, sys
dir, rounds, libc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
med = statistics.median
per_round = []  # one dict per round: (impl, op, size) -> record
for i in range(1, rounds + 1):
    r = {}
    for impl in ("rust", "python"):
        for line in open(f"{dir}/{i}.{impl}"):
            if line.strip():
                rec = json.loads(line)
                r[(impl, rec["op"], rec["state_bytes"])] = rec
    per_round.append(r)
keys = sorted(k for k in per_round[0] if k[0] == "rust" and k[1] in ("mint", "verify"))
print(f'{"op":<7} {"state_B":>7} {"rust_ns":>8} {"+id_ns":>8} {"python_ns":>10} {"py/(rust+id) median [min-max]":>30} {"raw_ns":>7} {"rust/raw":>8} {"(rust+id)/raw":>13} {"least":>6}')
for (_, op, size) in keys:
    col = lambda impl, o, field="ns_per_op": [r[(impl, o, size)][field] for r in per_round]
    with_id = col("rust", op, "with_identity_ns")
    python = col("python", op)
    ratios = [p / w for p, w in zip(python, with_id)]
    raw = med(col("rust", "raw_seal" if op == "mint" else "raw_open"))
    spread = f"{med(ratios):.1f}x [{min(ratios):.1f}-{max(ratios):.1f}]"
    # The least (mint + identity)/raw any implementation can reach: (raw_seal + SHA-256 of the arguments)/raw_seal.
    least = f"{med(col('rust', 'mint_lower_bound', 'ratio_to_raw')):.2f}x" if op == "mint" else "-"
    print(f"{op:<7} {size:>7} {med(col('rust', op)):>8.0f} {med(with_id):>8.0f} {med(python):>10.0f} {spread:>30} {raw:>7.0f} "
          f"{med(col('rust', op, 'ratio_to_raw')):>7.2f}x {med(col('rust', op, 'with_identity_ratio_to_raw')):>12.2f}x {least:>6}")
# A boundary round: identity once + verify + mint, against Python's _unseal + _seal.
print()
print(f'{"round":<7} {"state_B":>7} {"rust_ns":>8} {"python_ns":>10} {"python/rust median [min-max]":>30} {"nonce_ns":>9}   C library: {libc}')
for size in sorted({k[2] for k in keys}):
    rust = [r[("rust", "round", size)]["ns_per_op"] for r in per_round]
    python = [r[("python", "mint", size)]["ns_per_op"] + r[("python", "verify", size)]["ns_per_op"] for r in per_round]
    nonce = med([r[("rust", "nonce", size)]["ns_per_op"] for r in per_round])
    ratios = [p / w for p, w in zip(python, rust)]
    spread = f"{med(ratios):.1f}x [{min(ratios):.1f}-{max(ratios):.1f}]"
    print(f"{'round':<7} {size:>7} {med(rust):>8.0f} {med(python):>10.0f} {spread:>30} {nonce:>9.0f}")
PY
