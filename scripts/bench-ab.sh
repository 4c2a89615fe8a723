#!/usr/bin/env bash
# An A/B of two builds of the CLI's in-process bench: runs `A bench --json`
# and `B bench --json` alternately (ROUNDS rounds, the order flipped every
# round so neither always runs first), then prints per operation and size each
# build's median ns and the median [min-max] of the paired ratios B/A, one pair
# per round. Run it with A = B first: the spread of that A/A run is the noise
# an A/B of two builds is judged against (docs/benchmarks.md).
# Usage: scripts/bench-ab.sh A_CLI B_CLI [ROUNDS] [SIZES] [MILLIS]
#   e.g. scripts/bench-ab.sh /tmp/old/stateseal target/release/stateseal 9
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: scripts/bench-ab.sh A_CLI B_CLI [ROUNDS] [SIZES] [MILLIS]" >&2
  exit 2
fi
a="$1" b="$2" rounds="${3:-9}" sizes="${4:-64,1024,16384}" millis="${5:-400}"
for cli in "$a" "$b"; do
  [ -x "$cli" ] || { echo "bench-ab: $cli is not an executable" >&2; exit 2; }
done
case "$rounds" in '' | *[!0-9]* | 0) echo "bench-ab: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2 ;; esac
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
for i in $(seq "$rounds"); do
  if [ $((i % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
  for side in $order; do
    if [ "$side" = a ]; then cli="$a"; else cli="$b"; fi
    "$cli" bench --json --sizes "$sizes" --millis "$millis" >"$dir/$i.$side"
  done
done
python3 - "$dir" "$rounds" <<'PY'
import json, statistics, sys
dir, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
def load(i, side):
    out = {}
    for line in open(f"{dir}/{i}.{side}"):
        rec = json.loads(line)
        if "ns_per_op" in rec:
            out[(rec["op"], rec["state_bytes"])] = rec["ns_per_op"]
    return out
runs = [(load(i, "a"), load(i, "b")) for i in range(1, rounds + 1)]
keys = sorted(set(runs[0][0]) & set(runs[0][1]), key=lambda k: (k[1], k[0]))
print(f'{"op":<14} {"state_B":>7} {"A_ns":>9} {"B_ns":>9} {"B/A median [min-max]":>24}')
for op, size in keys:
    a = [r[0][(op, size)] for r in runs]
    b = [r[1][(op, size)] for r in runs]
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{op:<14} {size:>7} {med(a):>9.1f} {med(b):>9.1f} "
          f"{med(ratios):>10.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")
PY
