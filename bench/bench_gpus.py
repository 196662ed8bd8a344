#!/usr/bin/env python
"""N GPUs: one acquisition feeding processors on each (vortex's ``cycle([a, b, ...])``, blocks
taking turns over the GPUs), formatted into one endpoint on the first GPU (the others' outputs come
back by peer copy), against the same engine on one GPU, in one run.

Each GPU has its own host link and copy engine, so the raw data's upload, which bounds one
GPU's engine, splits N ways. Reported: A-scans/s and GB/s raw for one and N GPUs, their ratio
(target 0.95 x N), each GPU's pinned upload ceiling measured in the same run (one at a time, and
all at once: where the host's memory caps N links, the fraction of that), and a check that the
N-GPU volumes equal the one-GPU volume of the same spectra.

    python bench/bench_gpus.py --out bench-out          # every GPU (nvidia-h200-x2, -x4)
    python bench/bench_gpus.py --blocks 16,32 --repeats 3   # pool sizes side by side, one and N
                                                           # GPUs interleaved, the median ratio
    python bench/bench_gpus.py --records 256,512 --blocks 4   # small blocks at vortex's defaults
    python bench/bench_gpus.py --records 256 --blocks 32 --profile   # where each device's blocks wait
    python bench/bench_gpus.py --records 256,512 --blocks 4,32 \
        --variant lane --variant slot:VORTEXGO_REMOTE_LANES=slot    # settings side by side, interleaved
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import vortexgo as vg
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    import vortexgo as vg

import bench_engine as be
from host_cost import parse_variant
from vortexgo.acquire import SimulatedAcquisition, SimulatedAcquisitionConfig
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8, cycle
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.process import CUDAProcessor, ProcessorConfig, hann_window, spectral_filter

def pipeline(g: be.Geometry, devices: list, *, total_volumes: int, endpoint: Any, timings: bool = False):
    """The bench_engine pipeline with one CUDAProcessor per device in vortex's cycle: block i
    goes to devices[i % n]; one planner, fed by every processor, formats every block into
    ``endpoint`` on devices[0]."""
    acq = SimulatedAcquisition(SimulatedAcquisitionConfig(
        samples_per_record=g.samples, ascans_per_bscan=g.ascans, bscans_per_volume=g.bscans, volumes=1,
        total_volumes=0))
    pc = ProcessorConfig(samples_per_record=g.samples, ascans_per_block=g.rpb, average_window=0,
                         resampling_samples=acq.resampling_positions(),
                         spectral_filter=spectral_filter(hann_window(g.samples), acq.dispersion_compensation()),
                         levels=be.LEVELS, slots=g.slots)
    procs = [CUDAProcessor(pc, device=d) for d in devices]
    fmt = FormatPlanner(FormatPlannerConfig(g.bscans, g.ascans))
    ec = EngineConfig(records_per_block=g.rpb, blocks_to_allocate=g.blocks, preload_count=g.preload,
                      device_timings=timings)
    ec.add_acquisition(acq, [cycle(procs)] if len(procs) > 1 else procs)
    for p in procs:
        ec.add_processor(p, [fmt])
    ec.add_formatter(fmt, [endpoint])
    engine = Engine(ec, device=devices[0])
    if total_volumes == 0:
        engine.scan_queue.append(be._raster(g, loop=True))
    else:
        for _ in range(total_volumes):
            engine.scan_queue.append(be._raster(g, loop=False))
    return engine, acq, procs


@contextlib.contextmanager
def environment(env: dict[str, str]):
    """The process environment with ``env`` set, put back after: the engine reads its
    ``VORTEXGO_*`` settings from the live environment at each prepare / start, so variants of
    them run in one process, interleaved."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def host_stages(log: Path, n: int) -> dict:
    """Per device (block i on devices[i % n]) the p50 / p99 of each block's host stages in us,
    from vortex's profiler log: vortex-oct-tools' stages, and ``submit queue``, from the block's
    acquisition to its submission's start (waiting for a free submitter or lane)."""
    from vortexgo.profiler import ProfileCode, job_stage_durations, read_profiler_log

    recs = read_profiler_log(log)
    stages = job_stage_durations(recs)
    jobs = np.unique(recs["job"][(recs["code"] >= 0x100) & (recs["code"] < 0x10000)])
    t = {}
    for code in (ProfileCode.JOB_ACQUIRE_JOIN, ProfileCode.JOB_PROCESS_DISPATCH_BEGIN):
        sel = recs[recs["code"] == int(code)]
        m = dict(zip(sel["job"].tolist(), sel["timestamp"].tolist()))
        t[code] = np.array([m.get(int(j), np.nan) for j in jobs], dtype=float)
    stages["submit queue"] = (t[ProfileCode.JOB_PROCESS_DISPATCH_BEGIN] - t[ProfileCode.JOB_ACQUIRE_JOIN]) / 1e6
    skip = jobs.size // 10  # the start-up
    out: dict = {}
    for d in range(n):
        sel = (jobs % n == d) & (np.arange(jobs.size) >= skip)
        out[f"cuda:{d}"] = {name: {"p50_us": float(np.nanpercentile(v[sel], 50) * 1e3),
                                   "p99_us": float(np.nanpercentile(v[sel], 99) * 1e3)}
                            for name, v in stages.items() if np.isfinite(v[sel]).any()}
    return out


