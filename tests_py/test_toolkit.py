"""The async toolkit (issue 4) on every available backend: triple buffers, the
coordinator, pipeline stages, the managed context, readback, buffer pools and
the memory budget, with bad input for every public call and forge3d's
threading patterns."""

from __future__ import annotations

import gc
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.toolkit import (
    CompletedOp,
    DownloadOp,
    GpuPipelineStage,
    In,
    KernelOp,
    Out,
    SpinOp,
    StepReport,
    UploadOp,
    f64,
    i32,
    u64,
)

pytestmark = pytest.mark.timeout(120)


def scale_op(n: int, scale: float, offset: float = 0.0, dst=None, src=None) -> KernelOp:
    """scale_offset_float32(dst, src, n, scale, offset) with 256-thread blocks."""
    dst = Out(0) if dst is None else dst
    src = In(0) if src is None else src
    return KernelOp("scale_offset_float32", (n + 255) // 256, 256, [dst, src, n, float(scale), float(offset)])


# --- TripleBuffer --------------------------------------------------------------


def test_triple_buffer_state_machine(device):
    with vg.TripleBuffer(device, 32, "float32") as tb:
        assert tb.size == 32 and tb.dtype == np.float32 and tb.nbytes == 128
        assert tb.states() == ("free", "free", "free")
        up = tb.get_upload_buffer()
        assert isinstance(up, vg.Array) and up.shape == (32,) and up.device == device
        assert tb.get_upload_buffer() is None  # already Uploading
        assert tb.get_process_buffer() is None  # nothing uploaded before round 0
        assert tb.get_download_buffer() is None
        assert tb.states() == ("uploading", "free", "free")
        assert tb.advance() == 1 and tb.round == 1
        assert tb.get_process_buffer() is up  # last round's upload slot
        nxt = tb.get_upload_buffer()
        assert nxt is not None and nxt.ptr != up.ptr
        tb.advance()
        assert tb.get_download_buffer() is up
        assert tb.states() == ("downloading", "uploading", "free")
        tb.advance()  # the download slot becomes Free
        assert tb.states()[0] == "free"
        assert "TripleBuffer" in repr(tb) and "round=3" in repr(tb)
        tb.reset()
        assert tb.states() == ("free", "free", "free") and tb.round == 0
        assert tb.slot(2).ptr not in (up.ptr, nxt.ptr)
    assert tb.closed and "closed" in repr(tb)
    with pytest.raises(vg.ClosedError):
        up.numpy()
    with pytest.raises(vg.ClosedError):
        tb.advance()


def test_triple_buffer_views_are_usable_arrays(device):
    with vg.TripleBuffer(device, 8, "int32") as tb:
        v = tb.slot(0)
        s = vg.Stream(device)
        vg.copy(v, np.arange(8, dtype=np.int32), stream=s)
        s.synchronize()
        out = np.zeros(8, np.int32)
        vg.copy(out, v, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(out, np.arange(8))
        with pytest.raises(ValueError, match="view"):
            v.free()


def test_triple_buffer_concurrent_claims(device):
    # Each slot claim is an atomic transition: of 8 threads racing for this
    # round's upload slot exactly one wins.
    with vg.TripleBuffer(device, 4, "uint8") as tb:
        for _ in range(20):
            barrier = threading.Barrier(8)
            wins = []

            def claim():
                barrier.wait(timeout=10)
                wins.append(tb.get_upload_buffer() is not None)

            threads = [threading.Thread(target=claim) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            assert sum(wins) == 1
            tb.reset()


@pytest.mark.parametrize("args, exc", [
    ((16, "float128"), TypeError), ((0, "float32"), ValueError), ((-1, "float32"), ValueError),
    ((1.5, "float32"), TypeError), ((True, "float32"), TypeError),
])
def test_triple_buffer_bad_input(device, args, exc):
    with pytest.raises(exc):
        vg.TripleBuffer(device, *args)


def test_triple_buffer_bad_slot(cpu):
    with vg.TripleBuffer(cpu, 4) as tb:
        with pytest.raises(ValueError):
            tb.slot(3)
        with pytest.raises(TypeError):
            tb.slot("0")
    with pytest.raises(TypeError):
        vg.TripleBuffer(object(), 4)


# --- AsyncCoordinator ---------------------------------------------------------------


def test_coordinator_upload_compute_download(device):
    with vg.AsyncCoordinator(device, upload_priority=0, compute_priority=-1) as c:
        assert {c.upload_stream, c.compute_stream, c.download_stream} and not c.sequential
        assert isinstance(c.compute_stream, vg.Stream)
        n = 1000
        host = vg.from_numpy(np.arange(n, dtype=np.float32), device, pinned=True)
        dev_buf = vg.empty(n, "float32", device)
        out = np.zeros(n, np.float32)
        u = c.queue_upload(host, dev_buf)
        k = c.queue_compute(scale_op(n, 2.0, 1.0, dst=dev_buf, src=dev_buf), deps=[u])
        d = c.queue_download(dev_buf, out, deps=[k])
        assert (u, k, d) == (1, 2, 3) and c.last_op_id == 3
        c.wait(d, timeout=30)
        np.testing.assert_allclose(out, np.arange(n) * 2 + 1)
        reports = []
        deadline = time.time() + 10
        while len(reports) < 3 and time.time() < deadline:
            reports += c.poll()
        assert sorted(r.id for r in reports) == [1, 2, 3]
        byid = {r.id: r for r in reports}
        assert byid[1].type == "upload" and byid[1].nbytes == 4 * n
        assert byid[2].type == "compute" and byid[2].name == "scale_offset_float32"
        assert byid[3].type == "download" and byid[3].name == "download"
        assert all(isinstance(r, CompletedOp) and r.gpu_ms >= 0 and r.error is None for r in reports)
        assert c.poll() == []
        assert c.done(1) and c.pending == 0
        assert "AsyncCoordinator" in repr(c)


def test_coordinator_without_timing(device):
    with vg.AsyncCoordinator(device, timing=False) as c:
        n = 256
        host = vg.from_numpy(np.arange(n, dtype=np.float32), device, pinned=True)
        dev_buf = vg.empty(n, "float32", device)
        out = np.zeros(n, np.float32)
        u = c.queue_upload(host, dev_buf)
        k = c.queue_compute(scale_op(n, 3.0, 0.0, dst=dev_buf, src=dev_buf), deps=[u])
        d = c.queue_download(dev_buf, out, deps=[k])
        c.wait(d, timeout=30)
        np.testing.assert_allclose(out, np.arange(n) * 3)
        c.synchronize_all()
        reports = c.poll()
        assert sorted(r.id for r in reports) == [u, k, d]
        assert all(r.gpu_ms == -1 and r.error is None for r in reports)
    with pytest.raises(TypeError, match="timing="):
        vg.AsyncCoordinator(device, timing="no")


def test_coordinator_callable_compute_op(device):
    with vg.AsyncCoordinator(device) as c:
        buf = vg.empty(64, "float32", device)
        out = np.zeros(64, np.float32)
        u = c.queue_upload(np.ones(64, np.float32), buf)
        seen = []

        def op(stream):
            seen.append(stream)
            vg.scale_offset(buf, 3.0, 0.5, out=buf, stream=stream)

        k = c.queue_compute(op, deps=[u])
        assert seen == [c.compute_stream]
        d = c.queue_download(buf, out, deps=[k])
        c.wait(d, timeout=30)
        np.testing.assert_allclose(out, 3.5)
        c.synchronize_all()
        ext = [r for r in c.poll() if r.id == k]
        assert ext and ext[0].name == "external" and ext[0].error is None


def test_coordinator_callable_that_raises(device):
    with vg.AsyncCoordinator(device) as c:
        def bad(stream):
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            c.queue_compute(bad)
        # The op was closed: the compute stream is usable again.
        k = c.queue_compute(SpinOp(0))
        c.synchronize_all()
        reports = {r.id: r for r in c.poll()}
        assert "boom" in reports[1].error
        assert reports[k].error is None


def test_coordinator_fork_join_and_kernel_arg_types(device):
    with vg.AsyncCoordinator(device) as c:
        a = vg.empty(16, "float32", device)
        b = vg.empty(16, "float32", device)
        out = np.zeros(16, np.float32)
        u = c.queue_upload(np.full(16, 2, np.float32), a)
        k1 = c.queue_compute(KernelOp("scale_offset_float32", 1, 16, [b, a, u64(16), f64(10.0), 0.0]), deps=[u])
        k2 = c.queue_compute(KernelOp("scale_offset_float32", 1, 16, [a, a, np.uint64(16), np.float64(1.0), 1.0]),
                             deps=[u, k1])
        d = c.queue_download(b, out, deps=(k1, k2))
        c.wait(d, timeout=30)
        np.testing.assert_allclose(out, 20.0)


def test_coordinator_errors(device):
    with vg.AsyncCoordinator(device) as c:
        buf = vg.empty(16, "float32", device)
        u = c.queue_upload(np.zeros(16, np.float32), buf)
        with pytest.raises(KeyError, match="op 99"):
            c.wait(99)
        with pytest.raises(KeyError, match="op 0"):
            c.wait(0)
        with pytest.raises(KeyError, match="99"):
            c.done(99)
        with pytest.raises(ValueError, match=r"dependency 7.*latest queued is 1"):
            c.queue_compute(SpinOp(0), deps=[7])
        with pytest.raises(KeyError, match="dependency 0"):
            c.queue_compute(SpinOp(0), deps=[0])
        with pytest.raises(ValueError, match="expected an op id"):
            c.queue_compute(SpinOp(0), deps=[-3])
        with pytest.raises(TypeError):
            c.queue_compute(SpinOp(0), deps=["1"])
        with pytest.raises(ValueError, match=r"host range of 12 bytes, expected at least n=64"):
            c.queue_download(buf, np.zeros(3, np.float32))
        with pytest.raises(ValueError, match=r"host range of 8 bytes, expected at least n=64"):
            c.queue_upload(np.zeros(2, np.float32), buf)
        with pytest.raises(ValueError, match="nbytes=128"):
            c.queue_upload(np.zeros(64, np.float32), buf, nbytes=128)
        with pytest.raises(TypeError, match="host"):
            c.queue_upload([1, 2, 3], buf)
        with pytest.raises(TypeError, match="buffer"):
            c.queue_upload(np.zeros(16, np.float32), np.zeros(16, np.float32))
        with pytest.raises(ValueError, match="C-contiguous"):
            c.queue_upload(np.zeros((4, 8), np.float32)[:, ::2], buf)
        with pytest.raises(TypeError, match="callable"):
            c.queue_compute(42)
        with pytest.raises(TypeError, match="stage op"):
            c.queue_compute(UploadOp(np.zeros(4)))
        with pytest.raises(ValueError, match="stage buffer references"):
            c.queue_compute(scale_op(16, 1.0))
        with pytest.raises(vg.VortexError, match="no_such_kernel"):
            c.queue_compute(KernelOp("no_such_kernel", 1, 1, []))
        with pytest.raises(ValueError, match="timeout"):
            c.wait(u, timeout=-1)
        with pytest.raises(ValueError):
            c.upload_stream.close()  # owned by the coordinator
        c.wait(u, timeout=None)
    with pytest.raises(vg.ClosedError):
        c.queue_compute(SpinOp(0))
    with pytest.raises(vg.ClosedError):
        c.close()


def test_coordinator_wait_timeout(device):
    with vg.AsyncCoordinator(device) as c:
        if device.is_cpu:
            pytest.skip("the CPU backend runs work synchronously: nothing is ever pending")
        k = c.queue_compute(SpinOp(300))
        with pytest.raises(TimeoutError, match=f"op {k}"):
            c.wait(k, timeout=0.01)
        c.wait(k, timeout=30)


def test_coordinator_wait_releases_gil(device):
    with vg.AsyncCoordinator(device) as c:
        k = c.queue_compute(SpinOp(100))
        ticks = []
        stop = threading.Event()

        def ticker():
            while not stop.is_set():
                ticks.append(1)
                time.sleep(0.001)

        t = threading.Thread(target=ticker)
        t.start()
        c.wait(k, timeout=30)
        stop.set()
        t.join(5)
        if device.is_cuda:
            assert len(ticks) > 5


# --- PipelineStageManager ------------------------------------------------------------------


def _pipeline(c, n, host_in, host_out, versions=3):
    m = vg.PipelineStageManager(c)
    a = m.add_buffer(4 * n, versions)
    b = m.add_buffer(4 * n, versions)
    up = m.add_stage(GpuPipelineStage("upload", [], [a], UploadOp(host_in)))
    k = m.add_stage(GpuPipelineStage("scale", [a], [b], scale_op(n, 2.0)))
    down = m.add_stage(GpuPipelineStage("download", [b], [], DownloadOp(host_out)))
    m.set_order([up, k, down])
    return m, a, b


def test_pipeline_iterations_and_stats(device):
    n = 256
    host_in = vg.from_numpy(np.arange(n, dtype=np.float32), device, pinned=True)
    host_out = vg.zeros(n, "float32", device, pinned=True)
    with vg.AsyncCoordinator(device) as c, _pipeline(c, n, host_in, host_out)[0] as m:
        for _ in range(6):
            m.execute_iteration()
        m.execute_iterations(3)
        assert m.iteration == 9
        c.synchronize_all()
        np.testing.assert_allclose(host_out.numpy(), np.arange(n) * 2)
        st = m.get_stats()
        assert isinstance(st, vg.PipelineStats)
        assert st.iterations == 9 and st.in_flight == 0
        assert st.avg_iteration_ms > 0 and st.throughput > 0 and 0 < st.gpu_utilization <= 1
        assert set(st.stage_ms) == {"upload", "scale", "download"}
        assert [s.runs for s in st.stages] == [9, 9, 9]
        assert st.host_us_per_iteration > 0
        m.reset_stats()
        assert m.get_stats().iterations == 0
        assert m.buffer_versions(0) == 3 and m.buffer(1, 2, "float32").shape == (n,)
        assert "scale" in repr(m) and "GpuPipelineStage" in repr(m.stages[1])


def test_pipeline_user_buffers_follow_their_pending_work(gpu, cp):
    """Arrays registered with add_buffer(arrays=...) or given to a stage's op still have work
    queued on their own stream (vg.zeros' memset, here held 200 ms behind a spinning kernel):
    the manager's stages, on streams of their own, come after it, so neither the upload nor
    the download is overwritten by the late memset (an H200 under load once read zeros back)."""
    from test_gpu_interop import SPIN_SRC

    n = 32
    slow = vg.Stream(gpu)
    with slow:
        cp.RawKernel(SPIN_SRC, "spin")((1,), (1,), (np.uint64(200_000_000),))
    xs = [vg.zeros(n, "float32", gpu, stream=slow) for _ in range(2)]
    out = vg.zeros(n, "float32", gpu, pinned=True, stream=slow)  # a download's destination (add_stage)
    with vg.AsyncCoordinator(gpu) as c, vg.PipelineStageManager(c) as m:
        a = m.add_buffer(arrays=xs)
        m.add_stage(GpuPipelineStage("up", output_buffers=[a], op=UploadOp(np.full(n, 5, np.float32))))
        m.add_stage(GpuPipelineStage("down", input_buffers=[a], op=DownloadOp(out)))
        m.execute_iteration()
        m.execute_iteration()
        c.synchronize_all()
        slow.synchronize()
        np.testing.assert_allclose(out.numpy(), 5)
        for x in xs:
            np.testing.assert_allclose(x.numpy(), 5)


def test_pipeline_capture_and_replay(device):
    n = 64
    host_in = vg.from_numpy(np.full(n, 3, np.float32), device, pinned=True)
    host_out = vg.zeros(n, "float32", device, pinned=True)
    with vg.AsyncCoordinator(device) as c:
        m, _, _ = _pipeline(c, n, host_in, host_out)
        with m:
            m.execute_iteration()
            with m.capture() as g:
                assert g.iterations == 3 and g.nodes > 0 and "3 iterations" in repr(g)
                g.replay()
                g.replay(4)
                c.synchronize_all()
                st = m.get_stats()
                assert st.graph_iterations == 15 and st.iterations == 16
                assert st.graph_host_us_per_iteration > 0
                np.testing.assert_allclose(host_out.numpy(), 6.0)
            with pytest.raises(vg.ClosedError):
                g.replay()
            with pytest.raises(ValueError):
                m.capture(2)  # not a multiple of the 3-version cycle


def test_pipeline_user_buffers(device):
    n = 32
    xs = [vg.zeros(n, "float32", device) for _ in range(2)]
    host = np.full(n, 5, np.float32)
    out = np.zeros(n, np.float32)
    with vg.AsyncCoordinator(device) as c, vg.PipelineStageManager(c) as m:
        a = m.add_buffer(arrays=xs)
        m.add_stage(GpuPipelineStage("up", output_buffers=[a], op=UploadOp(host)))
        m.add_stage(GpuPipelineStage("spin", [a], [a], SpinOp(0.1)))
        m.add_stage(GpuPipelineStage("down", input_buffers=[a], op=DownloadOp(out)))
        m.execute_iteration()
        m.execute_iteration()
        c.synchronize_all()
        np.testing.assert_allclose(out, 5)
        np.testing.assert_allclose(xs[0].numpy(), 5)
        np.testing.assert_allclose(xs[1].numpy(), 5)


def test_pipeline_bad_input(device):
    with vg.AsyncCoordinator(device) as c, vg.PipelineStageManager(c) as m:
        with pytest.raises(ValueError, match="no stages"):
            m.execute_iteration()
        with pytest.raises(TypeError):
            m.add_buffer()
        with pytest.raises(ValueError):
            m.add_buffer(0)
        with pytest.raises(ValueError):
            m.add_buffer(16, versions=0)
        with pytest.raises(ValueError, match="not both"):
            m.add_buffer(16, arrays=[vg.empty(4, "float32", device)])
        with pytest.raises(ValueError, match="one size"):
            m.add_buffer(arrays=[vg.empty(4, "float32", device), vg.empty(5, "float32", device)])
        a = m.add_buffer(16, 1)
        with pytest.raises(TypeError, match="GpuPipelineStage"):
            m.add_stage("stage")
        with pytest.raises(TypeError, match="callable"):
            m.add_stage(GpuPipelineStage("py", [a], [a], lambda s: None))
        with pytest.raises(TypeError, match="op="):
            m.add_stage(GpuPipelineStage("none", [a], [a], None))
        with pytest.raises(ValueError, match="buffer 5"):
            m.add_stage(GpuPipelineStage("bad", [5], [a], SpinOp(0)))
        with pytest.raises(ValueError, match="stream="):
            m.add_stage(GpuPipelineStage("bad", [a], [a], SpinOp(0), stream="copy"))
        with pytest.raises(ValueError, match="output_buffers"):
            m.add_stage(GpuPipelineStage("up", [], [], UploadOp(np.zeros(4, np.float32))))
        with pytest.raises(ValueError, match="name"):
            m.add_stage(GpuPipelineStage("", [a], [a], SpinOp(0)))
        with pytest.raises(ValueError, match="Index"):
            m.add_stage(GpuPipelineStage("k", [a], [a], scale_op(4, 1.0, dst=Out(3))))
        s = m.add_stage(GpuPipelineStage("ok", [a], [a], SpinOp(0)))
        with pytest.raises(ValueError, match="twice"):
            m.set_order([s, s])
        with pytest.raises(ValueError, match="stage 4"):
            m.set_order([4])
        with pytest.raises(ValueError):
            m.set_order([])
        with pytest.raises(ValueError, match="does not exist"):
            m.buffer(9)
        with pytest.raises(TypeError):
            vg.PipelineStageManager("coordinator")


def test_ops_bad_input():
    with pytest.raises(TypeError):
        KernelOp("")
    with pytest.raises(ValueError):
        KernelOp("k", grid=0)
    with pytest.raises(ValueError):
        KernelOp("k", grid=(1, 1, 1, 1))
    with pytest.raises(TypeError):
        KernelOp("k", block="x")
    with pytest.raises(ValueError):
        SpinOp(-1)
    with pytest.raises(TypeError):
        SpinOp("1")
    with pytest.raises(TypeError):
        UploadOp([1, 2])
    with pytest.raises(TypeError):
        i32(1.5)
    with pytest.raises(ValueError):
        vg.toolkit.KernelArg("i8", 1)
    with pytest.raises(TypeError, match="bool"):
        KernelOp("k", 1, 1, [True])._handle()
    with pytest.raises(TypeError, match="argument 0"):
        KernelOp("k", 1, 1, ["x"])._handle()
    with pytest.raises(ValueError, match="i32"):
        KernelOp("k", 1, 1, [i32(2**40)])._handle()
    assert "KernelOp('k'" in repr(KernelOp("k")) and "2 ms" in repr(SpinOp(2)) and repr(i32(3)) == "i32(3)"


# --- ManagedGpuContext ------------------------------------------------------------------------


@pytest.mark.parametrize("enable_streams", [True, False])
def test_managed_context_triple_buffered_step(device, enable_streams):
    n = 128
    inputs = [vg.from_numpy(np.full(n, i, np.float32), device, pinned=True) for i in range(6)]
    outputs = [vg.zeros(n, "float32", device, pinned=True) for _ in range(6)]
    with vg.ManagedGpuContext(device, enable_streams=enable_streams) as ctx:
        assert ctx.async_coordinator.sequential is (not enable_streams)
        tb = ctx.create_triple_buffer(n, "float32")
        op = scale_op(n, 10.0, 1.0)
        got = []
        for step in range(8):
            src = inputs[step] if step < 6 else None
            dst = outputs[len(got)] if len(got) < 6 else None
            rep = ctx.triple_buffered_step(tb, op, src=src, dst=dst)
            assert isinstance(rep, StepReport) and rep.round == step
            if rep.download:
                got.append(rep.downloaded_round)
        assert got == list(range(6))
        ctx.async_coordinator.synchronize_all()
        for i, o in enumerate(outputs):
            np.testing.assert_allclose(o.numpy(), 10 * i + 1)
        with pytest.raises(ValueError, match="this context"):
            ctx.triple_buffered_step(vg.TripleBuffer(device, n), op)
        with pytest.raises(TypeError):
            ctx.triple_buffered_step(tb, lambda s: None)
        with pytest.raises(ValueError):
            tb.close()  # the context owns it
        with pytest.raises(ValueError):
            ctx.async_coordinator.close()
        m = ctx.create_pipeline_manager()
        assert "ManagedGpuContext" in repr(ctx)
    assert ctx.closed and tb.closed and m.closed
    with pytest.raises(vg.ClosedError):
        ctx.create_triple_buffer(4)
    with pytest.raises(vg.ClosedError):
        ctx.close()


def test_managed_context_step_needs_dst(device):
    with vg.ManagedGpuContext(device) as ctx:
        tb = ctx.create_triple_buffer(4)
        for _ in range(2):
            ctx.triple_buffered_step(tb, SpinOp(0), src=np.zeros(4, np.float32))
        with pytest.raises(ValueError, match="expected dst"):
            ctx.triple_buffered_step(tb, SpinOp(0), src=np.zeros(4, np.float32))
        with pytest.raises(ValueError, match="nbytes=64"):
            ctx.triple_buffered_step(tb, SpinOp(0), src=np.zeros(4, np.float32), dst=np.zeros(4, np.float32),
                                     nbytes=64)
        with pytest.raises(TypeError):
            vg.ManagedGpuContext(device, compute_priority="high")


# --- readback and buffer pools ------------------------------------------------------------------


def test_readback_function(device):
    x = vg.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4), device)
    h = vg.readback(x)
    assert isinstance(h, vg.ReadbackHandle)
    h.wait(timeout=30)
    assert h.done
    a = h.get()
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))
    assert a.dtype == np.float32 and a.shape == (3, 4)
    assert "done" in repr(h)
    h.release()
    assert h.released and "released" in repr(h)
    with pytest.raises(vg.ClosedError):
        h.get()
    with pytest.raises(vg.ClosedError):
        h.release()
    with pytest.raises(TypeError):
        vg.readback(np.zeros(3))


