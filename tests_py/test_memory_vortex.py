"""vortexgo.memory: vortex's tensor names (CpuTensor*, CudaHostTensor*,
CudaDeviceTensor* for Int8, UInt16, UInt64, Float32, Float64) with vortex's
properties and methods, on top of DeviceTensor; compared with vortex's
CpuTensor* where vortex runs here."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import numpy as np
import pytest

import vortexgo as vg
import vortexgo.memory as vm
from _subproc import run
from conftest import HAS_CUDA, HAS_CUPY

DTYPES = {"Int8": np.int8, "UInt16": np.uint16, "UInt64": np.uint64, "Float32": np.float32, "Float64": np.float64}
KINDS = ["CpuTensor", "CudaHostTensor", "CudaDeviceTensor"]


def classes():
    for kind in KINDS:
        for name in DTYPES:
            marks = [] if kind == "CpuTensor" else [pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")]
            yield pytest.param(kind, name, marks=marks, id=f"{kind}{name}")


def host(view):
    """A NumPy copy of a view (CuPy arrays come back to the host)."""
    return view.get() if hasattr(view, "get") else np.array(view)


def test_every_vortex_name_exists():
    names = {f"{k}{n}" for k in KINDS for n in DTYPES}
    assert names == set(vm.__all__)
    assert all(isinstance(getattr(vm, n), type) for n in names)


@pytest.mark.parametrize("kind, name", list(classes()))
def test_lifecycle_like_vortex(kind, name):
    if kind == "CudaDeviceTensor" and not HAS_CUPY:
        pytest.skip("device views need CuPy to be written here")
    cls = getattr(vm, kind + name)
    dt = np.dtype(DTYPES[name])
    t = cls()
    assert repr(t) == f"{kind}(shape=[], dtype={dt.name})"
    assert (t.valid, t.shape, t.dimension, t.count, t.size_in_bytes, t.stride, t.stride_in_bytes,
            t.underlying_size_in_bytes, t.dtype, t.data) == (False, [], 0, 0, 0, [], [], 0, dt, None)
    t.resize([2, 3, 4])
    assert (t.valid, t.shape, t.dimension, t.count, t.size_in_bytes) == (True, [2, 3, 4], 3, 24, 24 * dt.itemsize)
    assert t.stride == [12, 4, 1] and t.stride_in_bytes == [12 * dt.itemsize, 4 * dt.itemsize, dt.itemsize]
    assert t.underlying_size_in_bytes == 24 * dt.itemsize and isinstance(t.data, int)
    assert repr(t) == f"{kind}(shape=[2, 3, 4], dtype={dt.name})"
    with t as v:
        assert tuple(v.shape) == (2, 3, 4) and np.dtype(v.dtype) == dt
        v[...] = 3
    with t as v:
        assert (host(v) == 3).all(), "writes through the view persist"
    t.resize([2, 2])
    assert t.shape == [2, 2] and t.size_in_bytes == 4 * dt.itemsize
    assert t.underlying_size_in_bytes == 24 * dt.itemsize, "a smaller resize keeps the memory"
    with t as v:
        v[...] = 5
    t.shrink()
    assert t.underlying_size_in_bytes == 4 * dt.itemsize
    with t as v:
        assert (host(v) == 5).all(), "shrink keeps the contents"
    t.clear()
    assert (t.valid, t.shape, t.count, t.underlying_size_in_bytes, t.data) == (False, [], 0, 0, None)
    assert isinstance(t.tensor, type(None))


def test_uint64_holds_the_full_range():
    t = vm.CpuTensorUInt64()
    t.resize([3])
    with t as v:
        v[...] = [0, 2**63 + 5, 2**64 - 1]
    with t as v:
        assert v.dtype == np.uint64 and v.tolist() == [0, 2**63 + 5, 2**64 - 1]


def test_lock_rules():
    t = vm.CpuTensorFloat32()
    with pytest.raises(ValueError, match="is empty, expected resize"):
        with t:
            pass
    t.resize([4])
    with t:
        with pytest.raises(vg.LockError, match="resize.*would deadlock"):
            t.resize([8])
        with pytest.raises(vg.LockError, match="clear"):
            t.clear()
    # another thread's `with` makes resize wait until it leaves
    inside, leave, order = threading.Event(), threading.Event(), []

    def hold():
        with t:
            inside.set()
            leave.wait(5)
            time.sleep(0.1)
            order.append("left")

    th = threading.Thread(target=hold)
    th.start()
    assert inside.wait(5)
    leave.set()
    t.resize([16])
    order.append("resized")
    th.join()
    assert order == ["left", "resized"] and t.shape == [16]


def test_bad_arguments():
    t = vm.CpuTensorInt8()
    with pytest.raises(ValueError, match="shape"):
        t.resize([-1])
    with pytest.raises(TypeError, match="shape='ab', expected a list of ints"):
        t.resize("ab")
    with pytest.raises(TypeError, match="shape"):
        t.resize([2.5])
    with pytest.raises((ValueError, MemoryError), match="shape"):
        t.resize([2**40, 2**40])
    assert not t.valid, "a refused resize allocates nothing"
    with pytest.raises(ValueError, match="expected a CUDA device for a CudaDeviceTensor"):
        vm.CudaDeviceTensorFloat32(device="cpu")
    if HAS_CUDA:
        with pytest.raises(ValueError, match="expected the cpu device for a CpuTensor"):
            vm.CpuTensorFloat32(device="cuda")
    else:
        with pytest.raises((ValueError, vg.VortexError), match="(?i)cuda"):
            vm.CudaHostTensorFloat32()


def test_views_outlive_clear_and_resize():
    """A view kept after clear (or a growing resize) keeps its memory: run in
    a child, where a use after free would crash the interpreter, not the run."""
    run("""
        import gc, numpy as np
        import vortexgo.memory as vm
        t = vm.CpuTensorFloat64()
        t.resize([1 << 16])
        with t as v:
            v[...] = 1.5
        kept = v
        t.resize([1 << 20])  # grows: new memory
        t.clear()
        gc.collect()
        junk = [np.ones(1 << 16) for _ in range(50)]
        assert float(kept.sum()) == 1.5 * (1 << 16)
        print("ok")
    """)


from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env  # noqa: E402


@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_same_as_vortex():
    script = r"""
