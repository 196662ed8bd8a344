"""Where vortex 0.5.1 itself runs, for the tests that compare with it live.

vortexgo never imports vortex: those tests run a small script under vortex's
interpreter in a subprocess and compare its output with ours. Defaults are this
development machine's (a Python 3.12 venv with the wheel unpacked by
../shared/vortex-build/setup.sh); elsewhere (the GPU machine) set
``VORTEX_PYTHON`` (an interpreter with NumPy, CuPy for the CUDA comparisons),
``VORTEX_SITE_DIR`` (the unpacked ``vortex`` folder) and, if cuFFT is not on the
system path, ``VORTEX_LD_LIBRARY_PATH``. The tests skip when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

VORTEX_PY = Path(os.environ.get("VORTEX_PYTHON", "/work/vx312/bin/python"))
VORTEX_SITE = Path(os.environ.get("VORTEX_SITE_DIR", "/tmp/vortex_site/vortex"))
_LOCAL_CUFFT = Path("/work/vx312/lib/python3.12/site-packages/nvidia/cu13/lib")


def have_vortex() -> bool:
    """Whether vortex's interpreter and site are here."""
    return VORTEX_PY.exists() and VORTEX_SITE.exists()


def vortex_env() -> dict:
    """The environment a vortex subprocess runs in."""
    env = dict(os.environ, PYTHONPATH=str(VORTEX_SITE))
    ld = os.environ.get("VORTEX_LD_LIBRARY_PATH") or (str(_LOCAL_CUFFT) if _LOCAL_CUFFT.exists() else "")
    if ld:
        env["LD_LIBRARY_PATH"] = ld + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env