def throughput(g: be.Geometry, devices: list, seconds: float, warm: float, timings: bool = False,
               profile: "Path | None" = None) -> dict:
    """Steady-state A-scans/s; with `timings`, the engine's per-stage device times too (one block
    in four timed, 1-3.5% of the throughput: a separate run); with `profile`, vortex's profiler
    log written there and each block's host stages (host_stages)."""
    ep = StackDeviceTensorEndpointInt8()
    engine, acq, procs = pipeline(g, devices, total_volumes=0, endpoint=ep, timings=timings)
    if profile is not None:
        engine.profiler_log = str(profile)
    stamps: list = []
    ep.volume_callback = lambda sample, *a: stamps.append((time.perf_counter_ns(), sample))
    try:
        engine.prepare()
        t0 = time.perf_counter_ns()
        engine.start()
        engine.wait_for(warm + seconds)
        engine.stop()
        status = engine.status()
        stages = {k: {"count": v.count, "mean_ms": v.mean, "p50_ms": v.p50, "p99_ms": v.p99, "max_ms": v.max}
                  for k, v in engine.timings.items()} if timings else None
    finally:
        engine.close()
        ep.close()
        for p in procs:
            p.close()
        acq.close()
    if status.error:
        raise RuntimeError(f"the engine failed: {status.error}")
    steady = [s for s in stamps if s[0] - t0 >= warm * 1e9] or stamps[len(stamps) // 2:]
    (ta, sa), (tb, sb) = steady[0], steady[-1]
    rate = (sb - sa) / ((tb - ta) / 1e9)
    out = {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "volumes": len(stamps),
           "blocks_dropped": status.blocks_dropped}
    if stages is not None:
        out["timings"] = stages
    if profile is not None:
        out["host_stages"] = host_stages(profile, len(devices))
    return out


def volumes(g: be.Geometry, devices: list, n: int) -> np.ndarray:
    """The last of n volumes as int8 on the host."""
    ep = StackDeviceTensorEndpointInt8()
    engine, acq, procs = pipeline(g, devices, total_volumes=n, endpoint=ep)
    try:
        engine.prepare()
        engine.start()
        engine.wait()
        engine.stop()
        return be._read_tensor(ep, True)
    finally:
        engine.close()
        ep.close()
        for p in procs:
            p.close()
        acq.close()


def ceilings(g: be.Geometry, n: int, seconds: float) -> dict:
    """Each GPU's pinned upload ceiling alone, and all of them at once (threads)."""
    import cupy as cp

    alone = []
    for i in range(n):
        with cp.cuda.Device(i):
            alone.append(be.h2d_ceiling(g, seconds)["gbs"])
    both: list = [0.0] * n

    def run(i: int) -> None:
        with cp.cuda.Device(i):
            both[i] = be.h2d_ceiling(g, seconds)["gbs"]

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return {"alone_gbs": alone, "together_gbs": both, "together_total_gbs": sum(both)}


def _ratio_cell(r: dict) -> str:
    """The median run's ratio, and every run's where there were several."""
    runs = r["ratios"]
    return f"{r['ratio']:.2f}" + (f" ({', '.join(f'{x:.2f}' for x in runs)})" if len(runs) > 1 else "")


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--sizes", default="1024,2048")
    ap.add_argument("--records", default="8192", help="records per block, comma-separated (256-8192)")
    ap.add_argument("--blocks", default="16", help="blocks to allocate, comma-separated (preload: half)")
    ap.add_argument("--gpus", type=int, default=0, help="GPUs to cycle over (default: every one, at least 2)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of one and N GPUs, interleaved")
    ap.add_argument("--timings", action="store_true",
                    help="one more run of each with device timings: per-stage upload / process / format times")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME[:VAR=VALUE,...]",
                    help="the N-GPU run with these environment variables set (the engine reads them at "
                         "prepare / start), once per variant, interleaved with the others; the first is the "
                         "row's headline; one GPU always runs with the environment as it is")
    ap.add_argument("--profile", action="store_true",
                    help="one more run of each with vortex's profiler log: each block's host stages, per device "
                         "(where a block waits: for a submitter, its driver calls, the device and formatting, "
                         "the recycle)")
    args = ap.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variant] or [("default", {})]
    except ValueError as e:
        ap.error(str(e))
    if len({n for n, _ in variants}) != len(variants):
        ap.error(f"--variant names repeat: {[n for n, _ in variants]}")
    if args.repeats < 1:
        ap.error(f"--repeats={args.repeats}, expected >= 1")
    if not all(x.strip().isdigit() and int(x) >= 2 for x in args.blocks.split(",")):
        ap.error(f"--blocks={args.blocks!r}, expected comma-separated counts >= 2")
    if not all(x.strip().isdigit() and 1 <= int(x) and 65536 % int(x) == 0 for x in args.records.split(",")):
        ap.error(f"--records={args.records!r}, expected comma-separated divisors of the 65536-record volume")
    from vortexgo._device import cuda_device_count

    have = cuda_device_count()
    n = args.gpus or have
    if n < 2 or n > have:
        print(f"bench_gpus: {have} CUDA device(s), asked for {n}: expected at least 2", file=sys.stderr)
        return 2
    devs = [vg.get_device(f"cuda:{i}") for i in range(n)]
    target = 0.95 * n
    rows = []
    for s in (int(x) for x in args.sizes.split(",")):
        for rpb in (int(x) for x in args.records.split(",")):
            for nb in (int(x) for x in args.blocks.split(",")):
                g = be.Geometry(s, 512, 128, rpb, blocks=nb, preload=nb // 2, slots=2)
                ref = volumes(g, devs[:1], 3)
                same_by = {}
                for name, env in variants:
                    with environment(env):
                        same_by[name] = bool(np.array_equal(ref, volumes(g, devs, 3)))
                same = all(same_by.values())
                ones, manys_by = [], {name: [] for name, _ in variants}
                for _ in range(args.repeats):  # interleaved: a drift of the host hits every run alike
                    ones.append(throughput(g, devs[:1], args.seconds, 1.0))
                    for name, env in variants:
                        with environment(env):
                            manys_by[name].append(throughput(g, devs, args.seconds, 1.0))
                by_variant = {}
                for name, _ in variants:
                    rs = [t["ascans_per_s"] / o["ascans_per_s"] for o, t in zip(ones, manys_by[name])]
                    k = int(np.argsort(rs)[len(rs) // 2])  # the run of the median ratio
                    by_variant[name] = {"n_gpus": manys_by[name][k], "ratio": rs[k], "ratios": rs,
                                        "one_gpu": ones[k], "volumes_equal": same_by[name]}
                head = by_variant[variants[0][0]]
                one, many, ratios = head["one_gpu"], head["n_gpus"], head["ratios"]
                k = ratios.index(head["ratio"])
                ceil = ceilings(g, n, 1.0)
                stage_times = None
                if args.timings:
                    stage_times = {"one_gpu": throughput(g, devs[:1], args.seconds, 1.0, timings=True)["timings"],
                                   "n_gpus": throughput(g, devs, args.seconds, 1.0, timings=True)["timings"]}
                    for which, v in stage_times.items():
                        print(f"  {which}: " + ", ".join(f"{st} p50 {t['p50_ms']:.3f} / p99 {t['p99_ms']:.3f} ms"
                                                     for st, t in v.items() if t["count"]), flush=True)
                host = None
                if args.profile:
                    out = Path(args.out)
                    out.mkdir(parents=True, exist_ok=True)
                    host = {}
                    runs = [("one_gpu", devs[:1], {})] + [
                        ("n_gpus" if len(variants) == 1 else f"n_gpus:{name}", devs, env) for name, env in variants]
                    for which, ds, env in runs:
                        log = out / f"profile-{s}-{rpb}-{nb}-{which.replace(':', '-')}.log"
                        with environment(env):
                            host[which] = throughput(g, ds, args.seconds, 1.0, profile=log)["host_stages"]
                        log.unlink()  # megabytes a second: the summary is what is kept
                        for dev, st in host[which].items():
                            print(f"  {which} {dev}: " + ", ".join(f"{k} {v['p50_us']:.1f} / {v['p99_us']:.1f} us"
                                                                  for k, v in st.items()), flush=True)
                rows.append({"samples": s, "records_per_block": rpb, "blocks": nb, "gpus": n, "one_gpu": one,
                             "n_gpus": many, "ratio": ratios[k], "ratios": ratios, "ceilings": ceil,
                             "n_over_ceiling": many["gbs"] / ceil["together_total_gbs"],
                             "one_over_ceiling": one["gbs"] / ceil["alone_gbs"][0], "volumes_equal": same,
                             "stage_times": stage_times, "host_stages": host, "geometry": g.describe(),
                             "variants": by_variant if len(variants) > 1 else None})
                print(f"{s} samples, {rpb} records, {nb} blocks: one GPU {one['ascans_per_s'] / 1e6:.2f} M A-scans/s, "
                      f"{n} {many['ascans_per_s'] / 1e6:.2f} ({ratios[k]:.2f}x; runs "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}), volumes equal: {same}", flush=True)
                for name, v in list(by_variant.items())[1:]:
                    print(f"  {name}: {n} {v['n_gpus']['ascans_per_s'] / 1e6:.2f} ({v['ratio']:.2f}x; runs "
                          f"{', '.join(f'{r:.2f}' for r in v['ratios'])})", flush=True)
    names = [d.name for d in devs]
    md = [f"### {n} GPUs ({' + '.join(names)})", "",
          f"One SimulatedAcquisition (pinned, lent), `cycle([CUDAProcessor(cuda:0), ..., CUDAProcessor(cuda:{n - 1})])`, "
          "one planner and one int8 endpoint on cuda:0 (the others' outputs copied back by peer copy); 512 x 128 "
          "A-scan volumes, preload half the blocks; with several runs (interleaved), the run of the median ratio; "
          f"the target is 0.95 x {n} = {target:.2f}x.", "",
          f"| A-scan | records / block | blocks | one GPU (M A-scans/s) | {n} GPUs (M A-scans/s) | {n} / one | "
          f"{n} GPUs (GB/s raw) | all links' ceiling (GB/s) | {n} / ceiling | volumes equal | target |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        md.append(f"| {r['samples']} x uint16 | {r['records_per_block']} | {r['blocks']} | "
                  f"{r['one_gpu']['ascans_per_s'] / 1e6:.2f} | {r['n_gpus']['ascans_per_s'] / 1e6:.2f} | "
                  f"{_ratio_cell(r)} | {r['n_gpus']['gbs']:.1f} | {r['ceilings']['together_total_gbs']:.1f} | "
                  f"{r['n_over_ceiling']:.2f} | {r['volumes_equal']} | "
                  f">= {target:.2f}x ({'met' if r['ratio'] >= target else '**missed**'}) |")
    if len(variants) > 1:
        md += ["", "Variants (the N-GPU run with these settings, interleaved with the others; "
               + "; ".join(f"{name}: {', '.join(f'{k}={v}' for k, v in env.items()) or 'as run'}" for name, env in variants)
               + "):", "",
               "| A-scan | records / block | blocks | one GPU | " + " | ".join(f"{name}: {n} / one" for name, _ in variants) + " |",
               "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in variants) + " |"]
        for r in rows:
            md.append(f"| {r['samples']} x uint16 | {r['records_per_block']} | {r['blocks']} | "
                      f"{r['one_gpu']['ascans_per_s'] / 1e6:.2f} | "
                      + " | ".join(f"{v['ratio']:.2f} ({', '.join(f'{x:.2f}' for x in v['ratios'])})"
                                   for v in r["variants"].values()) + " |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_gpus.json").write_text(json.dumps({"devices": names, "rows": rows,
                                                     "variants": {name: env for name, env in variants}},
                                                    indent=2, default=float))
    (out / "bench_gpus.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if all(r["volumes_equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
