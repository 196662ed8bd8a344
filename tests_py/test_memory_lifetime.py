"""Memory lifetime across the boundary (issue 12): borrowers keep memory
alive, free()/close() never frees under a user, operations hold what they
touch. Every case that crashed the interpreter before runs in its own
process, so a crash is a failure of that case, not a dead test run."""

from __future__ import annotations

import os

import numpy as np
import pytest

import _subproc
import vortexgo as vg

PRELUDE = """
import gc, sys, threading
import numpy as np
import vortexgo as vg

def array_bytes():
    u = vg.memory_usage().device.by_purpose.get("array")
    return u.bytes if u else 0

def churn():
    # Allocate and fill memory of the same size, so a freed mapping would be
    # reused (or unmapped) and a dangling view would show it.
    for _ in range(4):
        vg.full(1 << 20, 9, "uint8", "cpu").free()
"""


def run_isolated(code: str, timeout: float = 120) -> str:
    """Run ``code`` (after PRELUDE) in a fresh interpreter (see
    _subproc.run); assert it exits cleanly and return its stdout."""
    env = {} if "VORTEXGO_DEVICE" in os.environ else {"VORTEXGO_DEVICE": "cpu"}
    return _subproc.run(code, prelude=PRELUDE, timeout=timeout, env=env).stdout


# --- borrowers outlive the owner's free() --------------------------------------


@pytest.mark.parametrize("export", [
    "np.from_dlpack(a)",
    "a.numpy()",
    "np.asarray(a)",
    "np.asarray(memoryview(a))",
    "np.array(a, copy=False)",
    "a.reshape(1024, 1024).numpy()",
])
def test_export_survives_free(export):
    out = run_isolated(f"""
        a = vg.full(1 << 20, 1, "uint8", "cpu")
        v = {export}
        a.free()
        churn()
        print(int(v.sum()), array_bytes())
        del v
        gc.collect()
        print(array_bytes())
    """)
    # The view reads the original values while it lives, and the memory goes
    # back (budget usage returns to zero) with the last borrower.
    assert out.split() == [str(1 << 20), str(1 << 20), "0"]


def test_reshape_view_stays_usable_after_free():
    out = run_isolated("""
        a = vg.from_numpy(np.arange(12, dtype=np.int32), "cpu")
        b = a.reshape(3, 4)
        c = b.reshape(12)          # a view of a view shares the borrow
        a.free()
        assert a.freed and not b.freed
        try:
            a.numpy()
        except vg.ClosedError:
            print("owner closed")
        churn()
        vg.scale_offset(b, 2.0, 1.0, out=b)
        print(c.numpy().tolist() == list(range(1, 25, 2)))
        del b, c
        gc.collect()
        print(array_bytes())
    """)
    assert out.split() == ["owner", "closed", "True", "0"]


def test_array_interface_consumer_defers_release_until_collected():
    out = run_isolated("""
        class Consumer:  # keeps the exporter, as NumPy and CuPy do with the interfaces
            def __init__(self, obj):
                self.obj, self.__array_interface__ = obj, obj.__array_interface__
        a = vg.full(4096, 5, "int32", "cpu")
        v = np.asarray(Consumer(a))
        a.free()
        churn()
        print(int(v.sum()), array_bytes())
        del a
        gc.collect()
        print(array_bytes())      # the consumer still holds the Array object
        del v
        gc.collect()
        print(array_bytes())
    """)
    assert out.split() == [str(5 * 4096), "16384", "16384", "0"]


def test_dlpack_capsule_unconsumed_and_consumed_release():
    out = run_isolated("""
        from vortexgo import _dlpack
        a = vg.zeros(1024, "float32", "cpu")
        caps = [a.__dlpack__(), a.__dlpack__(max_version=(1, 0))]
        a.free()
        print(array_bytes(), _dlpack.live_count())
        del caps                      # dropped unconsumed: the destructor releases
        print(array_bytes(), _dlpack.live_count())
    """)
    assert out.split() == ["4096", "2", "0", "0"]


# --- tensors ----------------------------------------------------------------------


