#!/usr/bin/env bash
# Builds the Python extension of another revision (BASE, default HEAD~1) into
# gpu-build/base-python, beside the checkout's own gpu-build/python, for A/B runs of two
# builds in one GPU call (carry gpu-build/base-python too):
#   make gpu-build && make gpu-build-base BASE=<rev>
#   (there) python3 bench/host_cost.py --driver real --quick --rounds 2 \
#       --variant base:PYTHONPATH=gpu-build/base-python --variant head:PYTHONPATH=gpu-build/python
# The revision is checked out in a temporary git worktree under build/, removed afterwards
# (also on failure). Usage: bash scripts/gpu_build_base.sh REV PYTHON
set -euo pipefail
rev=${1:-HEAD~1}
py=${2:-python3}
root=$(cd "$(dirname "$0")/.." && pwd)
sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || {
  echo "gpu_build_base: BASE=$rev is not a commit of this repository (expected a revision, e.g. HEAD~1 or a hash)" >&2
  exit 2
}
tree="$root/build/base-tree-$sha"
out="$root/gpu-build/base-python"
cleanup() { git -C "$root" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT
rm -rf "$out" "$tree"
mkdir -p "$root/build"
git -C "$root" worktree add -q --detach "$tree" "$sha"
(cd "$tree" && "$py" setup.py native "$out/vortexgo/_native" >&2)
tar -C "$tree/python" --exclude=_native --exclude=__pycache__ -cf - vortexgo | tar -C "$out" -xf -
echo "$sha" > "$out/REVISION"
echo "gpu_build_base: $rev ($sha) -> gpu-build/base-python ($(du -sh "$out" | cut -f1))" >&2
