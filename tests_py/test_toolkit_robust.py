"""Misuse of the async toolkit must never crash the interpreter or lose data.

Cases that crashed (or read freed memory) before issue 12 run in a
subprocess, so a crash is a failed test, not a dead run. Threads close
pools and readbacks while others take buffers; Hypothesis drives the
public API of pools, readbacks and triple buffers with sizes, counts,
timeouts and closed objects.
"""

from __future__ import annotations

import gc
import math
import threading

import numpy as np
import pytest

import _subproc
import vortexgo as vg
from vortexgo.toolkit import GpuPipelineStage, In, KernelOp, Out, i32

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def run_isolated(code: str, device: str = "cpu") -> _subproc.Outcome:
    """Run ``code`` in a fresh interpreter (``np``, ``vg`` and ``dev`` defined)
    and require a clean exit: a SIGSEGV or a Go fatal error fails the test
    with the child's output (see _subproc.run)."""
    prelude = f"import gc, numpy as np, vortexgo as vg\ndev = vg.get_device({device!r})\n"
    return _subproc.run(code, prelude=prelude, timeout=120)


# Churn: allocate and fill memory so a freed buffer is likely reused and
# overwritten before the view is read.
CHURN = """
        junk = [vg.full(1 << 18, 1, "float32", dev) for _ in range(8)]
        gc.collect()
"""