def test_tensor_view_returned_from_function_outlives_tensor():
    out = run_isolated("""
        def make():
            t = vg.DeviceTensor((256, 1024), "float32", "cpu")
            with t as v:
                v[:] = 3
            return t.view()
        v = make()
        gc.collect()
        churn()
        print(float(v.sum()) == 3 * 256 * 1024)
    """)
    assert out.split() == ["True"]


def test_tensor_view_after_close_and_across_resize():
    out = run_isolated("""
        t = vg.DeviceTensor(1 << 16, "uint8", "cpu")
        with t as v:
            v[:] = 7
        old = t.view()
        t.resize(1 << 20)                 # grows: reallocates
        with t as v:
            v[:] = 1
        churn()
        print(int(old.sum()) == 7 * (1 << 16), int(t.view().sum()) == 1 << 20)
        t.close()
        for what in ("view", "ptr", "acquire"):
            try:
                getattr(t, what)() if what != "ptr" else t.ptr
            except vg.ClosedError:
                print("closed")
        print(int(old.sum()) == 7 * (1 << 16))
    """)
    assert out.split() == ["True", "True", "closed", "closed", "closed", "True"]


# --- operations hold what they touch ----------------------------------------------------


def test_free_while_threads_copy():
    out = run_isolated("""
        src = np.ones(1 << 20, np.uint8)
        outcomes = {"ok": 0, "closed": 0, "other": []}
        lock = threading.Lock()
        for round in range(20):
            a = vg.empty(1 << 20, "uint8", "cpu")
            start = threading.Barrier(5)
            def work():
                start.wait()
                for _ in range(50):
                    try:
                        vg.copy(a, src)
                        vg.scale_offset(a, 1.0, 0.0, out=a)
                        k = "ok"
                    except vg.ClosedError:
                        k = "closed"
                    except Exception as exc:
                        with lock:
                            outcomes["other"].append(repr(exc))
                        return
                    with lock:
                        outcomes[k] += 1
            ts = [threading.Thread(target=work) for _ in range(4)]
            [t.start() for t in ts]
            start.wait()
            a.free()
            [t.join() for t in ts]
        print(outcomes["ok"] + outcomes["closed"], outcomes["closed"] > 0, outcomes["other"][:3])
    """)
    assert out.split() == [str(20 * 4 * 50), "True", "[]"]


def test_free_while_threads_export():
    out = run_isolated("""
        bad = []
        for round in range(30):
            a = vg.full(1 << 16, 2, "uint8", "cpu")
            views = []
            start = threading.Barrier(4)
            def work():
                start.wait()
                for _ in range(30):
                    try:
                        views.append(a.numpy())
                        views.append(np.from_dlpack(a))
                        views.append(a.reshape(256, 256).numpy())
                    except vg.ClosedError:
                        pass
                    except Exception as exc:
                        bad.append(repr(exc))
                        return
            ts = [threading.Thread(target=work) for _ in range(3)]
            [t.start() for t in ts]
            start.wait()
            a.free()
            [t.join() for t in ts]
            churn()
            if any(int(v.sum()) != 2 * v.size for v in views):
                bad.append("a view saw other values")
        print(bad[:3])
    """)
    assert out.split() == ["[]"]


@pytest.mark.parametrize("call", [
    "vg.scale_offset(a, 2.0)",
    "vg.cast(a, 'int8')",
    "vg.copy(np.empty(1024, np.float32), a)",
    "vg.copy(a, np.empty(1024, np.float32))",
    "a.numpy()",
    "a.reshape(32, 32)",
    "a.__dlpack__()",
    "memoryview(a)",
    "np.asarray(a)",
    "a.__array_interface__",
])
def test_use_after_free_raises(call):
    out = run_isolated(f"""
        a = vg.full(1024, 1.5, "float32", "cpu")
        a.free()
        try:
            {call}
        except vg.ClosedError as exc:
            print("ClosedError")
    """)
    assert out.split() == ["ClosedError"]


# --- silent wrong values are refused or fixed ---------------------------------------------