import json, vortex.memory as vm
out = {}
for name in ["Int8", "UInt16", "UInt64", "Float32", "Float64"]:
    t = getattr(vm, "CpuTensor" + name)(); rows = []
    def snap(): rows.append([repr(t), t.valid, list(t.shape), t.dimension, t.count, t.size_in_bytes,
                             list(t.stride), list(t.stride_in_bytes), str(t.dtype)])
    snap(); t.resize([2, 3, 4]); snap(); t.resize([5]); snap(); t.clear(); snap()
    out[name] = rows
print(json.dumps(out))
"""
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", script], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex does not run here: {p.stderr[-300:]}")
    theirs = json.loads(p.stdout.strip().splitlines()[-1])
    for name in DTYPES:
        t = getattr(vm, "CpuTensor" + name)()
        rows = []

        def snap():
            rows.append([repr(t), t.valid, list(t.shape), t.dimension, t.count, t.size_in_bytes,
                         list(t.stride), list(t.stride_in_bytes), str(t.dtype)])

        snap()
        t.resize([2, 3, 4])
        snap()
        t.resize([5])
        snap()
        t.clear()
        snap()
        assert rows == theirs[name], name


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_only_device_tensors_have_a_device(dtype):
    """As in vortex, only CudaDeviceTensor* has ``device``: vortex's own tests tell device tensors
    apart by ``hasattr(tensor, 'device')`` and read the others as NumPy arrays."""
    assert not hasattr(getattr(vm, f"CpuTensor{dtype}")(), "device")
    assert not hasattr(getattr(vm, f"CudaHostTensor{dtype}"), "device")
    assert "device" not in dir(getattr(vm, f"CpuTensor{dtype}"))
    assert isinstance(getattr(vm, f"CudaDeviceTensor{dtype}").device, property)
