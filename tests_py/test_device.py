from __future__ import annotations

import pytest

import vortexgo as vg


def test_devices_lists_cuda_then_cpu():
    devs = vg.devices()
    assert devs[-1].is_cpu
    assert all(d.is_cuda for d in devs[:-1])
    assert len(devs) - 1 == (len(devs) - 1 if vg.is_cuda_available() else 0)


@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu "])
def test_get_device_cpu_specs(spec):
    d = vg.get_device(spec)
    assert d.is_cpu and d.alias == "cpu" and d.kind == "cpu"
    assert d is vg.get_device("cpu")
    assert d.compute_capability == (0, 0)
    assert d.total_memory > 0 and 0 <= d.free_memory <= d.total_memory
    assert "cpu" in repr(d)


def test_device_equality_and_hash(cpu):
    assert cpu == vg.get_device("cpu")
    assert hash(cpu) == hash(vg.get_device("cpu"))
    assert {cpu, vg.get_device("cpu")} == {cpu}
    assert cpu != "cpu"


@pytest.mark.parametrize(
    "bad, exc, words",
    [
        ("gpu", ValueError, "cuda:N"),
        ("cuda:x", ValueError, "cuda:N"),
        (-1, ValueError, "ordinal"),
        (1.5, TypeError, "device="),
        (True, TypeError, "device="),
    ],
)
def test_get_device_rejects_bad_specs(bad, exc, words):
    with pytest.raises(exc, match=words):
        vg.get_device(bad)


def test_cuda_device_out_of_range():
    with pytest.raises((ValueError, vg.CudaError, vg.VortexError)):
        vg.get_device("cuda:99")


def test_availability_is_consistent():
    if vg.is_cuda_available():
        assert vg.cuda_unavailable_reason() == ""
        d = vg.get_device("cuda")
        assert d == vg.get_device(0) == vg.get_device("cuda:0")
        major, _ = d.compute_capability
        assert major >= 7
        assert "cuda:0" in repr(d)
    else:
        assert vg.cuda_unavailable_reason() != ""
        assert vg.get_device().is_cpu  # auto falls back to the CPU


def test_device_synchronize(device):
    device.synchronize()
    vg.synchronize_device(device)
    vg.synchronize(device)