MISUSE = {
    "triple buffer slot view outlives close": """
        tb = vg.TripleBuffer(dev, 1 << 18, "float32")
        v = np.asarray(tb.slot(0))
        v[:] = 3
        tb.close()
        del tb
    """ + CHURN + """
        assert float(v.sum()) == 3 * (1 << 18)
        try:
            np.asarray(vg.TripleBuffer(dev, 4).slot(0)).sum()
        except Exception as exc:
            raise SystemExit(f"a fresh triple buffer failed: {exc}")
    """,
    "context triple buffer view outlives the context": """
        ctx = vg.ManagedGpuContext(dev)
        tb = ctx.create_triple_buffer(1 << 18)
        v = np.asarray(tb.get_upload_buffer())
        v[:] = 2
        ctx.close()
        try:
            tb.slot(0)
            raise SystemExit("slot() after close")
        except vg.ClosedError:
            pass
        del ctx, tb
    """ + CHURN + """
        assert float(v.sum()) == 2 * (1 << 18)
    """,
    "readback result outlives release and close": """
        rb = vg.Readback(1 << 20, dev)
        a = vg.full(1 << 18, 5, "float32", dev)
        h = rb.readback(a)
        v = h.get()
        rb.close()
        h.release()
        del h, rb
    """ + CHURN + """
        assert float(v.sum()) == 5 * (1 << 18)
    """,
    "readback handle refused after its pool closed": """
        rb = vg.Readback(1 << 10, dev)
        h = rb.readback(vg.full(16, 9, "float32", dev))
        v = h.get()                    # taken before the close: stays valid
        rb.close()
        for use in (lambda: h.done, lambda: h.wait(0), h.get):
            try:
                use()
                raise SystemExit("a handle of a closed pool was used")
            except vg.ClosedError:
                pass
        assert float(v.sum()) == 9 * 16
        h.release()                    # releasing after the close is fine
        try:
            h.get()
            raise SystemExit("get() after release")
        except vg.ClosedError:
            pass
    """,
    "pool buffer view outlives put and close": """
        p = vg.BufferPool(1 << 20, 2)
        b = p.get()
        v = np.asarray(b)
        v[:] = 7
        p.put(b)
        p.close()
        del b, p
    """ + CHURN + """
        assert int(v.sum()) == 7 * (1 << 20)
    """,
    "pool buffer in use survives close, freed at put": """
        p = vg.BufferPool(64, 1)
        b = p.get()
        p.close()
        m = memoryview(b)
        m[:] = bytes(range(64))
        p.put(b)
        del b
    """ + CHURN + """
        assert bytes(m) == bytes(range(64))
    """,
    "pool does not reuse a viewed buffer": """
        p = vg.BufferPool(64, 1, policy="block")
        b = p.get()
        v = np.asarray(b)
        v[:] = 7
        p.put(b)
        try:
            p.get(timeout=0.05)
            raise SystemExit("handed out while viewed")
        except TimeoutError:
            pass
        del v
        b2 = p.get(timeout=5)
        p.put(b2)
        try:
            np.asarray(b)
            raise SystemExit("a returned buffer exported")
        except vg.ClosedError:
            pass
    """,
    "coordinator streams and fast id die with it": """
        c = vg.AsyncCoordinator(dev)
        streams = (c.upload_stream, c.compute_stream, c.download_stream)
        fid = c._fid
        c.close()
        for name in ("upload_stream", "compute_stream", "download_stream"):
            try:
                getattr(c, name)
                raise SystemExit(name + " after close")
            except vg.ClosedError:
                pass
        for s in streams:
            for use in (lambda: s.synchronize(), lambda: s.handle, lambda: s.query()):
                try:
                    use()
                    raise SystemExit("a closed coordinator's stream still works")
                except vg.ClosedError:
                    pass
        from vortexgo._core import _ext
        others = [vg.AsyncCoordinator(dev) for _ in range(4)]
        assert _ext.pyapi_FastExternal(0, fid, 0) == -1, "a stale id drove a new coordinator"
        assert all(o.last_op_id == 0 for o in others)
    """,
    "kernel n past its arrays (coordinator)": """
        a = vg.zeros(16, "float32", dev)
        c = vg.AsyncCoordinator(dev)
        op = vg.toolkit.KernelOp.__new__(vg.toolkit.KernelOp)
        object.__setattr__(op, "name", "fill_float32")
        object.__setattr__(op, "grid", (1, 1, 1))
        object.__setattr__(op, "block", (1, 1, 1))
        object.__setattr__(op, "args", (a, 1 << 30, 1.0))
        try:
            h = op._handle()
            raise SystemExit("Python accepted n")
        except ValueError as exc:
            assert "n=1073741824" in str(exc) and "64 bytes" in str(exc), exc
        from vortexgo._core import api
        from vortexgo.toolkit._ops import _encode
        from vortexgo.toolkit._records import words
        w = words((1, 1, 1, 1, 1, 1, *_encode("fill_float32", [a, 1 << 30, 1.0])))
        try:
            api.NewStageOp(0, "fill_float32", *w.buffer_info())  # pipeline.StageKernel
            raise SystemExit("Go accepted n")
        except RuntimeError as exc:
            assert "n=1073741824" in str(exc), exc
    """,
    "kernel n past a stage buffer": """
        from vortexgo.toolkit import GpuPipelineStage, In, KernelOp, Out
        with vg.ManagedGpuContext(dev) as ctx:
            m = ctx.create_pipeline_manager()
            b = m.add_buffer(64, 1)
            m.add_stage(GpuPipelineStage("k", [b], [b],
                        KernelOp("scale_offset_float32", 1, 1, [Out(0), In(0), 1 << 20, 1.0, 0.0])))
            try:
                m.execute_iteration()
                raise SystemExit("stage launched")
            except ValueError as exc:
                assert "n=1048576" in str(exc), exc
    """,
    "huge sizes are refused before allocating": """
        for make in (lambda: vg.TripleBuffer(dev, 2**60, "float32"),
                     lambda: vg.Readback(2**60, dev),
                     lambda: vg.Readback(1, dev, buffers=2**40),
                     lambda: vg.BufferPool(2**60, 1),
                     lambda: vg.BufferPool(1, 2**40)):
            try:
                make()
                raise SystemExit("allocated")
            except (MemoryError, ValueError):
                pass
        with vg.ManagedGpuContext(dev) as ctx:
            m = ctx.create_pipeline_manager()
            try:
                m.add_buffer(2**60, 3)
                raise SystemExit("allocated")
            except MemoryError:
                pass
    """,
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_in_subprocess(case):
    run_isolated(MISUSE[case])


def test_kernel_n_refused_in_python(device):
    a = vg.zeros(16, "float32", device)
    with pytest.raises(ValueError, match=r"n=17 elements.*64 bytes"):
        KernelOp("fill_float32", 1, 1, [a, 17, 1.0])
    with pytest.raises(ValueError, match=r"n=5 elements.*argument 1 holds 16 bytes"):
        KernelOp("cast_int32_float32", 1, 1, [a, vg.zeros(4, "int32", device), 5])
    KernelOp("fill_float32", 1, 1, [a, 16, 1.0])  # exactly the size is fine
    KernelOp("fill_float32", 1, 1, [Out(0), 1 << 40, 1.0])  # stage buffers are checked at launch
    KernelOp("my_kernel", 1, 1, [a, 1 << 40])  # unknown kernels carry no signature


def test_kernel_n_refused_at_launch_after_swap(device):
    """The bound is checked again when the op is built for a launch."""
    with vg.AsyncCoordinator(device) as c:
        a = vg.zeros(16, "float32", device)
        op = KernelOp("fill_float32", 1, 1, [a, 16, 2.0])
        c.queue_compute(op)
        c.synchronize_all()
        assert a.numpy().sum() == 32


def test_closed_coordinator_id_never_drives_a_new_one(device):
    from vortexgo._core import _ext

    stale = []
    for _ in range(8):
        c = vg.AsyncCoordinator(device)
        stale.append(c._fid)
        c.close()
    fresh = vg.AsyncCoordinator(device)
    try:
        assert fresh._fid not in stale
        for fid in stale:
            assert _ext.pyapi_FastExternal(0, fid, 0) == -1
            assert _ext.pyapi_FastExternal(1, fid, 1) == -1
        assert fresh.last_op_id == 0 and fresh.pending == 0
    finally:
        fresh.close()


def test_context_coordinator_streams_close_with_context(device):
    ctx = vg.ManagedGpuContext(device)
    c = ctx.async_coordinator
    s = c.download_stream
    ctx.close()
    with pytest.raises(vg.ClosedError):
        c.download_stream
    with pytest.raises(vg.ClosedError):
        s.synchronize()
    with pytest.raises(vg.ClosedError):
        c.poll()


def test_readback_own_stream_closes_with_it(device):
    rb = vg.Readback(64, device)
    s = rb.stream
    rb.close()
    with pytest.raises(vg.ClosedError):
        s.synchronize()
    with pytest.raises(vg.ClosedError):
        rb.stream


@pytest.mark.parametrize("timing", [True, False])
def test_callable_ops_tracked_with_and_without_timing(device, timing):
    """Both callable paths (begin/end around the work, or one call after
    it without timing) give ids in order and report a raising callable."""
    with vg.AsyncCoordinator(device, timing=timing) as c:
        seen = []
        ids = [c.queue_compute(lambda s: seen.append(s)) for _ in range(5)]
        assert ids == list(range(1, 6)) and all(s is c.compute_stream for s in seen)

        def boom(stream):
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            c.queue_compute(boom)
        after = c.queue_compute(lambda s: None, deps=[ids[-1]])
        c.synchronize_all()
        done = {op.id: op for op in c.poll()}
        assert sorted(done) == list(range(1, after + 1))
        assert done[6].error == "RuntimeError: boom" and done[6].name == "external" and done[6].type == "compute"
        assert all(done[i].error is None for i in ids)
        assert (done[1].gpu_ms >= 0) == timing
    with pytest.raises(vg.ClosedError):
        c.queue_compute(lambda s: None)


# --- threads ---------------------------------------------------------------------------


def test_threads_take_pool_buffers_while_it_closes(device):
    errors: list[BaseException] = []
    views: list[np.ndarray] = []
    pool = vg.BufferPool(4096, 4, max_size=16, device=device)
    start = threading.Barrier(5)

    def taker(k: int) -> None:
        start.wait()
        for i in range(200):
            try:
                b = pool.get(timeout=0.5)
            except (vg.ClosedError, TimeoutError):
                return
            except BaseException as exc:  # noqa: BLE001 - reported on the test thread
                errors.append(exc)
                return
            try:
                v = np.asarray(b)
                v[:] = k
                if i % 7 == 0:
                    views.append(v)  # outlives the put and the close
                pool.put(b)
            except vg.ClosedError:
                return
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                return

    threads = [threading.Thread(target=taker, args=(k + 1,)) for k in range(4)]
    for t in threads:
        t.start()
    start.wait()
    pool.close()
    for t in threads:
        t.join(30)
    assert not errors, errors
    gc.collect()
    for v in views:
        assert np.all(v == v[0]) and v[0] > 0  # each view kept its own data


def test_threads_readback_while_it_closes(device):
    errors: list[BaseException] = []
    results: list[tuple[int, np.ndarray]] = []
    rb = vg.Readback(1024, device, buffers=2, max_buffers=8)
    srcs = [vg.full(256, k, "float32", device) for k in range(4)]
    start = threading.Barrier(5)

    def reader(k: int) -> None:
        start.wait()
        for _ in range(100):
            try:
                h = rb.readback(srcs[k])
                results.append((k, h.get(timeout=5)))
                h.release()
            except vg.ClosedError:
                return
            except vg.VortexError as exc:
                if "exhausted" in str(exc):
                    continue
                errors.append(exc)
                return
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    start.wait()
    rb.close()
    for t in threads:
        t.join(30)
    assert not errors, errors
    gc.collect()
    for k, v in results:
        assert np.all(v == k)


def test_threads_rotate_a_triple_buffer_while_it_closes(device):
    # Each stage call either works or raises ClosedError: never an IndexError
    # from a slot list emptied by close() under it.
    for _ in range(20):
        errors: list[BaseException] = []
        tb = vg.TripleBuffer(device, 1024)
        stop = threading.Event()

        def rotate() -> None:
            while not stop.is_set():
                try:
                    tb.get_upload_buffer(), tb.get_process_buffer(), tb.get_download_buffer(), tb.advance()
                    tb.slot(1)
                except vg.ClosedError:
                    return
                except BaseException as exc:  # noqa: BLE001 - reported on the test thread
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=rotate) for _ in range(4)]
        for t in threads:
            t.start()
        tb.close()
        stop.set()
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads), "a rotating thread hangs"
        assert not errors, errors
        with pytest.raises(vg.ClosedError):
            tb.get_upload_buffer()
        with pytest.raises(vg.ClosedError):
            tb.slot(0)