def test_readback_double_buffered_frames(device):
    # forge3d's pattern: render frame N+1 while frame N is read back.
    s = vg.Stream(device)
    targets = [vg.empty(1024, "float32", device, stream=s) for _ in range(2)]
    with vg.Readback(4096, device, buffers=2) as rb:
        assert rb.buffer_size == 4096 and isinstance(rb.stream, vg.Stream)
        pending = []
        results = []
        for frame in range(10):
            t = targets[frame % 2]
            # "Render" the frame on the producer stream.
            vg.scale_offset(vg.full(1024, frame, "float32", device, stream=s), 1.0, 0.0, out=t, stream=s)
            pending.append(rb.readback(t, stream=s))
            if len(pending) == 2:
                h = pending.pop(0)
                results.append(float(h.get(timeout=30)[0]))
                h.release()
        for h in pending:
            results.append(float(h.get(timeout=30)[0]))
            h.release()
        assert results == [float(i) for i in range(10)]
        st = rb.stats()
        assert st.held == 0 and st.total == 2
        assert "Readback" in repr(rb)
    with pytest.raises(vg.ClosedError):
        rb.readback(targets[0])


def test_readback_bad_input(device):
    with pytest.raises(ValueError):
        vg.Readback(0, device)
    with pytest.raises(ValueError):
        vg.Readback(16, device, buffers=0)
    with pytest.raises(ValueError):
        vg.Readback(16, device, buffers=3, max_buffers=2)
    with pytest.raises(TypeError):
        vg.Readback(16, device, stream="s")
    with vg.Readback(16, device, buffers=1) as rb:
        with pytest.raises(ValueError, match="buffer_size=16"):
            rb.readback(vg.empty(8, "float32", device))
        h = rb.readback(vg.empty(4, "float32", device))
        with pytest.raises(vg.VortexError, match="exhausted"):
            rb.readback(vg.empty(4, "float32", device))
        with pytest.raises(TypeError):
            h.stream_wait("s")
        with pytest.raises(ValueError, match="timeout"):
            h.wait(timeout=-2)
        h.stream_wait(vg.Stream(device))
        h.release()
        rb.readback(vg.empty(4, "float32", device)).release()
        other = "cuda:0" if device.is_cpu and vg.is_cuda_available() else None
        if other:
            with pytest.raises(ValueError, match="pool's device"):
                rb.readback(vg.empty(4, "float32", other))


