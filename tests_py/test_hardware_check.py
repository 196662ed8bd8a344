"""``python -m vortexgo hardware-check`` (vortexgo.hardware_check) against the virtual instrument.

The acceptance check a user runs first on a rig (docs/hardware.md). Here it runs, in a
subprocess, through the real drivers: the AlazarTech + NI-DAQmx check (the default), the
NI-IMAQ camera's and the Teledyne ADQ digitizer's on instruments/virtual, the GenICam camera's
on Aravis's simulated cameras (the in-process ``Fake_1`` and ``arv-fake-gv-camera-0.8`` over
GigE Vision on the loopback interface), and the MachDSP servo's against a servo on a
pseudo-terminal (tests_py/_machdsp_peer.py, served by a thread of this process). Every step
passes, the galvo raster lands where it should (the virtual card's record, the servo's codes),
and each instrument fails clearly, exit status 1, without its library (naming the library's
environment variable), on a wrong device, or on a servo fault.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import _subproc
from _machdsp_peer import Peer

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """build/virtual (conftest.py's virtual_instrument)."""
    return virtual_instrument


def _env(**kw: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VGV_", "VORTEXGO_ATSAPI", "VORTEXGO_NIDAQMX", "VORTEXGO_VIRTUAL", "VORTEXGO_INSTR",
                                "VORTEXGO_NIIMAQ", "VORTEXGO_ADQ", "VORTEXGO_ARAVIS"))}
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


# --- the part-2 instruments (--instrument imaq, teledyne, genicam, machdsp) ---------------


def _virtual_env(virtual: Path, **kw: str) -> dict:
    return _env(VORTEXGO_INSTRUMENTS="virtual", VORTEXGO_VIRTUAL_DIR=str(virtual), VGV_ALINE_RATE_HZ="5000", **kw)


def _passed(r: subprocess.CompletedProcess, steps: int) -> str:
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert out.count("PASS  ") == steps and "FAIL" not in out, out
    assert out.rstrip().endswith(f"PASS: {steps} of {steps} steps passed"), out
    return out


def _failed(r: subprocess.CompletedProcess, passed: int, steps: int) -> str:
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert out.rstrip().endswith(f"FAIL: {passed} of {steps} steps passed"), out
    assert "Traceback" not in out, out
    return out


def test_imaq_check_passes_on_the_virtual_camera(virtual):
    r = _check(_virtual_env(virtual), "--instrument", "imaq", "--records", "64", "--samples", "512", "--blocks", "6")
    out = _passed(r, 3)
    assert "vortexgo hardware check of imaq (VORTEXGO_INSTRUMENTS=virtual" in out, out
    assert f"NI-IMAQ (the driver reports no version): {virtual / 'libniimaq.so'}" in out, out
    assert "PASS  NI-IMAQ loaded, interfaces listed" in out and "): img0" in out, out
    assert "line_scan: True" in out and "bits_per_pixel: 16" in out and "<Imaq img0: 4096 x 1" in out, out
    assert "PASS  6 frames acquired, no scanner driven" in out and "of 64 records of 512 samples, codes" in out, out


@pytest.mark.parametrize("case", ["no library", "no such interface"])
def test_imaq_check_fails_clearly(virtual, tmp_path, case):
    if case == "no library":
        r = _check(_env(VORTEXGO_NIIMAQ_LIBRARY=str(tmp_path / "absent.so")), "--instrument", "imaq")
        out = _failed(r, 0, 1)
        assert "FAIL  NI-IMAQ loaded, interfaces listed" in out and "VORTEXGO_NIIMAQ_LIBRARY" in out, out
        assert "what to do: install NI Vision Acquisition Software" in out, out
    else:
        r = _check(_virtual_env(virtual), "--instrument", "imaq", "--interface", "img3")
        out = _failed(r, 0, 1)
        assert "FAIL  NI-IMAQ loaded, interfaces listed: RuntimeError: --interface img3: NI-IMAQ lists img0" in out, out
        assert "what to do: check the frame grabber in NI MAX" in out, out


