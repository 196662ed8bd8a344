#!/usr/bin/env bash
# gpu-dask.tar.xz: dask, distributed, zarr 3 and dask-cuda for the GPU machine's Python 3.12 (it has
# no network), without what it already has (NumPy, Numba, llvmlite). run_gpu_tests.sh unpacks it
# and puts it on PYTHONPATH after the machine's own site-packages' packages
# (tests_py/test_distributed.py's LocalCUDACluster case, bench/bench_distributed.py --device cuda).
# Usage: bash scripts/gpu_dask.sh [OUT.tar.xz]   (PY=python with pip; default .venv/bin/python)
set -euo pipefail
out=${1:-gpu-dask.tar.xz}
py=${PY:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m pip install -q --target "$tmp/dasksite" --python-version 3.12 --only-binary=:all: \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    "dask[array]" distributed "zarr>=3" "dask-cuda>=25"
(cd "$tmp/dasksite" && rm -rf numpy numpy.libs numpy-* numba numba-* llvmlite llvmlite-* packaging packaging-* \
    typing_extensions* site-packages __pycache__ bin example.py nvidia \
    bokeh bokeh-* contourpy contourpy-* xyzservices xyzservices-* narwhals narwhals-* PIL pillow* &&
    find . -type d -name tests -prune -exec rm -rf {} +)  # PIL: the machine has its own; bokeh & co: no dashboard there; no packaged tests (the carry limit)
tar -C "$tmp" -cJf "$out" dasksite
echo "wrote $out ($(du -h "$out" | cut -f1))"