@pytest.mark.parametrize("make, exc, words", [
    # Allowed by the pool's bounds, refused by the allocator: the message names the pool's argument.
    (lambda: vg.BufferPool(2**40, 1, device="cpu"), (MemoryError, ValueError), ("buffer_size=1099511627776",)),
    # Counts beyond any pipeline's are bad arguments (ValueError), named.
    (lambda: vg.PipelineStageManager(vg.AsyncCoordinator("cpu")).add_buffer(16, 2**40), ValueError,
     ("versions=1099511627776", "at most 65536")),
    (lambda: vg.Readback(16, "cpu", buffers=2**40), ValueError, ("buffers=1099511627776",)),
    (lambda: vg.Readback(16, "cpu", max_buffers=2**40), ValueError, ("max_buffers=1099511627776",)),
])
def test_sizes_and_counts_name_their_argument(make, exc, words):
    with pytest.raises(exc) as ei:
        make()
    assert not isinstance(ei.value, vg.ClosedError)
    for w in words:
        assert w in str(ei.value), str(ei.value)


@pytest.mark.parametrize("name", ["upload_priority", "compute_priority", "download_priority"])
@pytest.mark.parametrize("v, exc", [(-2**63 - 1, ValueError), (2**63, ValueError), (2**70, ValueError),
                                    (1.5, TypeError), (True, TypeError), ("1", TypeError)])