def test_teledyne_check_passes_on_the_virtual_digitizer(virtual):
    r = _check(_virtual_env(virtual), "--instrument", "teledyne", "--records", "64", "--samples", "512", "--blocks", "6")
    out = _passed(r, 3)
    assert f"(ADQAPI_ValidateVersion passed): {virtual / 'libadq.so'}" in out, out
    assert "PASS  ADQAPI loaded, boards listed" in out and "ADQ32 (" in out, out
    assert "product_name: 'ADQ32'" in out and "firmware_name: 'FWOCT'" in out, out
    assert "PASS  board opened, information read" in out and "<teledyne.Teledyne 0 ADQ32" in out, out
    assert "PASS  6 blocks acquired, no scanner driven" in out, out


@pytest.mark.parametrize("case", ["no library", "another API revision", "no layout table", "no such board"])
def test_teledyne_check_fails_clearly(virtual, tmp_path, case):
    if case == "no library":
        r = _check(_env(VORTEXGO_ADQ_LIBRARY=str(tmp_path / "absent.so")), "--instrument", "teledyne")
        out = _failed(r, 0, 1)
        assert "FAIL  ADQAPI loaded, boards listed" in out and "VORTEXGO_ADQ_LIBRARY" in out, out
        assert "what to do: install Teledyne SP Devices' ADQAPI" in out, out
    elif case == "another API revision":
        r = _check(_virtual_env(virtual, VGV_ADQAPI_VERSION="1.0"), "--instrument", "teledyne")
        out = _failed(r, 0, 1)
        assert "FAIL  ADQAPI loaded" in out and "system ADQAPI version is incompatible" in out, out
        assert "what to do: no layout table or an incompatible revision" in out, out
    elif case == "no layout table":
        r = _check(_virtual_env(virtual, VORTEXGO_ADQ_LAYOUT=str(tmp_path / "absent.json")), "--instrument", "teledyne")
        out = _failed(r, 0, 1)
        assert "FAIL  ADQAPI loaded" in out and "ADQParameters layout table" in out and "absent.json" in out, out
        assert "python -m vortexgo adq-layout" in out, out
    else:
        r = _check(_virtual_env(virtual), "--instrument", "teledyne", "--board", "3")
        out = _failed(r, 1, 2)
        assert "FAIL  board opened, information read" in out and "--board is the board's index from 0" in out, out


def _have_aravis() -> bool:
    try:
        ctypes.CDLL("libaravis-0.8.so.0")
        return True
    except OSError:
        return False


needs_aravis = pytest.mark.skipif(not _have_aravis(), reason="Aravis 0.8 is not installed "
                                  "(apt-get install libaravis-0.8-0 aravis-tools)")
FAKE_GV = shutil.which("arv-fake-gv-camera-0.8")
_GENICAM = ("--instrument", "genicam", "--pixel-format", "Mono8", "--samples", "256", "--records", "32", "--blocks", "6")


@needs_aravis
def test_genicam_check_passes_on_aravis_fake_camera():
    out = _passed(_check(_env(), *_GENICAM, "--camera", "Fake_1"), 3)
    assert "      Aravis 0.8." in out and "PASS  Aravis loaded, cameras listed" in out and "): Fake_1" in out, out
    assert "vendor: 'Aravis'" in out and "model: 'Fake'" in out and "gige_vision: False" in out, out
    assert "PASS  6 frames acquired, no scanner driven" in out and "dropped 0, incomplete 0" in out, out


