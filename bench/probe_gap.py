"""Where the engine's missing percent goes: one run of variants side by side (issue 10).

Not part of `make bench`; a diagnostic whose findings are written down in docs/bench.md.
Each row changes one thing against the engine row of bench_peers: how throughput is
measured (volume callbacks, which make the engine wait for the handler at every volume
boundary, against status counters with no callbacks), the processing slots, and the
ceiling's source (one block against a ring). The file-replay read path is measured by
gosrc/acquire's BenchmarkBlockHostCost (host copy bandwidth, readers 1 to 16).

Found on an H100 host (2026-11-23): cuMemHostRegister of a file mapping (mmap of a file in
the page cache, read-only, to upload from the page cache without a copy) never returned
within 140 s for 256 MiB; the probe no longer tries it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine as be  # noqa: E402
import vortexgo as vg  # noqa: E402


def _pipeline(g: be.Geometry, device, endpoints: list, pc_kw: dict):
    """bench_engine._pipeline with ProcessorConfig fields overridden (a lighter processor)."""
    from vortexgo.acquire import SimulatedAcquisition, SimulatedAcquisitionConfig
    from vortexgo.engine import Engine, EngineConfig
    from vortexgo.format import FormatPlanner, FormatPlannerConfig
    from vortexgo.process import CUDAProcessor, ProcessorConfig, hann_window, spectral_filter

    acq = SimulatedAcquisition(SimulatedAcquisitionConfig(
        samples_per_record=g.samples, ascans_per_bscan=g.ascans, bscans_per_volume=g.bscans, volumes=1,
        total_volumes=0))
    kw = dict(samples_per_record=g.samples, ascans_per_block=g.rpb, average_window=be.AVERAGE_WINDOW,
              resampling_samples=acq.resampling_positions(),
              spectral_filter=spectral_filter(hann_window(g.samples), acq.dispersion_compensation()),
              levels=be.LEVELS, slots=g.slots)
    kw.update(pc_kw)
    proc = CUDAProcessor(ProcessorConfig(**kw), device=device)
    fmt = FormatPlanner(FormatPlannerConfig(g.bscans, g.ascans))
    ec = EngineConfig(records_per_block=g.rpb, blocks_to_allocate=g.blocks, preload_count=g.preload)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, endpoints)
    engine = Engine(ec)
    engine.scan_queue.append(be._raster(g, loop=True))
    return engine, acq, None, proc


def main() -> None:
    device = vg.get_device("cuda:0")
    res: dict = {"device": device.name}
    sizes = [int(x) for x in os.environ.get("PROBE_SIZES", "1024,1376").split(",")]
    for samples in sizes:
        g = be.Geometry(samples, 512, 128, 8192)
        row: dict = {}
        c8 = be.h2d_ceiling(g, 1.0)
        row["ceiling_ring"], row["ceiling_one_block"] = c8["gbs"], c8["one_block_gbs"]
        variants = (("warm_up", {}, None), ("base", {}, None), ("no_ifft", {}, dict(enable_ifft=False)),
                    ("no_average", {}, dict(average_window=0)),
                    ("minimal", {}, dict(enable_ifft=False, average_window=0, resampling_samples=None,
                                         spectral_filter=None)),
                    ("base_again", {}, None))
        only = os.environ.get("PROBE_VARIANTS")
        for name, kw, pc_kw in variants:
            if only and name not in only.split(","):
                continue
            gg = be.Geometry(samples, 512, 128, 8192, **kw)
            try:
                make = (lambda g, d, eps, kw=pc_kw: _pipeline(g, d, eps, kw)) if pc_kw else None
                r = be.engine_counters(gg, device, 2.0, 0.5, pipeline=make)
                r["of_ceiling"] = r["gbs"] / c8["gbs"]
                if r.get("upload_ms_p50"):
                    # Upload-stream occupancy: blocks/s x median upload time.
                    r["upload_busy"] = r["ascans_per_s"] / gg.rpb * r["upload_ms_p50"] / 1e3
                row[name] = r
            except Exception as exc:  # noqa: BLE001 - a probe: report and go on
                row[name] = {"error": repr(exc)[:200]}
        try:  # the expert pipeline on the same host, for reference
            import bench_peers as bp

            raw, _, pc = be.reference_volume(g, device)
            ex = bp.ExpertCuPy(g, be._pinned_blocks(raw, g, True), pc, be.LEVELS, be.AVERAGE_WINDOW)
            r = bp._timed(ex, 2.0)
            row["expert_cupy"] = {"gbs": r["gbs"], "of_ceiling": r["gbs"] / c8["gbs"]}
            del ex
        except Exception as exc:  # noqa: BLE001 - a probe: report and go on
            row["expert_cupy"] = {"error": repr(exc)[:200]}
        res[samples] = row
        print(samples, json.dumps(row), flush=True)
    out = os.environ.get("OUT", ".")
    Path(out, "probe_gap.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
