"""The examples run end to end (CPU backend in CI; CUDA where present)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DEVICES

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


def _run(script: str, *args: str) -> str:
    # The package the tests import (a source tree or a carried build).
    import vortexgo

    env = dict(os.environ, PYTHONPATH=str(Path(vortexgo.__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True, text=True,
                       env=env, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.parametrize("device", DEVICES)
def test_acquire_example(device, tmp_path):
    out = _run("acquire.py", "--device", device, "--volumes", "3", "--out", str(tmp_path), "--no-progress")
    assert "M A-scans/s" in out and "GB/s raw input" in out and "device:" in out
    vols = np.load(tmp_path / "volumes.npy")
    assert vols.shape[0] == 3 and vols.dtype == np.int8
    from PIL import Image

    img = Image.open(tmp_path / "mip.png")
    assert img.size == (vols.shape[2], vols.shape[1])
    bscan = Image.open(tmp_path / "bscan.png")
    assert bscan.size == (vols.shape[2], vols.shape[3])  # A-scans across, depth down


@pytest.mark.parametrize("device", DEVICES)
def test_seed_examples(device, tmp_path):
    assert "3 MIPs" in _run("mip.py", "--device", device)
    assert "buffered 4 volumes" in _run("user_buffering.py", "--device", device, "--out", str(tmp_path))


def test_notebook_is_valid_nbformat4():
    nb = json.loads((ROOT / "examples" / "acquire.ipynb").read_text())
    assert nb["nbformat"] == 4 and nb["cells"]
    for c in nb["cells"]:
        assert c["cell_type"] in ("markdown", "code") and isinstance(c["source"], list)
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and "execution_count" in c
            compile("".join(c["source"]), "cell", "exec")