def test_priorities_are_checked_and_named(name, v, exc):
    for make in (lambda: vg.AsyncCoordinator("cpu", **{name: v}), lambda: vg.ManagedGpuContext("cpu", **{name: v})):
        with pytest.raises(exc, match=name):
            make()
    with pytest.raises(exc, match="priority"):
        vg.Readback(16, "cpu", priority=v)


@pytest.mark.parametrize("v", [-2**63, 2**63 - 1, np.int32(-7), np.int64(3)])
def test_priorities_take_any_int64(v):
    vg.AsyncCoordinator("cpu", upload_priority=v, compute_priority=v, download_priority=v).close()
    vg.ManagedGpuContext("cpu", compute_priority=v).close()
    vg.Readback(16, "cpu", priority=v).close()


# --- Hypothesis: the public API with sizes, counts, timeouts, closed objects ------------

TIMEOUTS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5),
                     st.just("1"), st.booleans())
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _valid_timeout(t) -> bool:
    return t is None or (not isinstance(t, (bool, str)) and not math.isnan(t) and 0 <= t <= 1e8)


@SETTINGS
@given(size=st.integers(-3, 1 << 12), pool=st.integers(-2, 4), max_size=st.integers(-1, 6),
       policy=st.sampled_from(["grow", "block", "other"]), timeout=TIMEOUTS, takes=st.integers(0, 6))
