"""GPU-only behaviour of the async toolkit: CuPy work as a compute op, real
overlap between the three streams, graph replay savings. Skips cleanly
without CUDA (and CuPy where needed)."""

from __future__ import annotations

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.toolkit import GpuPipelineStage, In, KernelOp, Out, SpinOp, UploadOp, DownloadOp

pytestmark = pytest.mark.timeout(180)


def test_cupy_callable_between_upload_and_download(gpu, cp):
    n = 1 << 20
    with vg.AsyncCoordinator(gpu) as c:
        host = vg.from_numpy(np.arange(n, dtype=np.float32), gpu, pinned=True)
        out = vg.zeros(n, "float32", gpu, pinned=True)
        buf = vg.empty(n, "float32", gpu)
        for rep in range(3):
            # A long spin before the upload: if the CuPy op or the download
            # were not ordered by events, they would read stale data.
            s0 = c.queue_compute(SpinOp(20))
            u = c.queue_upload(host, buf, deps=[s0])

            def op(stream):
                with stream:  # CuPy's current stream is now the compute stream
                    # Zero-copy; DLPack orders the compute stream after buf's
                    # producer with an event, without a host wait.
                    x = cp.from_dlpack(buf)
                    cp.multiply(x, 2.0, out=x)
                    x += 1.0 + rep

            k = c.queue_compute(op, deps=[u])
            d = c.queue_download(buf, out, deps=[k])
            c.wait(d, timeout=30)
            np.testing.assert_allclose(out.numpy(), np.arange(n) * 2 + 1 + rep)
        reports = c.poll()
        ext = [r for r in reports if r.name == "external"]
        assert len(ext) == 3 and all(r.gpu_ms >= 0 and r.error is None for r in ext)


def test_cupy_callable_on_compute_stream_handle(gpu, cp):
    with vg.AsyncCoordinator(gpu) as c:
        seen = []
        c.queue_compute(lambda s: seen.append(s.handle))
        assert seen == [c.compute_stream.handle]
        c.synchronize_all()


def test_three_streams_overlap_in_stats(gpu):
    # prism's 2/5/2 ms stages: with three buffer versions iterations overlap,
    # so the period approaches the compute stage (5 ms), not the sum (9 ms).
    with vg.ManagedGpuContext(gpu) as ctx:
        m = ctx.create_pipeline_manager()
        a = m.add_buffer(1 << 12, 3)
        b = m.add_buffer(1 << 12, 3)
        m.add_stage(GpuPipelineStage("upload", [], [a], SpinOp(2), stream="upload"))
        m.add_stage(GpuPipelineStage("compute", [a], [b], SpinOp(5)))
        m.add_stage(GpuPipelineStage("download", [b], [], SpinOp(2), stream="download"))
        m.execute_iterations(30)
        ctx.async_coordinator.synchronize_all()
        st = m.get_stats()
        assert st.iterations == 30
        assert st.avg_iteration_ms < 6.5, st
        assert 4.5 < st.stage_ms["compute"] < 6.0
        assert st.gpu_utilization > 0.9

    with vg.ManagedGpuContext(gpu, enable_streams=False) as ctx:
        m = ctx.create_pipeline_manager()
        a = m.add_buffer(1 << 12, 3)
        b = m.add_buffer(1 << 12, 3)
        m.add_stage(GpuPipelineStage("upload", [], [a], SpinOp(2), stream="upload"))
        m.add_stage(GpuPipelineStage("compute", [a], [b], SpinOp(5)))
        m.add_stage(GpuPipelineStage("download", [b], [], SpinOp(2), stream="download"))
        m.execute_iterations(10)
        ctx.async_coordinator.synchronize_all()
        assert m.get_stats().avg_iteration_ms > 8.5


