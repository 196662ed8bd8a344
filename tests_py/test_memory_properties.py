"""Property-based tests of arrays (Hypothesis): shapes (0-size and near the
bound), dtypes, byte orders, strided and non-contiguous inputs, round trips
through NumPy, DLPack, reshape and copy, on the CPU backend."""

from __future__ import annotations

import gc

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import vortexgo as vg  # noqa: E402
from vortexgo._validate import MAX_ELEMENTS  # noqa: E402

CPU = vg.get_device("cpu")
DTYPES = [np.dtype(d) for d in vg.SUPPORTED_DTYPES]
PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

dtypes = st.sampled_from(DTYPES)
# Every supported dtype in either byte order (one-byte types have none).
any_order = dtypes.flatmap(lambda d: st.sampled_from([d, d.newbyteorder(">"), d.newbyteorder("<")]))
small_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)


@st.composite
def numpy_inputs(draw):
    """An array of any supported dtype and byte order, possibly a strided,
    transposed or reversed view (non-contiguous)."""
    a = draw(hnp.arrays(draw(any_order), draw(small_shapes)))
    if a.ndim and draw(st.booleans()):
        a = a[tuple(slice(None, None, draw(st.sampled_from([1, 2, -1]))) for _ in range(a.ndim))]
    if a.ndim >= 2 and draw(st.booleans()):
        a = a.T
    return a


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@PROFILE
@given(numpy_inputs(), st.booleans())
def test_from_numpy_round_trip_keeps_values(src, pinned):
    a = vg.from_numpy(src, CPU, pinned=pinned)
    assert a.dtype.isnative and a.dtype.name == src.dtype.name and a.shape == src.shape
    assert same(a.numpy(), src)
    assert same(np.from_dlpack(a), src)
    assert same(np.asarray(a), src)
    a.free()


@PROFILE
@given(numpy_inputs())
def test_copy_round_trip_through_device_arrays(src):
    src = np.ascontiguousarray(src, dtype=src.dtype.newbyteorder("="))
    a = vg.empty(src.shape, src.dtype, CPU)
    vg.copy(a, src)
    b = vg.empty(src.shape, src.dtype, CPU, pinned=True)
    vg.copy(b, a)
    out = np.empty_like(src)
    vg.copy(out, b)
    assert same(out, src)


@PROFILE
@given(hnp.arrays(dtypes, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6)), st.data())
def test_reshape_views_see_the_same_memory_after_free(src, data):
    a = vg.from_numpy(src, CPU)
    flat = a.reshape(src.size)
    other = data.draw(st.permutations(src.shape))
    v = flat.reshape(tuple(other))
    a.free()
    gc.collect()
    assert same(v.numpy().reshape(-1), src.reshape(-1))
    with pytest.raises(ValueError, match="elements"):
        v.reshape(src.size + 1)


@PROFILE
@given(dtypes.filter(lambda d: d.kind in "iu"), st.integers(-(2**70), 2**70))
def test_full_integer_fill_matches_numpy(dt, value):
    try:
        want = np.full(3, value, dt)
    except OverflowError:
        with pytest.raises(OverflowError, match="fill_value"):
            vg.full(3, value, dt, CPU)
        return
    assert same(vg.full(3, value, dt, CPU).numpy(), want)


@PROFILE
@given(dtypes.filter(lambda d: d.kind == "f"), st.floats(allow_nan=True, allow_infinity=True, width=32))
def test_full_float_fill_matches_numpy(dt, value):
    assert same(vg.full(4, value, dt, CPU).numpy(), np.full(4, value, dt))


@PROFILE
@given(st.lists(st.integers(1, 2**40), min_size=2, max_size=4).filter(
    lambda dims: int(np.prod(dims, dtype=object)) > MAX_ELEMENTS))
def test_shapes_beyond_the_bound_allocate_nothing(dims):
    before = vg.memory_usage().device.current
    with pytest.raises(ValueError, match="shape="):
        vg.empty(dims, "uint8", CPU)
    with pytest.raises(ValueError, match="shape="):
        vg.DeviceTensor(dims, "uint8", CPU)
    assert vg.memory_usage().device.current == before


@PROFILE
@given(st.integers(0, 3).flatmap(lambda k: st.lists(st.integers(0, 2**63), min_size=k, max_size=k)))
def test_zero_size_shapes_with_huge_dimensions(dims):
    shape = (0, *dims)
    if int(np.prod([d for d in dims if d], dtype=object)) > MAX_ELEMENTS:
        with pytest.raises(ValueError, match="shape="):
            vg.empty(shape, "float32", CPU)
        return
    a = vg.empty(shape, "float32", CPU)
    assert a.size == 0 and a.nbytes == 0 and a.numpy().shape == shape


@PROFILE
@given(hnp.arrays(dtypes, small_shapes), st.sampled_from([None, (1, 0)]))
def test_dlpack_capsules_borrow_and_release(src, max_version):
    from vortexgo import _dlpack

    a = vg.from_numpy(src, CPU)
    before = _dlpack.live_count()
    cap = a.__dlpack__(max_version=max_version)
    assert _dlpack.live_count() == before + 1
    a.free()
    del cap
    assert _dlpack.live_count() == before


@PROFILE
@given(hnp.arrays(dtypes, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)), st.sampled_from(DTYPES))
def test_cast_matches_numpy_for_in_range_values(src, to):
    if src.dtype.kind == "c" or to.kind == "c":
        return
    a = vg.from_numpy(src, CPU)
    got = vg.cast(a, to).numpy()
    if to.kind in "iu":
        info = np.iinfo(to)
        vals = src.astype(np.float64)
        if not np.all(np.isfinite(vals)) or vals.min(initial=0) < info.min or vals.max(initial=0) > info.max:
            return  # saturation is documented; NumPy's out-of-range cast is undefined
        want = np.rint(vals).astype(to) if src.dtype.kind == "f" else src.astype(to)
    else:
        want = src.astype(to)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6)


@PROFILE
@given(st.sampled_from(DTYPES), st.integers(2, 4), st.data())
def test_shapes_at_the_bound_fail_cleanly_with_memory_error(dt, ndim, data):
    # Between 2**47 + 1 and 2**48 elements: allowed by the shape bound, but
    # more bytes than a process can map (47-bit user address space), so the
    # allocation fails, as MemoryError naming the shape, and leaks nothing.
    total = data.draw(st.integers(2**47 + 1, MAX_ELEMENTS))
    dims = [total]
    for _ in range(ndim - 1):  # split into factors, keeping the product within the bound
        f = data.draw(st.integers(1, 64))
        dims = [dims[0] // f, *dims[1:], f]
    if int(np.prod(dims, dtype=object)) <= 2**47:
        return
    before = vg.memory_usage()
    with pytest.raises(MemoryError, match="shape="):
        vg.empty(tuple(dims), dt, CPU)
    after = vg.memory_usage()
    assert (after.device.current, after.pinned.current) == (before.device.current, before.pinned.current)