def test_pool_api_properties(cpu, size, pool, max_size, policy, timeout, takes):
    ok_cfg = size >= 1 and pool >= 0 and max_size >= 0 and policy in ("grow", "block") \
        and not (max_size and pool > max_size) and not (policy == "block" and pool == 0)
    try:
        p = vg.BufferPool(size, pool, policy=policy, max_size=max_size, device=cpu)
    except (ValueError, TypeError):
        assert not ok_cfg
        return
    assert ok_cfg
    got = []
    cap = pool if policy == "block" else (max_size or math.inf)
    for _ in range(takes):
        try:
            # None waits forever: on an exhausted pool that is a hang, not a test. A valid
            # timeout is waited in full there (Hypothesis draws up to 1e8 s): capped then.
            t = timeout if _valid_timeout(timeout) and timeout is not None else 0
            b = p.get(min(t, 0.05) if len(got) >= cap else t)
        except TimeoutError:
            assert len(got) >= cap
            continue
        assert b.nbytes == size
        got.append((b, np.asarray(b)))
    if not _valid_timeout(timeout):
        with pytest.raises((ValueError, TypeError)):
            p.get(timeout)
    s = p.stats()
    assert s.in_use == len(got) and s.allocated >= len(got)
    for b, v in got[::2]:
        p.put(b)
        with pytest.raises(vg.ClosedError):
            b.numpy()
    p.close()
    with pytest.raises(vg.ClosedError):
        p.get(0)
    with pytest.raises(vg.ClosedError):
        p.stats()
    for b, v in got:
        v[:] = 1  # views stay writable: their memory is alive
    for b, _ in got[1::2]:
        p.put(b)  # putting back after close frees it (or its last view does)


@SETTINGS
@given(size=st.integers(-2, 1 << 12), buffers=st.integers(-1, 3), max_buffers=st.integers(-1, 4),
       n=st.integers(0, 1 << 11), timeout=TIMEOUTS, release_first=st.booleans())