def test_buffer_pool_grow_and_put(device):
    with vg.BufferPool(256, 2, device=device) as pool:
        a, b, c = pool.get(), pool.get(), pool.get()  # the third grows the pool
        assert a.pinned and a.nbytes == 256 and a.dtype == np.uint8
        assert pool.stats() == vg.toolkit.PoolStats(allocated=3, free=0, pending=0, in_use=3)
        s = vg.Stream(device)
        ev = vg.Event(device)
        pool.put(a, s)
        pool.put(b, ev.record(s))
        pool.put(c)
        st = pool.stats()
        assert st.in_use == 0 and st.allocated == 3
        with pytest.raises(vg.ClosedError):
            a.numpy()  # stale use of a returned buffer fails
        with pytest.raises(ValueError, match="not in use"):
            pool.put(a)
        with pool.buffer(stream=s) as buf:
            vg.copy(buf, np.full(256, 7, np.uint8), stream=s)
        assert pool.stats().in_use == 0
        with pytest.raises(TypeError):
            pool.put(np.zeros(4))
        with pytest.raises(TypeError):
            pool.put(pool.get(), after="stream")
        assert "BufferPool" in repr(pool)
    assert "closed" in repr(pool)
    with pytest.raises(vg.ClosedError):
        pool.get()


def test_buffer_pool_block_policy(device):
    with vg.BufferPool(64, 1, policy="block", device=device) as pool:
        a = pool.get()
        t0 = time.perf_counter()
        with pytest.raises(TimeoutError, match="no buffer free"):
            pool.get(timeout=0.05)
        assert time.perf_counter() - t0 >= 0.04
        with pytest.raises(TimeoutError):
            pool.get(timeout=0)
        got = []
        t = threading.Thread(target=lambda: got.append(pool.get(timeout=10)))
        t.start()
        time.sleep(0.05)
        pool.put(a)
        t.join(10)
        assert len(got) == 1
        pool.put(got[0])


