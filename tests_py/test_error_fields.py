"""Errors carry their fields from Go as attributes (gosrc/pyapi/errors.go
``tag``, python/vortexgo/_errors.py ``translate``): nothing is parsed out of
the message. CudaError's fields are checked against the fake and the real
driver in test_tensor_graph.py; InternalError's in test_panics.py."""

from __future__ import annotations

import gc

import pytest

import vortexgo as vg
from vortexgo._errors import translate


def test_budget_error_carries_request_usage_and_limit(device):
    gc.collect()
    before = vg.memory_usage()
    try:
        vg.set_memory_budget(device_bytes=before.device.current + 1000)
        with pytest.raises(vg.MemoryBudgetError) as info:
            vg.TripleBuffer(device, 100, "float32")  # 3 x 400 bytes: the third slot fails
        e = info.value
        assert (e.kind, e.purpose, e.requested) == ("device", "triple_buffer", 400)
        assert e.limit == before.device.current + 1000
        assert e.current + e.requested > e.limit
        assert "memory budget exceeded: requested 400 bytes" in str(e) and "\x1e" not in str(e)
    finally:
        vg.set_memory_budget(before.device.limit, before.pinned.limit)


@pytest.mark.parametrize("text, cls, attrs", [
    ('CudaError: cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory\x1e'
     '{"op": "cuMemAlloc_v2", "code": 2, "name": "CUDA_ERROR_OUT_OF_MEMORY"}',
     vg.CudaError, {"op": "cuMemAlloc_v2", "code": 2, "name": "CUDA_ERROR_OUT_OF_MEMORY"}),
    ('InternalError: engine: internal error (Go panic: boom)\x1e{"where": "engine", "go_stack": "goroutine 1"}',
     vg.InternalError, {"where": "engine", "go_stack": "goroutine 1"}),
    ("ValueError: n=-1, expected >= 0", ValueError, {}),
    ("CudaError: cuda: no fields", vg.CudaError, {"op": "", "code": 0, "name": ""}),
    ("no class at all", vg.VortexError, {}),
])
def test_translate_sets_the_fields_and_keeps_the_message(text, cls, attrs):
    e = translate(RuntimeError(text))
    assert type(e) is cls
    assert str(e) == text.split("\x1e")[0].partition(": ")[2] or cls is vg.VortexError
    for k, v in attrs.items():
        assert getattr(e, k) == v, k
    if cls is vg.InternalError:
        assert any("goroutine 1" in n for n in e.__notes__)


def test_messages_drop_go_call_prefixes_and_classes_show_as_vortexgo():
    """A user reads the message, not the Go call chain (issue 31): the core's
    "pkg.Func: " prefixes are dropped wherever they stand in the chain; the
    classes print as vortexgo.X, the name users catch them by."""
    e = translate(RuntimeError("ValueError: engine.Prepare: endpoint 1: memory.Op: size 0, expected > 0"))
    assert type(e) is ValueError and str(e) == "endpoint 1: size 0, expected > 0"
    e = translate(RuntimeError('ValueError: devices.Get: device="tpu", expected "cpu": invalid argument'))
    assert str(e) == 'device="tpu", expected "cpu"'
    assert str(translate(RuntimeError("memory.Allocator.Alloc: over budget"))) == "over budget"
    e = translate(RuntimeError('devices.Get: spec="cuda:7": no device'))
    assert type(e) is vg.VortexError and str(e) == 'spec="cuda:7": no device'
    # A Python name inside the text stays ("np.Array: " is not a Go package's).
    assert str(translate(RuntimeError("ValueError: got np.Array: bad"))) == "got np.Array: bad"
    for cls in (vg.VortexError, vg.CudaError, vg.ClosedError, vg.InUseError, vg.ForkError):
        assert f"{cls.__module__}.{cls.__qualname__}" == f"vortexgo.{cls.__name__}"
    import pickle
    assert type(pickle.loads(pickle.dumps(vg.ClosedError("x")))) is vg.ClosedError


def test_from_numpy_takes_python_ints_and_explains_int64():
    import numpy as np

    a = vg.from_numpy([1, 2, 3])
    assert a.dtype == np.int32 and a.numpy().tolist() == [1, 2, 3]
    for bad in (np.arange(3), [2**40]):
        with pytest.raises(TypeError, match=r"int64.*astype\(np.int32\)"):
            vg.from_numpy(bad)


def test_a_budget_refusal_keeps_its_fields_through_zeros():
    before = vg.memory_usage().device.limit
    vg.set_memory_budget(device_bytes=1 << 20)
    try:
        with pytest.raises(vg.MemoryBudgetError) as ei:
            vg.zeros(1 << 20, "float32", "cpu")
    finally:
        vg.set_memory_budget(device_bytes=before)  # 0: no limit, as before
    e = ei.value
    assert (e.kind, e.requested, e.limit) == ("device", 4 << 20, 1 << 20), vars(e)
    assert str(e).startswith("shape=(1048576,) of float32 (4194304 bytes) on cpu: memory budget exceeded")