def test_readback_api_properties(cpu, size, buffers, max_buffers, n, timeout, release_first):
    ok_cfg = size >= 1 and buffers >= 1 and max_buffers >= 0 and not (max_buffers and max_buffers < buffers)
    try:
        rb = vg.Readback(size, cpu, buffers=buffers, max_buffers=max_buffers)
    except (ValueError, TypeError):
        assert not ok_cfg
        return
    assert ok_cfg
    src = vg.full(n, 3, "uint8", cpu)
    if n > size:
        with pytest.raises(ValueError):
            rb.readback(src)
        rb.close()
        return
    h = rb.readback(src)
    if _valid_timeout(timeout):
        v = h.get(timeout)
        assert v.shape == (n,) and np.all(v == 3)
    else:
        with pytest.raises((ValueError, TypeError)):
            h.wait(timeout)
        v = h.get()
    if release_first:
        h.release()
        with pytest.raises(vg.ClosedError):
            h.done
    rb.close()
    with pytest.raises(vg.ClosedError):
        rb.readback(src)
    with pytest.raises(vg.ClosedError):
        rb.close()
    assert np.all(v == 3)
    if not release_first:
        with pytest.raises(vg.ClosedError):
            h.done                     # its pool is closed
        h.release()                    # releasing is still fine
    with pytest.raises(vg.ClosedError):
        h.release()


@SETTINGS
@given(size=st.integers(-2, 1 << 10), dtype=st.sampled_from(["float32", "uint8", "int16", "float64", "float16"]),
       ops=st.lists(st.sampled_from(["up", "proc", "down", "adv", "reset", "slot", "close"]), max_size=20),
       slot=st.integers(-2, 4))
def test_triple_buffer_api_properties(cpu, size, dtype, ops, slot):
    try:
        tb = vg.TripleBuffer(cpu, size, dtype)
    except (ValueError, TypeError):
        assert size < 1 or dtype == "float16"
        return
    views = []
    closed = False
    for op in ops:
        if closed:
            with pytest.raises(vg.ClosedError):
                tb.get_upload_buffer()
            continue
        if op == "close":
            tb.close()
            closed = True
        elif op == "adv":
            tb.advance()
        elif op == "reset":
            tb.reset()
        elif op == "slot":
            if 0 <= slot <= 2:
                views.append(np.asarray(tb.slot(slot)))
            else:
                with pytest.raises(ValueError):
                    tb.slot(slot)
        else:
            b = {"up": tb.get_upload_buffer, "proc": tb.get_process_buffer, "down": tb.get_download_buffer}[op]()
            if b is not None:
                assert b.size == size
                views.append(np.asarray(b))
        if not closed:
            assert all(s in ("free", "uploading", "processing", "downloading") for s in tb.states())
    if not closed:
        tb.close()
    with pytest.raises(vg.ClosedError):
        tb.close()
    gc.collect()
    for v in views:
        v[...] = 1  # alive after close
        assert v.shape == (size,)


def test_spin_and_kernel_arg_validation():
    for bad in (float("nan"), float("inf"), -1, 1e7):
        with pytest.raises(ValueError, match="ms"):
            vg.toolkit.SpinOp(bad)
    with pytest.raises(TypeError):
        vg.toolkit.SpinOp("1")
    with pytest.raises(ValueError, match="i32"):
        i32(2**31)
    with pytest.raises(ValueError, match="grid"):
        KernelOp("k", 2**32)
    with pytest.raises(ValueError, match="In.index"):
        In(-1)
    GpuPipelineStage("s", [0], [0], KernelOp("k"))


def test_pipeline_buffer_view_outlives_manager():
    run_isolated("""
        with vg.ManagedGpuContext(dev) as ctx:
            m = ctx.create_pipeline_manager()
            b = m.add_buffer(1 << 20, 2)
            v = np.asarray(m.buffer(b, 1))
            v[:] = 6
        try:
            m.buffer(b)
            raise SystemExit("buffer() after close")
        except vg.ClosedError:
            pass
        del m, ctx
    """ + CHURN + """
        assert int(v.sum()) == 6 * (1 << 20)
    """)
