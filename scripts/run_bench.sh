#!/usr/bin/env bash
# `make bench` on the GPU machine: runs bench/bench.py against the carried
# extension (gpu-build/) and writes JSON + a markdown table naming the device.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ -d "$root/gpu-build/python" ] && export PYTHONPATH="$root/gpu-build/python${PYTHONPATH:+:$PYTHONPATH}"
[ -d "$root/gpu-build/python" ] || export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
out=${OUT:-$root/bench-out}
python3 "$root/bench/bench.py" --out "$out" "$@"