def test_values_are_not_reinterpreted(cpu):
    big = np.arange(6, dtype=">i4").reshape(2, 3)
    a = vg.from_numpy(big, cpu)
    assert a.dtype == np.dtype("int32") and a.dtype.isnative
    np.testing.assert_array_equal(a.numpy(), big)
    with pytest.raises(TypeError, match="dtype"):
        vg.copy(vg.empty(4, "float32", cpu), np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError, match="byte order"):
        vg.copy(np.empty(6, ">i4"), vg.zeros(6, "int32", cpu))
    with pytest.raises(ValueError, match="byte order"):
        vg.empty(3, ">f4", cpu)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(3, np.float32)
        ro.flags.writeable = False
        vg.copy(ro, vg.zeros(3, "float32", cpu))


@pytest.mark.parametrize("dtype, value", [("int8", 1000), ("int8", -129), ("uint8", -1), ("uint16", 1 << 16),
                                          ("int32", 2**31), ("uint32", 2**32), ("int16", 10**30)])
def test_full_refuses_out_of_range_like_numpy(cpu, dtype, value):
    with pytest.raises(OverflowError):
        np.full(2, value, dtype)  # what NumPy does
    with pytest.raises(OverflowError, match="fill_value"):
        vg.full(2, value, dtype, cpu)


def test_full_float_into_int_truncates_like_numpy(cpu):
    for v in (2.7, -2.7, 126.9):
        np.testing.assert_array_equal(vg.full(3, v, "int8", cpu).numpy(), np.full(3, v).astype("int8"))
    with pytest.raises(ValueError, match="finite"):
        vg.full(3, float("nan"), "int16", cpu)


# --- DLPack stream argument (the array API standard) -------------------------------------


@pytest.mark.parametrize("stream", [1, 0, -1, 2, "x", 1.0])
def test_cpu_dlpack_stream_must_be_none(cpu, stream):
    a = vg.zeros(3, "float32", cpu)
    with pytest.raises(ValueError, match="stream="):
        a.__dlpack__(stream=stream)
    a.__dlpack__(stream=None)


# --- sizes are bounded before anything is allocated ------------------------------------------


@pytest.mark.parametrize("shape, exc", [
    (2**64, ValueError), ((2**70, 1), ValueError), ((2**40, 2**40), ValueError), ((0, 2**63), ValueError),
    ((1,) * 65, ValueError), ((2, 1.5), TypeError), (2.0, TypeError), ((True, 2), TypeError), ("12", TypeError), ((3, -1), ValueError),
])
@pytest.mark.parametrize("make", ["empty", "tensor", "reshape", "resize"])
def test_shapes_are_validated(cpu, shape, exc, make):
    import gc

    gc.collect()  # an earlier test's garbage freed during this one would change the count (seen on the GPU)
    before = vg.memory_usage().device.current
    with pytest.raises(exc, match="shape"):
        if make == "empty":
            vg.empty(shape, "uint8", cpu)
        elif make == "tensor":
            vg.DeviceTensor(shape, "uint8", cpu)
        elif make == "reshape":
            vg.zeros(4, "uint8", cpu).reshape(shape)
        else:
            vg.DeviceTensor(4, "uint8", cpu).resize(shape)
    assert vg.memory_usage().device.current == before


def test_huge_allocation_within_the_bound_is_a_memory_error():
    out = run_isolated("""
        for shape in [(2**47,), (2**20, 2**27)]:
            try:
                vg.empty(shape, "float64", "cpu")
            except MemoryError as exc:
                print("MemoryError" if "shape=" in str(exc) and "bytes" in str(exc) else exc)
        try:
            vg.DeviceTensor((2**24, 2**24), "float64", "cpu")
        except MemoryError:
            print("MemoryError")
        print(array_bytes())
    """)
    assert out.split() == ["MemoryError", "MemoryError", "MemoryError", "0"]


def test_memory_usage_record(cpu):
    base = vg.memory_usage()
    a = vg.zeros(1000, "uint8", cpu, pinned=True)
    u = vg.memory_usage()
    assert u.pinned.current - base.pinned.current == 1000
    before = base.pinned.by_purpose.get("array")
    assert u.pinned.by_purpose["array"].count == (before.count if before else 0) + 1
    a.free()
    assert vg.memory_usage().pinned.current == base.pinned.current
    with pytest.raises(ValueError, match="device_bytes"):
        vg.set_memory_budget(device_bytes=-1)
