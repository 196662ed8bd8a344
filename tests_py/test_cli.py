"""``python -m vortexgo``: the command line a new user runs first."""

from __future__ import annotations

import os
import subprocess
import sys

import vortexgo as vg


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vg.__file__)))
    return subprocess.run([sys.executable, "-m", "vortexgo", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_info_names_devices_and_what_is_missing():
    r = _run("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "device       cpu:" in out and "C fast path" in out
    if vg.is_cuda_available():
        assert "device       cuda:0:" in out
        assert "cuFFT        ok" in out, out
    else:
        assert "CUDA         unavailable: " in out and "cuFFT        not checked" in out


def test_unknown_command_is_refused_with_usage():
    r = _run("frobnicate")
    assert r.returncode == 2 and "invalid choice" in r.stderr and "info" in r.stderr
