from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import _dlpack

DTYPES = list(vg.SUPPORTED_DTYPES)


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_round_trip(device, dtype):
    src = (np.arange(24) % 100).astype(dtype).reshape(2, 3, 4)
    a = vg.from_numpy(src, device)
    assert a.shape == (2, 3, 4) and a.dtype == np.dtype(dtype) and a.device == device
    assert a.nbytes == src.nbytes and a.ndim == 3 and a.size == 24 and len(a) == 2
    assert a.strides == src.strides
    np.testing.assert_array_equal(a.numpy(), src)
    np.testing.assert_array_equal(a.get(), src)


@pytest.mark.parametrize("pinned", [False, True])
def test_zeros_full_empty(device, pinned):
    z = vg.zeros((3, 5), "int16", device, pinned=pinned)
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 5), np.int16))
    f = vg.full(7, 2.5, "float32", device, pinned=pinned)
    np.testing.assert_array_equal(f.numpy(), np.full(7, 2.5, np.float32))
    e = vg.empty(0, "uint8", device, pinned=pinned)
    assert e.size == 0 and e.numpy().shape == (0,)
    assert ("pinned" in repr(z)) == pinned


@pytest.mark.parametrize("dtype, value", [("int8", -3), ("uint8", 200), ("uint16", 60000), ("int32", -7),
                                          ("uint32", 4_000_000_000), ("float64", 1e-300)])
def test_full_values(device, dtype, value):
    np.testing.assert_array_equal(vg.full(5, value, dtype, device).numpy(), np.full(5, value, dtype))


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda d: vg.empty((2, -1), "float32", d), ValueError, "shape="),
        (lambda d: vg.empty("abc", "float32", d), TypeError, "shape="),
        (lambda d: vg.empty(3, "float16", d), TypeError, "dtype='float16'"),
        (lambda d: vg.empty(3, "nonsense", d), TypeError, "dtype="),
        (lambda d: vg.full(3, "x", "float32", d), TypeError, "fill_value="),
        (lambda d: vg.full(3, 1, "complex64", d), TypeError, "complex64"),
        (lambda d: vg.empty(3, "float32", "tpu"), ValueError, "cuda:N"),
    ],
)
def test_bad_input(device, call, exc, words):
    with pytest.raises(exc, match=words):
        call(device)


def test_copy_between_kinds(device):
    src = np.arange(1000, dtype=np.float32)
    d = vg.from_numpy(src, device)
    p = vg.empty(1000, "float32", device, pinned=True)
    d2 = vg.empty(1000, "float32", device)
    s = vg.Stream(device)
    vg.copy(p, d, stream=s)       # device -> pinned
    vg.copy(d2, p, stream=s)      # pinned -> device
    out = np.empty_like(src)
    vg.copy(out, d2, stream=s)    # device -> pageable (completes before returning)
    np.testing.assert_array_equal(out, src)
    assert d2.stream is s and p.stream is s
    np.testing.assert_array_equal(p.numpy(), src)


@pytest.mark.parametrize(
    "dst, src, exc, words",
    [
        (lambda d: vg.empty(3, "float32", d), lambda d: vg.empty(4, "float32", d), ValueError, "equal sizes"),
        (lambda d: vg.empty(4, "int32", d), lambda d: vg.empty(4, "float32", d), TypeError, "dtype"),
        (lambda d: [1, 2], lambda d: vg.empty(2, "float32", d), TypeError, "dst=list"),
        (lambda d: np.zeros((4, 4), np.float32)[:, :2], lambda d: vg.empty(8, "float32", d), ValueError,
         "C-contiguous"),
    ],
)
def test_copy_rejects(device, dst, src, exc, words):
    with pytest.raises(exc, match=words):
        vg.copy(dst(device), src(device))


def test_copy_orders_after_producer(device):
    # The copy's stream waits (by event) for the stream that wrote src.
    a = vg.full(1 << 16, 3.0, "float32", device, stream=vg.Stream(device))
    b = vg.empty(1 << 16, "float32", device)
    other = vg.Stream(device)
    vg.copy(b, a, stream=other)
    np.testing.assert_array_equal(b.numpy(), np.full(1 << 16, 3.0, np.float32))


def test_host_arrays_speak_numpy_and_buffer(cpu):
    a = vg.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3), cpu)
    view = np.asarray(a)
    assert view.ctypes.data == a.ptr  # zero-copy
    view[0, 0] = 42
    assert a.numpy()[0, 0] == 42
    if sys.version_info >= (3, 12):
        mv = memoryview(a)
        assert mv.shape == (2, 3) and mv.format == "i" and mv[0, 0] == 42


