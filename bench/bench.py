"""vortexgo benchmarks: `make bench` on the GPU machine.

Each section measures vortexgo next to the same work done in plain CuPy and
next to the hardware ceiling, in the same run, and reports ratios. Results go
to <out>/bench.json and <out>/bench.md (the device is named in both).
Sections: foundation (this file), engine (bench_engine.py), blocks (bench_blocks.py:
the block-size sweep and latency), peers
(bench_peers.py: expert CuPy and PyTorch pipelines, vortex itself), toolkit
(bench_toolkit.py), distributed (bench_distributed.py: Dask workers, CPU and
GPU) when present.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vortexgo as vg  # noqa: E402


def per_call_us(fn: Callable[[], object], n: int = 20000, repeats: int = 7) -> float:
    """Median over `repeats` of the mean cost of fn() over n calls, in microseconds."""
    for _ in range(min(n, 1000)):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter_ns() - t0) / n / 1e3)
    return statistics.median(samples)


def paired_us(ours: Callable[[], object], theirs: Callable[[], object], n: int = 20000,
              repeats: int = 9) -> tuple[float, float]:
    """per_call_us of both, measured interleaved (ours, theirs, ours, ...):
    a drift of the host's speed during the run (a VM's neighbours, clock
    changes) then hits both sides alike instead of biasing their ratio."""
    for fn in (ours, theirs):
        for _ in range(min(n, 1000)):
            fn()
    a, b = [], []
    for _ in range(repeats):
        for fn, out in ((ours, a), (theirs, b)):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            out.append((time.perf_counter_ns() - t0) / n / 1e3)
    return statistics.median(a), statistics.median(b)


def bandwidth_gbs(copy: Callable[[], None], sync: Callable[[], None], nbytes: int, iters: int = 20) -> float:
    """Median GB/s of `copy` (issued then synced), nbytes per call."""
    copy()
    sync()
    rates = []
    for _ in range(iters):
        t0 = time.perf_counter()
        copy()
        sync()
        rates.append(nbytes / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def foundation(results: dict) -> list[dict]:
    """Overheads of the CUDA resource layer against CuPy, and copy bandwidth."""
    import cupy as cp

    dev = vg.get_device("cuda:0")
    s = vg.Stream(dev)
    ev = vg.Event(dev)
    cs = cp.cuda.Stream(non_blocking=True)
    cev = cp.cuda.Event(disable_timing=True)
    x = vg.zeros(256, "float32", dev, stream=s)
    cx = cp.zeros(256, cp.float32)
    api = vg._core.api
    rows = []

    def row(name, ours, theirs, floor=None, note=""):
        r = {"op": name, "vortexgo_us": round(ours, 3), "cupy_us": round(theirs, 3),
             "ratio_vs_cupy": round(ours / theirs, 3) if theirs else None,
             "driver_floor_us": floor, "note": note}
        rows.append(r)
        return r

    s.synchronize()
    cs.synchronize()
    row("event record", *paired_us(lambda: ev.record(s), lambda: cev.record(cs)), 0.23)
    s.synchronize()
    cs.synchronize()
    row("event query", *paired_us(lambda: ev.is_complete, lambda: cev.done), 0.26)
    row("stream synchronize (empty)", *paired_us(s.synchronize, cs.synchronize), 0.32)
    row("stream wait event", *paired_us(lambda: s.wait_event(ev), lambda: cs.wait_event(cev)), None)
    s.synchronize()
    cs.synchronize()
    row("event synchronize (done)", *paired_us(ev.synchronize, cev.synchronize), None)
    row("stream query (idle)", *paired_us(lambda: s.is_complete, lambda: cs.done), None)
    # The same calls one layer down: the C fast path alone (what the methods
    # above add to it is Python attribute lookups), then the Go fast path it
    # replaced, so a regression shows which layer it is in.
    core = vg._core
    paths = "C fast path" if core.HAVE_C_FAST_PATH else "C fast path NOT BUILT (Go path)"
    row(f"event record, {paths} only", *paired_us(lambda: core.c_event_record(s._id, ev._id),
                                                   lambda: cev.record(cs)), 0.23)
    row(f"stream synchronize, {paths} only", *paired_us(lambda: core.c_stream_sync(s._id), cs.synchronize), 0.32)
    row("event record, Go fast path only", *paired_us(lambda: core.fast_record(s._id, ev._id),
                                                      lambda: cev.record(cs)), 0.23)

    from vortexgo import _array as varr
    f32 = vg._core.DTYPE_CODES["float32"]

    def ours_launch():
        # The one Go call behind vg.full (run_op: the fast array op).
        varr.run_op(varr.OP_FILL, s, x._mid, x.ptr, 0, 0, 256, f32, 0, 1.0)

    def cupy_launch():
        with cs:
            cx.fill(1.0)

    r = row("kernel launch (fill 256)", *paired_us(ours_launch, cupy_launch), 3.7,
            "ours: run_op, the Go call behind vg.full")
    s.synchronize()
    cs.synchronize()
    r2 = per_call_us(lambda: vg.scale_offset(x, 1.0, 0.0, out=x, stream=s), n=20000)
    s.synchronize()
    row("kernel launch via Python API (scale_offset)", r2, r["cupy_us"], 3.7, "full Python wrapper path")
    row("Python->Go call (no-op)", per_call_us(api.Noop, n=200000), float("nan"), None, "target < 1 us")

    # Copy bandwidth: pinned and pageable, ours and CuPy's, 64 MiB.
    nbytes = 64 << 20
    hp = vg.empty(nbytes, "uint8", dev, pinned=True)
    d = vg.empty(nbytes, "uint8", dev)
    pageable = np.ones(nbytes, np.uint8)
    chp = cp.cuda.alloc_pinned_memory(nbytes)
    chost = np.frombuffer(chp, np.uint8, nbytes)
    cd = cp.empty(nbytes, cp.uint8)

    bw = {}
    from vortexgo._array import OP_COPY, run_op  # the copy vg.copy runs, without its checks

    bw["h2d_pinned_vortexgo"] = bandwidth_gbs(lambda: run_op(OP_COPY, s, d._mid, d.ptr, hp._mid, hp.ptr, nbytes),
                                             s.synchronize, nbytes)
    bw["d2h_pinned_vortexgo"] = bandwidth_gbs(lambda: run_op(OP_COPY, s, hp._mid, hp.ptr, d._mid, d.ptr, nbytes),
                                             s.synchronize, nbytes)
    bw["h2d_pinned_cupy"] = bandwidth_gbs(lambda: cd.set(chost, stream=cs), cs.synchronize, nbytes)
    bw["d2h_pinned_cupy"] = bandwidth_gbs(lambda: cd.get(stream=cs, out=chost), cs.synchronize, nbytes)
    bw["h2d_pageable_vortexgo"] = bandwidth_gbs(lambda: run_op(OP_COPY, s, d._mid, d.ptr, 0, pageable.ctypes.data,
                                                              nbytes), s.synchronize, nbytes)
    bw["d2h_pageable_vortexgo"] = bandwidth_gbs(lambda: run_op(OP_COPY, s, 0, pageable.ctypes.data, d._mid, d.ptr,
                                                              nbytes), s.synchronize, nbytes)
    bw["h2d_pageable_cupy"] = bandwidth_gbs(lambda: cd.set(pageable, stream=cs), cs.synchronize, nbytes)
    results["copy_bandwidth_gbs"] = {k: round(v, 2) for k, v in bw.items()}
    results["copy_ratio_vs_cupy"] = {
        "h2d_pinned": round(bw["h2d_pinned_vortexgo"] / bw["h2d_pinned_cupy"], 3),
        "d2h_pinned": round(bw["d2h_pinned_vortexgo"] / bw["d2h_pinned_cupy"], 3),
    }
    results["overheads"] = rows
    return rows


def markdown(results: dict) -> str:
    lines = ["# vortexgo benchmarks", "",
             f"Device: **{results['device']}** (driver {results.get('driver', '?')}), "
             f"host {results['host']}, Python {results['python']}, CuPy {results.get('cupy', '?')}, "
             f"{results['date']}.", ""]
    if "overheads" in results:
        lines += ["## CUDA resource overheads (per call, median)", "",
                  "| operation | vortexgo (us) | CuPy (us) | vortexgo / CuPy | driver floor (us) | note |",
                  "| --- | ---: | ---: | ---: | ---: | --- |"]
        for r in results["overheads"]:
            cupy = "—" if r["cupy_us"] != r["cupy_us"] else f"{r['cupy_us']:.3f}"
            ratio = "—" if r["ratio_vs_cupy"] is None or r["ratio_vs_cupy"] != r["ratio_vs_cupy"] else f"{r['ratio_vs_cupy']:.2f}"
            floor = "—" if r["driver_floor_us"] is None else f"{r['driver_floor_us']}"
            lines.append(f"| {r['op']} | {r['vortexgo_us']:.3f} | {cupy} | {ratio} | {floor} | {r['note']} |")
        bw = results["copy_bandwidth_gbs"]
        ratio = results["copy_ratio_vs_cupy"]
        lines += ["", "## Copy bandwidth, 64 MiB (GB/s, median)", "",
                  "| direction | memory | vortexgo | CuPy | vortexgo / CuPy |", "| --- | --- | ---: | ---: | ---: |",
                  f"| H2D | pinned | {bw['h2d_pinned_vortexgo']} | {bw['h2d_pinned_cupy']} | {ratio['h2d_pinned']} |",
                  f"| D2H | pinned | {bw['d2h_pinned_vortexgo']} | {bw['d2h_pinned_cupy']} | {ratio['d2h_pinned']} |",
                  f"| H2D | pageable | {bw['h2d_pageable_vortexgo']} | {bw['h2d_pageable_cupy']} | "
                  f"{round(bw['h2d_pageable_vortexgo'] / bw['h2d_pageable_cupy'], 3)} |",
                  f"| D2H | pageable | {bw['d2h_pageable_vortexgo']} | — | — |"]
    for key in ("engine_md", "blocks_md", "peers_md", "processor_md", "toolkit_md", "distributed_md"):
        if key in results:
            lines += ["", results[key]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--only", default="", help="comma-separated sections: foundation,engine,blocks,peers,processor,toolkit,distributed")
    args = ap.parse_args()
    if not vg.is_cuda_available():
        print(f"make bench needs a GPU: {vg.cuda_unavailable_reason()}")
        return 2
    import cupy as cp

    dev = vg.get_device("cuda:0")
    results = {
        "device": dev.name, "cc": "%d.%d" % dev.compute_capability,
        "driver": cp.cuda.runtime.driverGetVersion(), "cupy": cp.__version__,
        "python": platform.python_version(), "host": platform.node(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    only = set(filter(None, args.only.split(",")))
    if not only or "foundation" in only:
        foundation(results)
    for name in ("engine", "blocks", "peers", "processor", "toolkit", "distributed"):
        if only and name not in only:
            continue
        try:
            mod = importlib.import_module(f"bench_{name}")
        except ImportError:
            continue
        mod.run(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(results, indent=2))
    md = markdown(results)
    (out / "bench.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
