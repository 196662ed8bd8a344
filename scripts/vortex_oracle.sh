#!/usr/bin/env bash
# Real vortex 0.5.1 as the oracle of the differential tests (tests_py/_vortex.py) and of vortex's
# own offline suite run on both (tests_py/test_vortex_offline.py), on a machine without a GPU.
#
# vortex publishes only an sdist; ../shared/vortex-build holds a wheel of it for CPython 3.12.
# This makes a Python 3.12 venv beside the build (build/vortex-oracle/venv) with NumPy, pytest,
# the offline suite's imports and PyPI's cuFFT wheel (the wheel's extension links libcufft.so.12
# even for its CPU parts), unpacks the wheel with the build's own setup.sh (build/vortex-oracle/site)
# and writes build/vortex-oracle/env: the VORTEX_* variables tests_py/_vortex.py reads.
# vortexgo never imports vortex: the tests run it in a subprocess with that environment.
#
# Idempotent (a stamp names the wheel's checksum and the package list). Where there is no vortex
# build or no Python 3.12 it says so and exits 0: the comparisons then skip, naming the reason.
# Usage: bash scripts/vortex_oracle.sh   (VORTEX_BUILD=dir, VORTEX_ORACLE=dir, PY312=python3.12)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${VORTEX_BUILD:-$root/../shared/vortex-build}
dest=${VORTEX_ORACLE:-$root/build/vortex-oracle}
say() { echo "vortex-oracle: $*" >&2; }

wheel=$(ls "$src"/vortex_oct_*-cp312-*.whl 2>/dev/null | head -n1 || true)
if [ ! -f "$src/setup.sh" ] || [ -z "$wheel" ]; then
    say "no vortex build at $src: the comparisons with vortex skip"
    exit 0
fi
py=${PY312:-}
if [ -z "$py" ]; then
    for c in "$HOME"/.pyenv/versions/3.12*/bin/python3 "$(command -v python3.12 || true)"; do
        [ -n "$c" ] && [ -x "$c" ] && { py=$c; break; }
    done
fi
if [ -z "$py" ]; then
    say "no Python 3.12 (the vortex wheel's): the comparisons with vortex skip"
    exit 0
fi

# The offline suite imports numpy, pytest, imageio and vortex_tools (vortex-oct-tools); cuFFT 12.0
# is the CUDA 13 one the wheel was linked against (its README).
pkgs="numpy pytest imageio vortex-oct-tools nvidia-cufft==12.0.0.61"
want="$(sha256sum "$wheel" | cut -c1-16) $pkgs"
if [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$want" ] && [ -f "$dest/env" ]; then
    exit 0
fi
rm -rf "$dest" && mkdir -p "$dest"
say "making $dest (Python 3.12 venv + $(basename "$wheel"))"
"$py" -m venv "$dest/venv"
"$dest/venv/bin/python" -m pip install -q --disable-pip-version-check $pkgs
cufft=$(ls -d "$dest"/venv/lib/python3.12/site-packages/nvidia/cu13/lib 2>/dev/null ||
        ls -d "$dest"/venv/lib/python3.12/site-packages/nvidia/cufft/lib)
CUFFT_DIR=$cufft PYTHON="$dest/venv/bin/python" VORTEX_SITE="$dest/site" VORTEX_SKIP_SMOKE=1 \
    bash "$src/setup.sh" >/dev/null
cat >"$dest/env" <<EOF
VORTEX_PYTHON=$dest/venv/bin/python
VORTEX_SITE_DIR=$dest/site/vortex
VORTEX_LD_LIBRARY_PATH=$cufft
EOF
echo "$want" >"$dest/.stamp"
say "ready: $("$dest/venv/bin/python" -c 'import sys; print(sys.version.split()[0])') with vortex from $(basename "$wheel")"