def test_copies_overlap_compute(gpu):
    n = 16 << 20
    host_in = vg.from_numpy(np.ones(n // 4, np.float32), gpu, pinned=True)
    host_out = vg.zeros(n // 4, "float32", gpu, pinned=True)
    with vg.AsyncCoordinator(gpu) as c, vg.PipelineStageManager(c) as m:
        a = m.add_buffer(n, 3)
        b = m.add_buffer(n, 3)
        m.add_stage(GpuPipelineStage("upload", [], [a], UploadOp(host_in)))
        m.add_stage(GpuPipelineStage("scale", [a], [b], KernelOp(
            "scale_offset_float32", (n // 4 + 255) // 256, 256, [Out(0), In(0), n // 4, 3.0, 0.0])))
        m.add_stage(GpuPipelineStage("download", [b], [], DownloadOp(host_out)))
        m.execute_iterations(12)
        c.synchronize_all()
        np.testing.assert_allclose(host_out.numpy()[:10], 3.0)
        st = m.get_stats()
        serial = sum(st.stage_ms.values())
        assert st.avg_iteration_ms < serial, st


def test_graph_replay_cuts_host_overhead(gpu):
    with vg.AsyncCoordinator(gpu) as c, vg.PipelineStageManager(c) as m:
        a = m.add_buffer(4096, 3)
        b = m.add_buffer(4096, 3)
        for i, (ins, outs) in enumerate([([], [a]), ([a], [b]), ([b], [b]), ([b], [])]):
            m.add_stage(GpuPipelineStage(f"s{i}", ins, outs, SpinOp(0)))
        m.execute_iterations(300)
        with m.capture(30) as g:
            g.replay(10)
            c.synchronize_all()
            st = m.get_stats()
        assert st.graph_iterations == 300
        assert st.graph_host_us_per_iteration < st.host_us_per_iteration, st


def test_readback_of_cupy_array(gpu, cp):
    x = cp.arange(1000, dtype=cp.float32) * 2
    h = vg.readback(x)
    np.testing.assert_array_equal(h.get(timeout=30), np.arange(1000) * 2)
    h.release()


# --- ownership on the GPU (issue 12): views keep toolkit memory alive ----------------


def test_cupy_view_of_triple_buffer_slot_outlives_close(gpu, cp):
    tb = vg.TripleBuffer(gpu, 1 << 20, "float32")
    v = cp.asarray(tb.slot(1))  # CAI: CuPy's UnownedMemory keeps the slot Array, which holds the lease
    v.fill(3)
    tb.close()
    del tb
    junk = [vg.full(1 << 20, 7, "float32", gpu) for _ in range(8)]  # would reuse freed memory
    cp.cuda.Device().synchronize()
    assert float(v.sum()) == 3 * (1 << 20)
    del junk


def test_readback_result_outlives_pool_on_gpu(gpu):
    rb = vg.Readback(1 << 22, gpu)
    src = vg.full(1 << 20, 5, "float32", gpu)
    h = rb.readback(src)
    v = h.get(timeout=30)
    rb.close()
    h.release()
    del h, rb
    junk = [vg.zeros(1 << 20, "float32", gpu, pinned=True) for _ in range(8)]
    assert float(v.sum()) == 5 * (1 << 20)
    del junk


def test_kernel_n_past_arrays_refused_on_gpu(gpu):
    a = vg.zeros(16, "float32", gpu)
    with pytest.raises(ValueError, match="n=4096"):
        KernelOp("fill_float32", 16, 256, [a, 4096, 1.0])
    with vg.ManagedGpuContext(gpu) as ctx:
        m = ctx.create_pipeline_manager()
        b = m.add_buffer(64, 1)
        m.add_stage(GpuPipelineStage("k", [b], [b], KernelOp("scale_offset_float32", 16, 256,
                                                              [Out(0), In(0), 4096, 1.0, 0.0])))
        with pytest.raises(ValueError, match="n=4096"):
            m.execute_iteration()
        ctx.async_coordinator.synchronize_all()  # the context is still usable (no illegal address)


def test_closed_coordinator_stream_on_gpu(gpu):
    c = vg.AsyncCoordinator(gpu)
    s = c.download_stream
    c.close()
    with pytest.raises(vg.ClosedError):
        s.synchronize()
    with pytest.raises(vg.ClosedError):
        s.__cuda_stream__()
    with pytest.raises(vg.ClosedError):
        c.download_stream