@pytest.mark.parametrize("kwargs, exc", [
    (dict(buffer_size=0), ValueError), (dict(buffer_size=8, pool_size=-1), ValueError),
    (dict(buffer_size=8, policy="lifo"), ValueError), (dict(buffer_size=8, pool_size=0, policy="block"), ValueError),
    (dict(buffer_size=8, pool_size=3, max_size=2), ValueError), (dict(buffer_size="8"), TypeError),
])
def test_buffer_pool_bad_input(device, kwargs, exc):
    with pytest.raises(exc):
        vg.BufferPool(device=device, **kwargs)


@pytest.mark.parametrize("kwargs, exc, match", [
    # A count out of range is a ValueError naming the argument and the range,
    # as the pipeline's counts are; MemoryError stays for bytes.
    (dict(buffer_size=8, pool_size=2**40), ValueError, r"pool_size=1099511627776, expected 0 <= pool_size <= 65536"),
    (dict(buffer_size=8, pool_size=1, max_size=2**17), ValueError, r"max_size=131072, expected 0 <= max_size <= 65536"),
    (dict(buffer_size=2**50, pool_size=1), MemoryError, r"buffer_size=1125899906842624"),
])
def test_buffer_pool_out_of_range(device, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        vg.BufferPool(device=device, **kwargs)


# --- memory budget --------------------------------------------------------------------------------


@pytest.fixture
def budget():
    before = vg.memory_usage()
    yield before
    vg.set_memory_budget(before.device.limit, before.pinned.limit)


def test_memory_budget_exceeded_leaks_nothing(device, budget):
    # Memory of earlier tests' objects still waiting for the collector would
    # be freed mid-test and move the usage this test measures against.
    gc.collect()
    base = vg.memory_usage()
    vg.set_memory_budget(device_bytes=base.device.current + 1000)
    assert vg.memory_usage().device.limit == base.device.current + 1000
    with pytest.raises(vg.MemoryBudgetError, match=r"requested 400 bytes of device memory for \"triple_buffer\""):
        vg.TripleBuffer(device, 100, "float32")  # 3 x 400 bytes: the third slot fails
    with pytest.raises(vg.MemoryBudgetError, match="limit"):
        with vg.AsyncCoordinator(device) as c, vg.PipelineStageManager(c) as m:
            m.add_buffer(600, versions=2)
    with pytest.raises(vg.MemoryBudgetError):
        vg.ManagedGpuContext(device).create_triple_buffer(1000)
    after = vg.memory_usage()
    assert after.device.current == base.device.current
    assert after.device.active == base.device.active
    vg.set_memory_budget(pinned_bytes=base.pinned.current + 100)
    assert vg.memory_usage().device.limit == base.device.current + 1000  # None leaves it unchanged
    with pytest.raises(vg.MemoryBudgetError, match="pinned"):
        vg.BufferPool(64, 2, device=device)
    with pytest.raises(vg.MemoryBudgetError, match="readback"):
        vg.Readback(4096, device)
    assert vg.memory_usage().pinned.current == base.pinned.current


def test_memory_usage_by_purpose(device, budget):
    # As above: an earlier test's pinned pool freed by the collector mid-test
    # moved the base this test compares against (seen on the GPU, 8 workers).
    gc.collect()
    base = vg.memory_usage()
    vg.toolkit.reset_memory_peak()
    with vg.TripleBuffer(device, 256, "uint8"), vg.BufferPool(512, 2, device=device):
        u = vg.memory_usage()
        assert u.device.current - base.device.current == 768
        assert u.device.by_purpose["triple_buffer"].count >= 3
        assert u.pinned.by_purpose["buffer_pool"].bytes >= 1024
        assert u.device.peak >= u.device.current
        assert u.device.available is None or u.device.available >= 0
    u = vg.memory_usage()
    assert u.device.current == base.device.current and u.pinned.current == base.pinned.current


def test_memory_budget_bad_input(budget):
    with pytest.raises(ValueError):
        vg.set_memory_budget(device_bytes=-1)
    with pytest.raises(TypeError):
        vg.set_memory_budget(pinned_bytes="1GB")


# --- forge3d's concurrency patterns ---------------------------------------------------------------


def test_thread_pool_workers_each_with_own_stream(device):
    n = 4096

    def worker(task: int) -> float:
        s = vg.Stream(device)
        host = vg.from_numpy(np.full(n, task, np.float32), device, pinned=True)
        d = vg.empty(n, "float32", device, stream=s)
        vg.copy(d, host, stream=s)  # upload
        vg.scale_offset(d, 2.0, 1.0, out=d, stream=s)  # compute
        h = vg.readback(d, stream=s)  # readback
        val = float(h.get(timeout=30).sum())
        h.release()
        s.close()
        return val

    with ThreadPoolExecutor(max_workers=8) as ex:
        futures = [ex.submit(worker, t) for t in range(32)]
        results = [f.result(timeout=60) for f in futures]
    assert results == [float(n * (2 * t + 1)) for t in range(32)]


def test_thread_pool_shared_coordinator(device):
    # Eight threads queue on one coordinator: ids are unique and every
    # result is right (callables are serialised on the compute stream).
    with vg.AsyncCoordinator(device) as c:
        def worker(task: int) -> float:
            d = vg.empty(256, "float32", device)
            out = np.zeros(256, np.float32)
            u = c.queue_upload(np.full(256, task, np.float32), d)
            k = c.queue_compute(lambda s: vg.scale_offset(d, 3.0, 0.0, out=d, stream=s), deps=[u])
            dl = c.queue_download(d, out, deps=[k])
            c.wait(dl, timeout=30)
            return float(out[0])

        with ThreadPoolExecutor(max_workers=8) as ex:
            results = list(ex.map(worker, range(40), timeout=60))
        assert results == [3.0 * t for t in range(40)]
        assert c.last_op_id == 120


def test_producer_consumer_queue(device):
    tasks: queue.Queue = queue.Queue()
    results: queue.Queue = queue.Queue()
    n_workers, n_tasks = 3, 12

    def worker():
        s = vg.Stream(device)
        with vg.Readback(4 * 64, device, stream=s) as rb:
            while True:
                try:
                    task = tasks.get(timeout=5)
                except queue.Empty:
                    break
                if task is None:
                    break
                try:
                    x = vg.full(64, task, "float32", device, stream=s)
                    h = rb.readback(x, stream=s)
                    results.put((task, float(h.get(timeout=30).mean())))
                    h.release()
                except Exception as exc:  # pragma: no cover - reported below
                    results.put((task, repr(exc)))
                finally:
                    tasks.task_done()

    threads = [threading.Thread(target=worker) for _ in range(n_workers)]
    for t in threads:
        t.start()
    for i in range(n_tasks):
        tasks.put(i)
    for _ in range(n_workers):
        tasks.put(None)
    got = dict(results.get(timeout=30) for _ in range(n_tasks))
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    assert got == {i: float(i) for i in range(n_tasks)}


# --- peer copies ---------------------------------------------------------------------------------


def test_copy_peer_needs_cuda_memory(device):
    a = vg.zeros(4, "float32", device)
    b = vg.zeros(4, "float32", device, pinned=True)
    with pytest.raises(ValueError, match="expected CUDA device memory"):
        vg.copy_peer(b, a)
    with pytest.raises(TypeError):
        vg.copy_peer(np.zeros(4), a)
    reason = vg.toolkit.peer_copy_unavailable_reason()
    assert isinstance(reason, str)
    if vg._device.cuda_device_count() < 2:
        assert "two CUDA devices" in reason


def test_copy_peer_between_gpus():
    reason = vg.toolkit.peer_copy_unavailable_reason()
    if reason:
        pytest.skip(reason)
    src = vg.from_numpy(np.arange(1 << 20, dtype=np.float32), "cuda:0")
    dst = vg.empty(1 << 20, "float32", "cuda:1")
    vg.copy_peer(dst, src)
    np.testing.assert_array_equal(dst.numpy(), np.arange(1 << 20))
    with pytest.raises(ValueError, match="same size"):
        vg.copy_peer(vg.empty(3, "float32", "cuda:1"), src)
