"""Shared fixtures: every test that is not GPU-specific runs on the CPU
backend (CI has no GPU) and, where a GPU exists, on CUDA too."""

from __future__ import annotations

import pytest

import vortexgo as vg

HAS_CUDA = vg.is_cuda_available()
try:  # CuPy is optional; GPU interop tests need it
    import cupy  # noqa: F401

    HAS_CUPY = HAS_CUDA
except Exception:
    HAS_CUPY = False

DEVICES = ["cpu"] + (["cuda:0"] if HAS_CUDA else [])

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason=f"no CUDA device: {vg.cuda_unavailable_reason()}")
needs_cupy = pytest.mark.skipif(not HAS_CUPY, reason="needs CUDA and CuPy")


@pytest.fixture(params=DEVICES)
def device(request) -> vg.Device:
    """Each available backend in turn."""
    return vg.get_device(request.param)


@pytest.fixture
def cpu() -> vg.Device:
    return vg.get_device("cpu")


@pytest.fixture
def gpu() -> vg.Device:
    if not HAS_CUDA:
        pytest.skip(f"no CUDA device: {vg.cuda_unavailable_reason()}")
    return vg.get_device("cuda:0")


@pytest.fixture
def cp():
    if not HAS_CUPY:
        pytest.skip("needs CUDA and CuPy")
    import cupy

    return cupy
