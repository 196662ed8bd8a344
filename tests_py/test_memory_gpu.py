"""GPU memory lifetime (issue 12): a CuPy or PyTorch view of a vortexgo
array, taken with DLPack or the CUDA array interface, keeps its memory
after the array is freed; the memory returns with the last consumer. Each
case runs in its own process (a use after free may kill it). Skipped
without CUDA."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import HAS_CUDA
from test_memory_lifetime import run_isolated

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")


def _needs(mod: str):
    return pytest.mark.skipif(importlib.util.find_spec(mod) is None, reason=f"needs {mod}")


GPU_PRELUDE = """
dev = vg.get_device("cuda:0")

def gpu_churn():
    # Allocate and overwrite memory of the same size so a freed allocation
    # would be reused by the driver and a dangling view would show 9s.
    keep = [vg.full(1 << 22, 9, "uint8", dev) for _ in range(8)]
    dev.synchronize()
    for k in keep:
        k.free()
"""


@_needs("cupy")
@pytest.mark.parametrize("take", ["cupy.from_dlpack(a)", "cupy.asarray(a)"])
def test_cupy_view_survives_free(take):
    out = run_isolated(GPU_PRELUDE + f"""
import cupy
a = vg.full(1 << 22, 1, "uint8", dev)
v = {take}
a.free()
gpu_churn()
print(int(v.sum()), array_bytes() >= 1 << 22)
del v, a
gc.collect()
print(array_bytes())
""")
    assert out.split() == [str(1 << 22), "True", "0"]


@_needs("torch")
def test_torch_view_survives_free():
    out = run_isolated(GPU_PRELUDE + """
import torch
a = vg.full(1 << 22, 1, "uint8", dev)
v = torch.from_dlpack(a)
a.free()
gpu_churn()
print(int(v.sum().item()), array_bytes() >= 1 << 22)
del v
gc.collect()
print(array_bytes())
""")
    assert out.split() == [str(1 << 22), "True", "0"]


def test_dlpack_stream_argument_on_cuda():
    out = run_isolated(GPU_PRELUDE + """
a = vg.zeros(16, "float32", dev)
for bad in (0, -2, "x", 1.5, True, 2**64):
    try:
        a.__dlpack__(stream=bad)
    except ValueError as exc:
        print("ValueError" if "stream=" in str(exc) else exc)
s = vg.Stream(dev)
for good in (None, -1, 1, 2, s.handle):
    a.__dlpack__(stream=good)
print("ok")
""")
    assert out.split() == ["ValueError"] * 6 + ["ok"]


@_needs("cupy")
def test_gpu_tensor_view_survives_close():
    out = run_isolated(GPU_PRELUDE + """
import cupy
t = vg.DeviceTensor(1 << 22, "uint8", dev)
with t as v:
    v[:] = 3
    cupy.cuda.Device(0).synchronize()
tv = t.view()
t.close()
gpu_churn()
print(int(tv.sum()))
try:
    t.view()
except vg.ClosedError:
    print("closed")
""")
    assert out.split() == [str(3 << 22), "closed"]


def test_cpu_stream_cannot_touch_device_memory():
    out = run_isolated(GPU_PRELUDE + """
a = vg.zeros(1024, "float32", dev)
cpu = vg.get_device("cpu")
try:
    vg.copy(a, vg.zeros(1024, "float32", cpu), stream=vg.Stream(cpu))
except ValueError as exc:
    print("ValueError")
h = np.empty(1024, np.float32)
vg.copy(h, a)          # CUDA stream reading into host memory: allowed
vg.copy(vg.zeros(1024, "float32", cpu), a)  # the CUDA side's device runs it
print("ok")
""")
    assert out.split() == ["ValueError", "ok"]
