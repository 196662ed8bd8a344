"""An expert-pipeline variant per change (issue 10): plain events, timestamped events for
the cross-stream waits, and a timestamped event before each upload (what the engine
recorded for its upload timings). Run from the repository root on the GPU machine."""

import sys

sys.path.insert(0, "bench")
import bench_engine as be
import bench_peers as bp
import vortexgo as vg
import cupy as cp

dev = vg.get_device("cuda:0")
out = {}
for s in (1024, 1376):
    g = be.Geometry(s, 512, 128, 8192)
    raw, vol, pc = be.reference_volume(g, dev)
    host = be._pinned_blocks(raw, g, True)
    ceil = be.h2d_ceiling(g, 1.0)["gbs"]
    row = {"ceiling": ceil}
    for name in ("plain", "default_kind", "plain_again"):
        ex = bp.ExpertCuPy(g, host, pc, be.LEVELS, be.AVERAGE_WINDOW)
        if name.startswith("timing"):
            ex.uploaded = [cp.cuda.Event(disable_timing=False) for _ in ex.uploaded]
            ex.consumed = [cp.cuda.Event(disable_timing=False) for _ in ex.consumed]
        if name == "timing_plus_start":
            starts = [cp.cuda.Event(disable_timing=False) for _ in ex.uploaded]
            def step(k, ex=ex, starts=starts):
                starts[k % len(starts)].record(ex.up)
                bp.ExpertCuPy.step(ex, k)
            ex.step = step
        if name == "default_kind":
            # cudaMemcpyDefault: the runtime infers the direction (the engine's
            # cuMemcpyAsync did the same).
            real = cp.cuda.runtime.memcpyAsync

            def step(k, ex=ex, real=real):
                cp.cuda.runtime.memcpyAsync = lambda d, s_, n, kind, st: real(d, s_, n, cp.cuda.runtime.memcpyDefault, st)
                try:
                    bp.ExpertCuPy.step(ex, k)
                finally:
                    cp.cuda.runtime.memcpyAsync = real
            ex.step = step
        r = bp._timed(ex, 2.0)
        row[name] = round(r["gbs"] / ceil, 3)
        del ex
    out[s] = row
    print(s, row, flush=True)
