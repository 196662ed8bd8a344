"""Where vortex 0.5.1 itself runs, for the tests that compare with it live.

vortexgo never imports vortex: those tests run a small script under vortex's
interpreter in a subprocess and compare its output with ours. The interpreter is
the one ``scripts/vortex_oracle.sh`` makes (``make test`` runs it): a Python 3.12
venv with the wheel of ../shared/vortex-build unpacked, described by
``build/vortex-oracle/env`` (``$VORTEX_ORACLE`` names another such folder).
``VORTEX_PYTHON`` (an interpreter with NumPy, CuPy for the CUDA comparisons),
``VORTEX_SITE_DIR`` (the unpacked ``vortex`` folder) and ``VORTEX_LD_LIBRARY_PATH``
(where libcufft.so.12 is) override it, as on the GPU machine. The tests skip,
saying why, where none of this is present.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLE = Path(os.environ.get("VORTEX_ORACLE", ROOT / "build" / "vortex-oracle"))


def _oracle_env() -> dict:
    """The VORTEX_* settings of scripts/vortex_oracle.sh's folder, if made."""
    try:
        lines = (ORACLE / "env").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in lines if "=" in line)


_made = _oracle_env()


def _setting(name: str) -> str:
    return os.environ.get(name) or _made.get(name, "")


VORTEX_PY = Path(_setting("VORTEX_PYTHON") or "/nonexistent/vortex-python")
VORTEX_SITE = Path(_setting("VORTEX_SITE_DIR") or "/nonexistent/vortex-site")
VORTEX_LD = _setting("VORTEX_LD_LIBRARY_PATH")

# Why the comparisons skip, for their skip reasons.
WHY_NOT = ("vortex 0.5.1 is not installed here: `bash scripts/vortex_oracle.sh` makes it from "
           "../shared/vortex-build (make test runs it), or set VORTEX_PYTHON and VORTEX_SITE_DIR")


def have_vortex() -> bool:
    """Whether vortex's interpreter and site are here."""
    return VORTEX_PY.exists() and VORTEX_SITE.exists()


def vortex_env() -> dict:
    """The environment a vortex subprocess runs in."""
    env = dict(os.environ, PYTHONPATH=str(VORTEX_SITE))
    if VORTEX_LD:
        env["LD_LIBRARY_PATH"] = VORTEX_LD + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


@functools.lru_cache(maxsize=None)
def vortex_imports(module: str = "vortex") -> bool:
    """Whether vortex's interpreter imports `module` (checked once per run)."""
    if not have_vortex():
        return False
    try:
        return subprocess.run([str(VORTEX_PY), "-c", f"import {module}"], env=vortex_env(),
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_vortex(code: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run `code` under vortex's interpreter; raise with its output if it fails."""
    p = subprocess.run([str(VORTEX_PY), "-c", code, *args], env=vortex_env(), capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"vortex's run failed (rc {p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p