@needs_aravis
@pytest.mark.skipif(FAKE_GV is None, reason="arv-fake-gv-camera-0.8 is not installed (apt-get install aravis-tools)")
def test_genicam_check_passes_on_a_gige_vision_camera():
    srv = subprocess.Popen([FAKE_GV, "-i", "127.0.0.1", "-s", "VGHWCHECK"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        # The fake serves once it has bound its sockets: on a loaded host (a CI run beside) later
        # than the 1 s the other GigE tests wait, so a failed check is repeated (5 tries) before it counts.
        time.sleep(1.0)
        for _ in range(5):
            r = _check(_env(), *_GENICAM, "--camera", "127.0.0.1", "--line-rate", "3200")
            if r.returncode == 0:
                break
            time.sleep(1.0)
        out = _passed(r, 3)
        assert "gige_vision: True" in out and "line_rate_feature: 'AcquisitionFrameRate'" in out, out
    finally:
        srv.kill()
        srv.wait()


def test_genicam_check_fails_clearly_without_aravis(tmp_path):
    r = _check(_env(VORTEXGO_ARAVIS_LIBRARY=str(tmp_path / "absent.so")), "--instrument", "genicam")
    out = _failed(r, 0, 1)
    assert "FAIL  Aravis loaded, cameras listed" in out and "VORTEXGO_ARAVIS_LIBRARY" in out, out
    assert "what to do: apt-get install libaravis-0.8-0 aravis-tools" in out, out


@needs_aravis
def test_genicam_check_names_a_camera_it_cannot_open():
    r = _check(_env(), "--instrument", "genicam", "--camera", "Fake_1", "--pixel-format", "Mono12p")
    out = _failed(r, 1, 2)
    assert "FAIL  camera opened and configured" in out and "Mono12p" in out, out
    assert "what to do: --camera takes an id" in out, out


@pytest.fixture
def peer():
    p = Peer()
    yield p
    p.close()


def test_machdsp_check_streams_a_small_raster_to_the_servo(virtual, peer):
    """Several instruments in one run: the virtual camera, then the servo on a pty."""
    r = _check(_virtual_env(virtual), "--instrument", "imaq", "--instrument", "machdsp", "--port", peer.path,
               "--records", "64", "--samples", "512", "--blocks", "6", "--amplitude", "0.2")
    out = _passed(r, 6)
    assert "-- imaq: " in out and "-- machdsp: a MachDSP galvo servo" in out, out
    assert "PASS  serial port opened, servo greeted" in out and f"{peer.path} at 12000000 baud" in out, out
    assert "version: Version(major=1, minor=2, features=0)" in out and "max_buffer_samples: 16384" in out, out
    assert "PASS  galvo waveform streamed to the servo (engine)" in out and "+/-0.2 units streamed" in out, out
    assert "PASS  servo reports no fault" in out, out
    # what the servo received: the raster's two axes in codes, about +/-0.2 of 15 units (32767 codes)
    codes = np.array(peer.codes, np.int64).reshape(-1, 2) - 32768
    assert codes.shape[0] >= 3 * 64, codes.shape
    units = codes * 15 / 32767
    assert np.abs(units).max() <= 0.2 * 1.25, (units.min(0), units.max(0))  # the flyback swings a little beyond
    assert np.ptp(units[:, 0]) > 0.35 and np.ptp(units[:, 1]) > 0.35, (units.min(0), units.max(0))


def test_machdsp_check_fails_clearly_without_the_port(tmp_path):
    missing = str(tmp_path / "ttyACM9")
    out = _failed(_check(_env(), "--instrument", "machdsp", "--port", missing), 0, 1)
    assert f"FAIL  serial port opened, servo greeted: VortexError: open {missing}: No such file or directory" in out, out
    assert "what to do: --port names the servo's serial port" in out, out


def test_machdsp_check_fails_on_a_servo_fault():
    p = Peer(fault="servo_error", at=2)
    try:
        out = _failed(_check(_env(), "--instrument", "machdsp", "--port", p.path), 2, 3)
    finally:
        p.close()
    assert "FAIL  galvo waveform streamed to the servo (engine)" in out and "protocol error" in out, out
    assert "what to do: the servo plays a sample per A-line trigger" in out, out