def test_device_arrays_have_no_host_interfaces(gpu):
    a = vg.zeros(4, "float32", gpu)
    assert not hasattr(a, "__array_interface__")
    with pytest.raises(TypeError, match="numpy"):
        np.asarray(a)  # device memory needs the explicit a.numpy()
    p = vg.zeros(4, "float32", gpu, pinned=True)
    assert not hasattr(p, "__cuda_array_interface__")
    assert np.asarray(p).ctypes.data == p.ptr


def test_cuda_array_interface(gpu):
    s = vg.Stream(gpu)
    a = vg.zeros((4, 5), "uint16", gpu, stream=s)
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4, 5) and cai["typestr"] == "<u2"
    assert cai["data"] == (a.ptr, False) and cai["stream"] == s.handle


def test_dlpack_device(device):
    a = vg.zeros(3, "float32", device)
    p = vg.zeros(3, "float32", device, pinned=True)
    if device.is_cpu:
        assert a.__dlpack_device__() == (1, 0) and p.__dlpack_device__() == (1, 0)
    else:
        assert a.__dlpack_device__() == (2, device.ordinal)
        assert p.__dlpack_device__() == (3, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_into_numpy_zero_copy(cpu, dtype):
    a = vg.from_numpy((np.arange(12) % 50).astype(dtype).reshape(3, 4), cpu)
    before = _dlpack.live_count()
    b = np.from_dlpack(a)
    assert b.ctypes.data == a.ptr and b.shape == (3, 4) and b.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(b, a.numpy())
    del b
    import gc

    gc.collect()
    assert _dlpack.live_count() == before  # the deleter released the export


def test_dlpack_unconsumed_capsule_is_released(cpu):
    a = vg.zeros(3, "float32", cpu)
    before = _dlpack.live_count()
    for versioned in (None, (1, 0)):
        cap = a.__dlpack__(max_version=versioned)
        assert _dlpack.live_count() == before + 1
        del cap
        assert _dlpack.live_count() == before


def test_dlpack_rejects_copy_and_foreign_device(cpu):
    a = vg.zeros(3, "float32", cpu)
    with pytest.raises(BufferError, match="copy=True"):
        a.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="dl_device"):
        a.__dlpack__(dl_device=(2, 0))


def test_free_and_use_after_free(device):
    a = vg.zeros(8, "float32", device)
    a.free()
    assert "freed" in repr(a)
    with pytest.raises(vg.ClosedError):
        a.free()
    with pytest.raises(vg.ClosedError):
        a.numpy()
    with pytest.raises(vg.ClosedError):
        vg.copy(a, np.zeros(8, np.float32))


def test_reshape_view(device):
    a = vg.from_numpy(np.arange(6, dtype=np.float32), device)
    b = a.reshape(2, 3)
    np.testing.assert_array_equal(b.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(ValueError, match="elements"):
        a.reshape(4, 2)
    with pytest.raises(ValueError, match="view"):
        b.free()
    a.free()  # the view borrows the memory: it stays usable
    np.testing.assert_array_equal(b.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(vg.ClosedError):
        a.reshape(3, 2)


def test_cast_and_scale_offset(device):
    x = vg.from_numpy(np.array([-200.0, -1.5, 0.0, 1.5, 300.0], np.float32), device)
    y = vg.cast(x, "int8")
    # float -> int rounds to nearest (ties to even) and saturates
    np.testing.assert_array_equal(y.numpy(), np.array([-128, -2, 0, 2, 127], np.int8))
    z = vg.scale_offset(x, 2.0, 1.0)
    np.testing.assert_allclose(z.numpy(), x.numpy() * 2 + 1)
    with pytest.raises(ValueError, match="out has"):
        vg.cast(x, "int8", out=vg.empty(4, "int8", device))
    with pytest.raises(TypeError, match="x="):
        vg.scale_offset(np.zeros(3), 1.0)


def test_threads_allocate_and_copy_concurrently(device):
    errors = []

    def work(i):
        try:
            s = vg.Stream(device)
            src = np.full(4096, i, np.int32)
            a = vg.from_numpy(src, device, stream=s)
            np.testing.assert_array_equal(a.numpy(), src)
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join(30) for t in ts]
    assert not errors
