"""Per-call costs at the Python/Go boundary, to compare two builds in one run (issue 25:
"per-call benchmarks within 5% of today's"): event record and query, stream synchronize and
wait, and the engine's callback dispatch, through the public API only, so the same script
measures any build.

Each figure is the median over ``--repeats`` rounds of the time per call (us). Callback
dispatch is the extra wall time per segment callback of an engine run with a no-op
``segment_callback`` over the same run without one. Prints one JSON object::

    PYTHONPATH=<build>/python python3 bench/percall_ab.py --device cuda:0

``scripts/percall_ab.sh`` alternates two builds (A, B, A, B, ...) in one session and
writes their ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests_py"))

import vortexgo as vg  # noqa: E402


def per_call_us(fn: Callable[[], Any], n: int, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        out.append((time.perf_counter_ns() - t0) / n / 1e3)
    return statistics.median(out)


def dispatch_us(device: str, blocks: int, repeats: int) -> float:
    """Extra us per segment callback: (run with a no-op handler - run without) / callbacks."""
    from _scans import planner, queue_volumes
    from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8
    from vortexgo.process import hann_window, spectral_filter

    s, a, b, rpb = 64, 8, 32, 256  # 32 segment events per block

    def run(handler: Any) -> tuple[float, int]:
        calls = [0]
        ep = StackDeviceTensorEndpointInt8()
        acq = vg.SimulatedAcquisition(samples_per_record=s, ascans_per_bscan=a, bscans_per_volume=b, volumes=1,
                                      total_volumes=0)
        pc = vg.ProcessorConfig(samples_per_record=s, ascans_per_block=rpb, average_window=0,
                                resampling_samples=acq.resampling_positions(),
                                spectral_filter=spectral_filter(hann_window(s), acq.dispersion_compensation()))
        proc = vg.CUDAProcessor(pc) if device.startswith("cuda") else vg.CPUProcessor(pc)
        ec = EngineConfig(records_per_block=rpb, blocks_to_allocate=8, preload_count=4, blocks_to_acquire=blocks)
        ec.add_acquisition(acq, [proc])
        fmt = planner(a, b)
        ec.add_processor(proc, [fmt])
        ec.add_formatter(fmt, [ep])
        eng = Engine(ec)
        queue_volumes(eng, a, b, 0)
        if handler:
            def on_segment(*args: Any) -> None:
                calls[0] += 1
            ep.segment_callback = on_segment
        eng.prepare()
        t0 = time.perf_counter()
        eng.start()
        eng.wait()
        dt = time.perf_counter() - t0
        eng.stop()
        eng.close()
        return dt, calls[0]

    run(True)  # warm up (kernels, allocations)
    per = []
    for _ in range(repeats):
        base, _ = run(False)
        with_cb, n = run(True)
        per.append((with_cb - base) / max(n, 1) * 1e6)
    return statistics.median(per)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda:0" if vg.is_cuda_available() else "cpu")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--blocks", type=int, default=200)
    args = ap.parse_args()
    dev = vg.get_device(args.device)
    s, ev = vg.Stream(dev), vg.Event(dev)
    s.synchronize()
    out: dict[str, Any] = {"device": args.device, "version": vg.__version__}
    out["event_record_us"] = per_call_us(lambda: ev.record(s), args.calls, args.repeats)
    s.synchronize()
    out["event_query_us"] = per_call_us(lambda: ev.is_complete, args.calls, args.repeats)
    out["stream_sync_us"] = per_call_us(s.synchronize, args.calls, args.repeats)
    out["stream_wait_event_us"] = per_call_us(lambda: s.wait_event(ev), args.calls, args.repeats)
    s.synchronize()
    out["callback_dispatch_us"] = dispatch_us(args.device, args.blocks, max(3, args.repeats // 2))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
