#!/usr/bin/env bash
# Per-call costs of two builds, alternated in one session (bench/percall_ab.py):
#   bash scripts/percall_ab.sh A_PYTHONPATH B_PYTHONPATH [rounds] > out.json
# Prints each round's figures and the ratio B/A of their medians per figure.
# Both run pinned to the same cores (CPUS=2-5 by default; taskset): unpinned, a host's
# per-call figures fall into two modes a factor of two apart by where the
# scheduler puts the process, which swamps a 5% difference.
set -euo pipefail
a=$1 b=$2 rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pin=()
command -v taskset >/dev/null && pin=(taskset -c "${CPUS:-2-5}")
for r in $(seq "$rounds"); do
  PYTHONPATH=$a "${pin[@]}" python3 "$here/bench/percall_ab.py" >> "$tmp/a.jsonl"
  PYTHONPATH=$b "${pin[@]}" python3 "$here/bench/percall_ab.py" >> "$tmp/b.jsonl"
done
python3 - "$tmp/a.jsonl" "$tmp/b.jsonl" <<'PY'
import json, statistics, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
keys = [k for k in a[0] if k.endswith("_us")]
med = lambda rows, k: statistics.median(r[k] for r in rows)
print(json.dumps({"device": a[0]["device"], "rounds": len(a), "A": a, "B": b,
                  "ratio_B_over_A": {k: round(med(b, k) / med(a, k), 3) for k in keys},
                  "median_A_us": {k: round(med(a, k), 3) for k in keys},
                  "median_B_us": {k: round(med(b, k), 3) for k in keys}}, indent=1))
PY
