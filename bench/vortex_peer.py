"""vortex's own CUDA benchmark (demo/cuda_benchmark.py's pipeline), runnable with
vortex 0.5.1 or with vortexgo: the same script, only the imports differ.

NullAcquisition -> CUDAProcessor -> FormatPlanner -> StackFormatExecutor ->
StackDeviceTensorEndpointInt8 (half the samples kept), a looping raster scan on
the engine's scan queue, ``blocks_to_acquire`` blocks; A-scans/s from start()
to wait() returning. Each run prints one JSON line (``--json``).

    python bench/vortex_peer.py --impl vortexgo --samples 1024 --records-per-block 512
    eval "$(bash ../shared/vortex-build/setup.sh)"; python bench/vortex_peer.py --impl vortex

bench/bench_peers.py runs it for both implementations in subprocesses
(vortexgo never imports vortex).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np


def modules(impl: str) -> SimpleNamespace:
    if impl == "vortexgo":
        try:
            importlib.import_module("vortexgo")
        except ImportError:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    root = importlib.import_module(impl)
    ns = SimpleNamespace(root=root)
    for sub in ("scan", "engine", "acquire", "process", "format"):
        setattr(ns, sub, importlib.import_module(f"{impl}.{sub}"))
    # vortex exports dispersion_phasor from vortex.engine; vortexgo from vortexgo.source too
    ns.dispersion_phasor = getattr(ns.engine, "dispersion_phasor", None) or \
        importlib.import_module(f"{impl}.source").dispersion_phasor
    return ns


def build(v: SimpleNamespace, a: argparse.Namespace) -> tuple:
    log = v.root.get_console_logger
    scan = v.scan.RasterScan()
    rsc = scan.config
    rsc.bscans_per_volume, rsc.ascans_per_bscan = a.bscans, a.ascans_per_bscan
    rsc.bscan_extent = v.root.Range(0, 0)
    rsc.volume_extent = v.root.Range(0, 0)
    rsc.bidirectional_segments = rsc.bidirectional_volumes = False
    rsc.samples_per_second = 100000
    rsc.loop = True
    scan.initialize(rsc)
    scan.prepare()

    acq = v.acquire.NullAcquisition()
    ac = acq.config
    ac.records_per_block, ac.samples_per_record, ac.channels_per_sample = a.records_per_block, a.samples, 1
    acq.initialize(ac)

    proc = (v.process.CPUProcessor if a.cpu else v.process.CUDAProcessor)(log("process", 2))
    pc = proc.config
    pc.samples_per_record, pc.ascans_per_block = ac.samples_per_record, ac.records_per_block
    if not a.cpu:
        pc.slots = a.slots
    pc.resampling_samples = np.arange(0, pc.samples_per_record)
    window = np.hamming(pc.samples_per_record)
    pc.spectral_filter = window * v.dispersion_phasor(len(window), (2.8e-5, 0))
    pc.average_window = 2 * pc.ascans_per_block
    proc.initialize(pc)

    planner = v.format.FormatPlanner(log("format", 2))
    fc = planner.config
    fc.segments_per_volume, fc.records_per_segment = a.bscans, a.ascans_per_bscan
    planner.initialize(fc)
    keep = a.samples // 2
    ec_ = v.format.StackFormatExecutorConfig()
    ec_.sample_slice = v.format.SimpleSlice(keep)
    ex = v.format.StackFormatExecutor()
    ex.initialize(ec_)
    ep_cls = v.engine.StackTensorEndpointInt8 if a.cpu else v.engine.StackDeviceTensorEndpointInt8
    ep = ep_cls(ex, (a.bscans, a.ascans_per_bscan, keep), log("cube", 2))

    ec = v.engine.EngineConfig()
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [ep])
    ec.preload_count, ec.records_per_block = a.preload, a.records_per_block
    ec.blocks_to_allocate, ec.blocks_to_acquire = a.blocks, a.ascans // a.records_per_block
    engine = v.engine.Engine(log("engine", 2))
    engine.initialize(ec)
    engine.prepare()
    return engine, scan, (acq, proc, planner, ex, ep)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=("vortex", "vortexgo"), default="vortexgo")
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--ascans-per-bscan", type=int, default=512)
    ap.add_argument("--bscans", type=int, default=512)
    ap.add_argument("--records-per-block", type=int, default=512)
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--preload", type=int, default=8)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--ascans", type=int, default=10 * 1024 * 1024, help="A-scans per run")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="CPUProcessor and a host endpoint (a smoke run without a GPU)")
    a = ap.parse_args(argv)
    v = modules(a.impl)
    for i in range(a.runs):
        engine, scan, keep = build(v, a)
        engine.scan_queue.append(scan)
        t = time.perf_counter()
        engine.start()
        engine.wait()
        dt = time.perf_counter() - t
        engine.stop()
        total = (a.ascans // a.records_per_block) * a.records_per_block
        r = {"impl": a.impl, "run": i, "seconds": dt, "ascans": total, "ascans_per_s": total / dt}
        print(json.dumps(r) if a.json else f"{a.impl} run {i}: {total} A-scans in {dt:.3f} s = "
              f"{total / dt / 1e6:.2f} M A-scans/s")
        del engine, keep
    return 0


if __name__ == "__main__":
    sys.exit(main())
