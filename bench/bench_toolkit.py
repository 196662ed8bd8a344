"""Async toolkit benchmark (issue 4), called by bench.py as run(results).

Sections, all measured in one run on the GPU and reported as ratios:
1. prism's table: synthetic stages of 2 ms upload, 5 ms compute, 2 ms download
   (spin kernels on the three streams), sequential (one stream) vs
   triple-buffered; achieved speedup next to the ideal 9/5 = 1.8x.
2. The same with real 64 MiB blocks: pinned H2D and D2H copies around a
   compute stage, each copy's GB/s while the others run vs its ceiling (the
   same copy alone on an idle GPU).
3. Graph replay vs eager launches: host time per pipeline iteration.
4. Coordinator bookkeeping (queue + poll) per op, in Go and from Python.

Targets (issue 4): speedup >= 0.97 of ideal; copies >= 0.9 of their ceiling
while compute runs; graph replay >= 3x lower host overhead; bookkeeping < 2 us.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import vortexgo as vg
from vortexgo.toolkit import DownloadOp, GpuPipelineStage, SpinOp, UploadOp

MIB = 1 << 20


def _spin_pipeline(ctx: vg.ManagedGpuContext, up_ms: float, comp_ms: float, down_ms: float) -> vg.PipelineStageManager:
    m = ctx.create_pipeline_manager()
    a = m.add_buffer(4096, 3)
    b = m.add_buffer(4096, 3)
    m.add_stage(GpuPipelineStage("upload", [], [a], SpinOp(up_ms), stream="upload"))
    m.add_stage(GpuPipelineStage("compute", [a], [b], SpinOp(comp_ms)))
    m.add_stage(GpuPipelineStage("download", [b], [], SpinOp(down_ms), stream="download"))
    return m


def _period_ms(ctx: vg.ManagedGpuContext, m: vg.PipelineStageManager, iters: int) -> vg.PipelineStats:
    m.execute_iterations(5)  # warm-up (JIT, first-touch)
    ctx.async_coordinator.synchronize_all()
    m.reset_stats()
    m.execute_iterations(iters)
    ctx.async_coordinator.synchronize_all()
    return m.get_stats()


def prism_table(dev: vg.Device, iters: int = 60) -> dict:
    """Sequential vs triple-buffered iteration time with 2/5/2 ms stages."""
    out = {}
    for name, streams in (("sequential", False), ("triple_buffered", True)):
        with vg.ManagedGpuContext(dev, enable_streams=streams) as ctx:
            st = _period_ms(ctx, _spin_pipeline(ctx, 2.0, 5.0, 2.0), iters)
            out[name] = {"iteration_ms": st.avg_iteration_ms, "throughput": st.throughput,
                         "gpu_utilization": st.gpu_utilization, "stage_ms": st.stage_ms}
    speedup = out["sequential"]["iteration_ms"] / out["triple_buffered"]["iteration_ms"]
    out["speedup"] = speedup
    out["ideal"] = 1.8
    out["fraction_of_ideal"] = speedup / 1.8
    return out


def _copy_alone_gbs(c: vg.AsyncCoordinator, host, dev_buf, upload: bool, reps: int = 10) -> float:
    ms = []
    for _ in range(reps):
        op = c.queue_upload(host, dev_buf) if upload else c.queue_download(dev_buf, host)
        c.wait(op, timeout=60)
        ms += [r.gpu_ms for r in c.poll() if r.id == op]
    return dev_buf.nbytes / (statistics.median(ms) * 1e-3) / 1e9


def real_blocks(dev: vg.Device, block: int = 64 * MIB, iters: int = 24) -> dict:
    """64 MiB blocks: copy GB/s while compute runs vs the copy ceilings."""
    h_in = vg.from_numpy(np.ones(block, np.uint8), dev, pinned=True)
    h_out = vg.zeros(block, "uint8", dev, pinned=True)
    d = vg.empty(block, "uint8", dev)
    with vg.AsyncCoordinator(dev) as c:
        up_ceiling = _copy_alone_gbs(c, h_in, d, True)
        down_ceiling = _copy_alone_gbs(c, h_out, d, False)
    copy_ms = block / (min(up_ceiling, down_ceiling) * 1e9) * 1e3
    comp_ms = round(copy_ms * 1.1, 3)  # compute a little longer than a copy: copies must hide under it
    out = {"block_mib": block // MIB, "upload_ceiling_gbs": up_ceiling, "download_ceiling_gbs": down_ceiling,
           "compute_ms": comp_ms}
    for name, streams in (("sequential", False), ("triple_buffered", True)):
        with vg.ManagedGpuContext(dev, enable_streams=streams) as ctx:
            m = ctx.create_pipeline_manager()
            a = m.add_buffer(block, 3)
            b = m.add_buffer(block, 3)
            m.add_stage(GpuPipelineStage("upload", [], [a], UploadOp(h_in)))
            m.add_stage(GpuPipelineStage("compute", [a], [b], SpinOp(comp_ms)))
            m.add_stage(GpuPipelineStage("download", [b], [], DownloadOp(h_out)))
            st = _period_ms(ctx, m, iters)
            out[name] = {"iteration_ms": st.avg_iteration_ms, "stage_ms": st.stage_ms,
                         "upload_gbs": block / (st.stage_ms["upload"] * 1e-3) / 1e9,
                         "download_gbs": block / (st.stage_ms["download"] * 1e-3) / 1e9,
                         "gpu_utilization": st.gpu_utilization}
    tb = out["triple_buffered"]
    out["upload_fraction_of_ceiling"] = tb["upload_gbs"] / up_ceiling
    out["download_fraction_of_ceiling"] = tb["download_gbs"] / down_ceiling
    out["speedup"] = out["sequential"]["iteration_ms"] / tb["iteration_ms"]
    seq = out["sequential"]["stage_ms"]
    out["ideal"] = sum(seq.values()) / max(seq.values())
    return out


def graph_vs_eager(dev: vg.Device, iters: int = 3000, per_graph: int = 30) -> dict:
    """Host time per iteration of a 4-stage pipeline: eager launches vs graph replay."""
    with vg.ManagedGpuContext(dev) as ctx:
        m = ctx.create_pipeline_manager()
        a = m.add_buffer(4096, 3)
        b = m.add_buffer(4096, 3)
        for i, (ins, outs, stream) in enumerate([([], [a], "upload"), ([a], [b], "compute"),
                                                 ([b], [b], "compute"), ([b], [], "download")]):
            m.add_stage(GpuPipelineStage(f"s{i}", ins, outs, SpinOp(0), stream=stream))
        coord = ctx.async_coordinator
        m.execute_iterations(100)
        coord.synchronize_all()
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            m.execute_iteration()
        eager_py = (time.perf_counter_ns() - t0) / iters / 1e3
        coord.synchronize_all()
        st_eager = m.get_stats()
        g = m.capture(per_graph)
        g.replay()
        coord.synchronize_all()
        m.reset_stats()
        reps = iters // per_graph
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            g.replay()
        graph_py = (time.perf_counter_ns() - t0) / (reps * per_graph) / 1e3
        coord.synchronize_all()
        st_graph = m.get_stats()
        g.close()
    return {"stages": 4, "iterations_per_graph": per_graph, "nodes": g.nodes,
            "eager_host_us": eager_py, "graph_host_us": graph_py,
            "eager_host_us_go": st_eager.host_us_per_iteration, "graph_host_us_go": st_graph.graph_host_us_per_iteration,
            "ratio": eager_py / graph_py}


def _python_bookkeeping(c: "vg.AsyncCoordinator", n: int) -> tuple[float, float]:
    """(poll each op, poll every 64 ops) in ns per op of queue_compute(callable) + poll from Python."""

    def nop(stream):
        pass

    for _ in range(1000):
        c.queue_compute(nop)
        c.poll()
    c.synchronize_all()
    c.poll()
    samples = []
    for _ in range(3):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            c.queue_compute(nop)
            c.poll()
        samples.append((time.perf_counter_ns() - t0) / n)
        c.synchronize_all()
        c.poll()
    # Batched: queue 64, poll once (the usual pattern).
    t0 = time.perf_counter_ns()
    for _ in range(n // 64):
        for _ in range(64):
            c.queue_compute(nop)
        c.poll()
    batched = (time.perf_counter_ns() - t0) / (n // 64 * 64)
    c.synchronize_all()
    return min(samples), batched


def bookkeeping(dev: vg.Device, n: int = 20000) -> dict:
    """Queue + poll cost per op: in Go (no Python) and from Python, without and
    with per-op GPU timing (a timing event record costs ~1.2 us, a plain one ~0.2)."""
    out = {}
    for timing in (False, True):
        with vg.AsyncCoordinator(dev, timing=timing) as c:
            go_ns = min(c._h.BookkeepingNs(n) for _ in range(3))
            py, batched = _python_bookkeeping(c, n)
        key = "timed_" if timing else ""
        out.update({f"{key}go_us": go_ns / 1e3, f"{key}python_us": py / 1e3, f"{key}python_batched_us": batched / 1e3})
    return out


def _md(r: dict) -> str:
    p, b, g, k = r["prism"], r["real_blocks"], r["graph"], r["bookkeeping"]
    ok = lambda cond: "yes" if cond else "**no**"  # noqa: E731
    lines = [
        "## Async toolkit (issue 4)", "",
        "### prism's table: 2 ms upload, 5 ms compute, 2 ms download (spin kernels)", "",
        "| mode | iteration (ms) | iterations/s | GPU busy |", "| --- | ---: | ---: | ---: |",
        f"| sequential (one stream) | {p['sequential']['iteration_ms']:.3f} | {p['sequential']['throughput']:.1f} | "
        f"{p['sequential']['gpu_utilization']:.2f} |",
        f"| triple-buffered (3 streams) | {p['triple_buffered']['iteration_ms']:.3f} | "
        f"{p['triple_buffered']['throughput']:.1f} | {p['triple_buffered']['gpu_utilization']:.2f} |",
        "",
        f"Speedup **{p['speedup']:.3f}x** vs ideal 9/5 = 1.8x: **{p['fraction_of_ideal']:.3f}** of ideal "
        f"(target >= 0.97: {ok(p['fraction_of_ideal'] >= 0.97)}).", "",
        f"### Real {b['block_mib']} MiB blocks: pinned H2D -> compute ({b['compute_ms']} ms spin) -> pinned D2H", "",
        "| | upload GB/s | download GB/s | iteration (ms) |", "| --- | ---: | ---: | ---: |",
        f"| copy alone (ceiling) | {b['upload_ceiling_gbs']:.2f} | {b['download_ceiling_gbs']:.2f} | — |",
        f"| sequential | {b['sequential']['upload_gbs']:.2f} | {b['sequential']['download_gbs']:.2f} | "
        f"{b['sequential']['iteration_ms']:.3f} |",
        f"| triple-buffered, while compute runs | {b['triple_buffered']['upload_gbs']:.2f} | "
        f"{b['triple_buffered']['download_gbs']:.2f} | {b['triple_buffered']['iteration_ms']:.3f} |",
        "",
        f"While compute runs: upload at **{b['upload_fraction_of_ceiling']:.3f}** and download at "
        f"**{b['download_fraction_of_ceiling']:.3f}** of their ceilings (target >= 0.9: "
        f"{ok(min(b['upload_fraction_of_ceiling'], b['download_fraction_of_ceiling']) >= 0.9)}); speedup "
        f"{b['speedup']:.3f}x vs ideal {b['ideal']:.3f}x (sum of stages / longest stage).", "",
        f"### Graph replay vs eager launches ({g['stages']} stages, {g['iterations_per_graph']} iterations per graph)",
        "",
        "| | host us / iteration (Python loop) | host us / iteration (in Go) |", "| --- | ---: | ---: |",
        f"| eager `execute_iteration()` | {g['eager_host_us']:.2f} | {g['eager_host_us_go']:.2f} |",
        f"| graph `replay()` | {g['graph_host_us']:.2f} | {g['graph_host_us_go']:.2f} |",
        "",
        f"Replay cuts per-iteration host overhead **{g['ratio']:.1f}x** (target >= 3x: {ok(g['ratio'] >= 3)}).", "",
        "### Coordinator bookkeeping (queue + poll, per op)", "",
        "| path | us / op, `timing=False` | us / op, per-op GPU timing |", "| --- | ---: | ---: |",
        f"| Go (no Python): QueueCompute + Poll | {k['go_us']:.3f} | {k['timed_go_us']:.3f} |",
        f"| Python: `queue_compute(callable)` + `poll()` each op | {k['python_us']:.3f} | {k['timed_python_us']:.3f} |",
        f"| Python: 64 x `queue_compute`, one `poll()` | {k['python_batched_us']:.3f} | "
        f"{k['timed_python_batched_us']:.3f} |",
        "",
        f"Target < 2 us per op (`timing=False`): Go {ok(k['go_us'] < 2)}, Python batched "
        f"{ok(k['python_batched_us'] < 2)}, Python polling every op {ok(k['python_us'] < 2)}. Per-op GPU timing "
        "adds two timing-event records (about 1.2 us each on an H200).",
    ]
    return "\n".join(lines)


def run(results: dict) -> None:
    """Run every section on cuda:0 and store results["toolkit"] and results["toolkit_md"]."""
    dev = vg.get_device("cuda:0")
    r = {"prism": prism_table(dev), "real_blocks": real_blocks(dev), "graph": graph_vs_eager(dev),
         "bookkeeping": bookkeeping(dev)}
    results["toolkit"] = r
    results["toolkit_md"] = _md(r)


if __name__ == "__main__":
    out: dict = {}
    run(out)
    print(out["toolkit_md"])
