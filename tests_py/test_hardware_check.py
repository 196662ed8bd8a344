"""``python -m vortexgo hardware-check`` (vortexgo.hardware_check) against the virtual instrument.

The acceptance check a user with an AlazarTech board and an NI-DAQmx card runs first
(docs/hardware.md). Here it runs, in a subprocess, on instruments/virtual: every step passes,
the virtual card's record of what it generated holds the galvo raster, and without any
vendor library the check fails clearly (naming the library and its environment variable).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _subproc

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """build/virtual (conftest.py's virtual_instrument)."""
    return virtual_instrument


def _env(**kw: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VGV_", "VORTEXGO_ATSAPI", "VORTEXGO_NIDAQMX", "VORTEXGO_VIRTUAL", "VORTEXGO_INSTR"))}
    # The package these tests imported (gpu-build/python on the GPU machine), first.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_subproc.PYTHON_DIR, os.environ.get("PYTHONPATH", "")) if p)
    env.update(kw)
    return env


def _check(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vortexgo", "hardware-check", *args], env=env, capture_output=True,
                          text=True, timeout=180)


def test_hardware_check_passes_on_the_virtual_instrument(virtual, tmp_path):
    r = _check(_env(VORTEXGO_INSTRUMENTS="virtual", VORTEXGO_VIRTUAL_DIR=str(virtual), VGV_ALINE_RATE_HZ="5000",
                    VGV_DAQMX_RECORD=str(tmp_path)), "--records", "64", "--samples", "512", "--blocks", "6")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "on the virtual instrument" in out
    assert "ATS9360" in out and "serial_number: 970001" in out, out
    assert f"ATS-SDK 7.5.0: {virtual / 'libATSApi.so'}" in out and f"NI-DAQmx 23.5.0: {virtual / 'libnidaqmx.so'}" in out, out
    assert out.count("PASS  ") == 5 and "FAIL" not in out, out
    assert "PASS: 5 of 5 steps passed" in out, out
    # what the virtual card generated: the raster's two channels, within +/-0.1 units (0.15 V)
    card = np.fromfile(tmp_path / "hardware-check.ao", np.float64).reshape(-1, 2)
    assert card.shape[0] >= 3 * 64, card.shape
    assert np.abs(card).max() <= 0.1 * 1.5 + 1e-9
    assert np.ptp(card[:, 0]) > 0.1 and np.ptp(card[:, 1]) > 0.1, (card.min(0), card.max(0))


def test_hardware_check_fails_clearly_without_the_vendor_libraries(tmp_path):
    missing = str(tmp_path / "absent.so")
    r = _check(_env(VORTEXGO_ATSAPI_LIBRARY=missing, VORTEXGO_NIDAQMX_LIBRARY=missing))
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "FAIL  ATS-SDK loaded" in out and "VORTEXGO_ATSAPI_LIBRARY" in out, out
    assert "FAIL  NI-DAQmx loaded" in out and "VORTEXGO_NIDAQMX_LIBRARY" in out, out
    assert out.rstrip().endswith("FAIL: 0 of 2 steps passed"), out
    assert "Traceback" not in out, out


def test_hardware_check_names_an_old_ats_sdk(virtual):
    r = _check(_env(VORTEXGO_INSTRUMENTS="virtual", VORTEXGO_VIRTUAL_DIR=str(virtual), VGV_ALINE_RATE_HZ="5000",
                    VGV_ALAZAR_SDK_VERSION="6.3.1"), "--records", "64", "--samples", "512", "--blocks", "4")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "FAIL  ATS-SDK loaded" in out and "is ATS-SDK 6.3.1, expected 7.0 or newer" in out, out
    assert "install a newer ATS-SDK" in out and "Traceback" not in out, out
