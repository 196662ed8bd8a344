"""The block-size section of `make bench` (issue 29): every configuration a user would pick.

For 1024- and 2048-sample A-scans and 256 to 8192 records per block, in one run on one device:

- **the ceiling**: back-to-back pinned host-to-device copies of that block size;
- **the expert**: the same processing as an expert writes it in CuPy (bench_peers' ``ExpertCuPy``:
  fused RawKernels, a cached cuFFT plan per compute stream, a copy stream, events) at that block
  size;
- **the engine** at every configuration of the sweep (after one untimed run of the first: see
  ``sweep_one``): blocks to allocate / preload (vortex's 4 / 2
  up to 32 / 16), processor slots (1, 2, 4), with and without ``dispatch_spin``; reported with
  vortex's defaults (4 / 2, 2 slots, no spin) as the headline, the median and the worst of the
  sweep, each as a fraction of the ceiling and of the expert;
- **latency**: the acquisition paced like a scanner (100,000 A-scans/s), one B-scan per block, from
  the last sample of the block that completes a segment (the acquisition's fill returning: the
  ``acquire`` time of vortex's JobTiming) to the segment callback starting, p50 / p99 at 256 and
  512 records, beside the block's own duration. The block that completes segment k is the one
  carrying segment k + 1's boundary marker (vortex's planner finishes a segment there), so the
  segment's own last record came one block earlier: add a block's duration for that latency.

``bench/bench.py`` runs it as the ``blocks`` section (``make bench`` or ``--only blocks``).
Standalone::

    python bench/bench_blocks.py --quick               # GPU: prints the markdown
    python bench/bench_blocks.py --device cpu --quick  # the CPU-capable parts (a smoke run)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_engine as be  # noqa: E402
from bench_engine import vg  # noqa: E402

#: records per block of the sweep, and the subset of a quick run
RECORDS = (256, 512, 1024, 2048, 8192)
QUICK_RECORDS = (256, 512, 8192)
#: (blocks_to_allocate, preload_count); vortex's defaults first
POOLS = ((4, 2), (8, 4), (32, 16))
SLOTS = (1, 2, 4)
SPINS: tuple[Optional[float], ...] = (None, 200e-6)
#: vortex's defaults: 4 blocks, preload 2; the processor's default 2 slots; no spin
HEADLINE = (4, 2, 2, None)
QUICK_CONFIGS = [HEADLINE, (32, 16, 2, None), (4, 2, 1, None), (32, 16, 4, 200e-6)]
#: the paced acquisition of the latency measurement (a 100 kHz swept source)
LATENCY_RATE = 100_000.0
LATENCY_RECORDS = (256, 512)
#: gosrc/cuda's BenchmarkBlockFloor, built by `make gpu-build` (gpu-build/bin/cuda.test.gz): the
#: least a pipeline must do per 256-record block, from one thread (the floor section)
CUDA_TEST = Path(__file__).resolve().parents[1] / "gpu-build" / "bin" / "cuda.test.gz"
_FLOOR_LINE = re.compile(r"BenchmarkBlockFloor/samples=(\d+)/ring=(\d+)/(copy|pipeline/submitters=(\d+))\S*\s+\d+\s+([\d.]+) ns/op")


def configs(quick: bool) -> list[tuple[int, int, int, Optional[float]]]:
    """(blocks, preload, slots, dispatch_spin) of the sweep, the headline first."""
    if quick:
        return list(QUICK_CONFIGS)
    rest = [(b, p, s, spin) for (b, p) in POOLS for s in SLOTS for spin in SPINS if (b, p, s, spin) != HEADLINE]
    return [HEADLINE] + rest


def _geometry(samples: int, rpb: int, blocks: int = 4, preload: int = 2, slots: int = 2,
              ascans: Optional[int] = None) -> be.Geometry:
    """8,192-record volumes of 512-record B-scans (or ``ascans``), whole blocks of ``rpb``."""
    a = ascans or 512
    return be.Geometry(samples, a, max(1, 8192 // a), rpb, blocks=blocks, preload=preload, slots=slots)


def _label(c: tuple[int, int, int, Optional[float]]) -> str:
    b, p, s, spin = c
    return f"{b}/{p}, {s} slot{'s' if s > 1 else ''}" + (f", spin {spin * 1e6:.0f} us" if spin else "")


def sweep_one(device: Any, samples: int, rpb: int, cfgs: list, seconds: float, warm: float) -> dict:
    """One (samples, records per block) row: the ceiling, the expert, the engine at every config."""
    gpu = device.is_cuda
    g = _geometry(samples, rpb)
    raw, _, pc = be.reference_volume(g, device)
    row: dict[str, Any] = {"samples": samples, "records_per_block": rpb}
    if gpu:
        import cupy as cp

        import bench_peers as bp

        host = be._pinned_blocks(raw, g, True)
        row["ceiling"] = be.h2d_ceiling(g, seconds * 0.5)
        # The expert of the peers section: fused RawKernels, a cached cuFFT plan per compute
        # stream, a copy stream; the unfused Chain (about 20 CuPy calls) spends ~1 ms of
        # Python per block, which at these block sizes measures CuPy's dispatch, not a pipeline.
        expert = bp.ExpertCuPy(g, host, pc, be.LEVELS, be.AVERAGE_WINDOW)
        row["expert"] = bp._timed(expert, seconds)
        del host, expert
        cp.get_default_memory_pool().free_all_blocks()
    else:
        chain = be.Chain(np, samples, rpb, be.AVERAGE_WINDOW, pc.resampling_samples, pc.spectral_filter, be.LEVELS)
        row["expert"] = be.baseline_sync(chain, be._pinned_blocks(raw, g, False), g, False, seconds)
    engine = []
    # One untimed run of the first configuration before the timed ones: the first engine after
    # the expert ran below its own twin in every sweep on the H200 (vortex's defaults, first in
    # each row, 0.61 / 0.68 / 0.74 of the ceiling at 1024 x 256 in sessions 47 / 48 / 46 against
    # 0.74 / 0.73 / 0.82 with dispatch_spin set, fourth: a setting that only changes how the
    # callbacks are dispatched, and this pipeline has none; the other pairs differ by -5 to +5%),
    # so the headline may have measured the expert's aftermath as much as the engine.
    for i, c in enumerate(cfgs[:1] + cfgs):
        b, p, s, spin = c
        gc = _geometry(samples, rpb, b, p, s)

        def pipeline(gg: be.Geometry, dev: Any, eps: list, spin: Optional[float] = spin) -> tuple:
            return be._pipeline(gg, dev, total_volumes=0, endpoints=eps, dispatch_spin=spin)

        if i == 0:
            be.engine_counters(gc, device, warm, warm, pipeline=pipeline)
            continue
        r = be.engine_counters(gc, device, seconds, warm, pipeline=pipeline)
        e = {"blocks_to_allocate": b, "preload_count": p, "slots": s, "dispatch_spin": spin,
             "ascans_per_s": r["ascans_per_s"], "vs_expert": r["ascans_per_s"] / row["expert"]["ascans_per_s"]}
        if gpu:
            e["vs_ceiling"] = r["gbs"] / row["ceiling"]["gbs"]
        engine.append(e)
        print(f"  {samples} x {rpb} [{_label(c)}]: {r['ascans_per_s'] / 1e6:.2f} M A-scans/s"
              + (f" ({e['vs_ceiling']:.2f} of the ceiling)" if gpu else ""), file=sys.stderr, flush=True)
    key = "vs_ceiling" if gpu else "vs_expert"
    ranked = sorted(engine, key=lambda e: e[key])
    row["engine"] = engine
    row["headline"] = engine[0]
    row["worst"] = ranked[0]
    row["median_vs"] = statistics.median(e[key] for e in engine)
    row["median_vs_expert"] = statistics.median(e["vs_expert"] for e in engine)
    return row


def latency_one(device: Any, samples: int, rpb: int, seconds: float, rate: float) -> dict:
    """From a block's last sample to its segment callback: one B-scan per block, the acquisition
    paced at ``rate`` A-scans/s; each callback is paired with its block's JobTiming."""
    g = _geometry(samples, rpb, ascans=rpb)
    ep = be.StackDeviceTensorEndpointInt8()
    seen: list[tuple[int, int]] = []  # (segment's end sample, callback start on time.time_ns)
    acquired: dict[int, float] = {}  # block (job) id -> its acquire time, seconds since the epoch
    lock = threading.Lock()

    def on_segment(sample: int, *a: Any) -> None:
        t = time.time_ns()
        seen.append((sample, t))

    def on_job(job: int, status: Any, timing: Any) -> None:
        with lock:
            acquired[job] = timing.acquire.timestamp()

    ep.segment_callback = on_segment
    engine, _, _, proc = be._pipeline(g, device, total_volumes=0, endpoints=[ep], rate=rate)
    engine.job_callback = on_job
    try:
        engine.prepare()
        engine.start()
        engine.wait_for(seconds)
        engine.stop()
    finally:
        engine.close()
        ep.close()
        proc.close()
    lat = []
    for sample, t in seen[len(seen) // 10:]:  # skip the start-up
        # The callback's sample is the next segment's boundary, where vortex's FormatPlanner
        # declares a segment finished: the block that carries it (its first record, one B-scan
        # per block) completes the segment, whose own records came a block earlier. Measured
        # on the CPU backend at 20 kHz: 0.8-1.2 ms after the carrying block's last sample, a
        # block (12.8 ms) more after the segment's own.
        block = sample // rpb
        a = acquired.get(block)
        if a is not None:
            lat.append(t / 1e3 - a * 1e6)
    if not lat:
        raise RuntimeError(f"no segment callback could be paired with its block ({len(seen)} callbacks, "
                           f"{len(acquired)} jobs)")
    us = np.array(lat)
    return {"samples": samples, "records_per_block": rpb, "rate": rate, "block_us": rpb / rate * 1e6,
            "callbacks": len(lat), "p50_us": float(np.percentile(us, 50)), "p99_us": float(np.percentile(us, 99)),
            "max_us": float(us.max())}


def parse_floor(text: str) -> list[dict]:
    """BenchmarkBlockFloor's lines: one dict per sub-benchmark (samples, ring, what, submitters, us)."""
    rows = []
    for m in _FLOOR_LINE.finditer(text):
        rows.append({"samples": int(m[1]), "ring": int(m[2]), "what": "copy" if m[3] == "copy" else "pipeline",
                     "submitters": int(m[4] or 0), "us": float(m[5]) / 1e3})
    return rows


def floor(binary: Optional[Path] = None, blocks: int = 4000) -> dict:
    """Run BenchmarkBlockFloor (the Go test binary of gosrc/cuda, gzipped as `make gpu-build` leaves
    it); {"rows": [...]} or {"skipped": why}."""
    binary = Path(os.environ.get("VORTEXGO_CUDA_TEST_BIN", binary or CUDA_TEST))
    if not binary.exists():
        return {"skipped": f"{binary} not found (make gpu-build builds it)"}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "cuda.test"
        if binary.suffix == ".gz":
            with gzip.open(binary) as src, open(exe, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            shutil.copyfile(binary, exe)
        exe.chmod(0o755)
        p = subprocess.run([str(exe), "-test.run", "^$", "-test.bench", "BlockFloor",
                            "-test.benchtime", f"{blocks}x"], capture_output=True, text=True, timeout=300)
    rows = parse_floor(p.stdout)
    if p.returncode != 0 or not rows:
        return {"skipped": f"BenchmarkBlockFloor failed (exit {p.returncode}): {(p.stdout + p.stderr)[-500:]}"}
    return {"rows": rows}


def floor_markdown(r: dict) -> list[str]:
    """The floor beside the engine at 256 records: fractions of the copy alone, in one run."""
    fl = r.get("floor") or {}
    if "rows" not in fl:
        return ["", f"The floor (BenchmarkBlockFloor): not run: {fl.get('skipped', 'not measured')}."]
    head = {(x["samples"], x["records_per_block"]): x["headline"]["vs_ceiling"] for x in r["rows"]}
    lines = ["", "The floor: one thread making only a block's necessary driver calls (gosrc/cuda "
             "BenchmarkBlockFloor: upload, event, wait, one graph launch, done event, the ring buffer's "
             "recycle), 256-record blocks, as a fraction of the uploads alone; the engine at vortex's "
             "defaults beside it (its fraction of the bench's ceiling):", "",
             "| samples | ring | copy alone us | floor us | floor | engine, vortex defaults | engine / floor |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for x in fl["rows"]:
        if x["what"] != "pipeline" or x["submitters"] != 1:
            continue
        copy = next((c["us"] for c in fl["rows"] if c["what"] == "copy" and
                     (c["samples"], c["ring"]) == (x["samples"], x["ring"])), None)
        if copy is None:
            continue
        frac = copy / x["us"]
        eng = head.get((x["samples"], 256))
        ratio = f"{eng / frac:.2f}" if eng is not None else "-"
        eng_s = f"{eng:.2f}" if eng is not None else "-"
        lines.append(f"| {x['samples']} | {x['ring']} | {copy:.2f} | {x['us']:.2f} | {frac:.2f} | {eng_s} | {ratio} |")
    return lines


def bench(results: dict, device: Any, *, quick: bool = False, sizes: Optional[list[int]] = None,
          records: Optional[list[int]] = None, seconds: Optional[float] = None) -> dict:
    """Measure the sweep and the latency into results["blocks"] and results["blocks_md"]."""
    gpu = device.is_cuda
    sizes = sizes or ([1024, 2048] if gpu else [256])
    records = records or list(QUICK_RECORDS if quick or not gpu else RECORDS)
    seconds = seconds if seconds is not None else ((0.6 if quick else 0.8) if gpu else 0.3)
    warm = 0.3 if gpu else 0.2
    cfgs = configs(quick or not gpu)
    rows = [sweep_one(device, s, r, cfgs, seconds, warm) for s in sizes for r in records]
    rate = LATENCY_RATE if gpu else 20_000.0
    lat = [latency_one(device, s, r, 2.0 if gpu else 1.0, rate) for s in sizes for r in LATENCY_RECORDS]
    out = {"device": device.name, "backend": "cuda" if gpu else "cpu", "configs": [_label(c) for c in cfgs],
           "rows": rows, "latency": lat}
    if gpu:
        out["floor"] = floor()
    results["blocks"] = be._jsonable(out)
    results["blocks_md"] = markdown(results["blocks"])
    return results["blocks"]


def markdown(r: dict) -> str:
    gpu = r["backend"] == "cuda"
    lines = [f"## Block sizes users pick ({r['device']})", "",
             f"Engine configurations swept ({len(r['configs'])}): " + "; ".join(r["configs"]) + ". "
             "Headline: vortex's defaults (4 blocks, preload 2), 2 slots, no spin. Fractions of "
             + ("the pinned host-to-device ceiling measured at the same block size in the same run; "
                "expert: CuPy with fused RawKernels, cached cuFFT plans, a copy stream and two compute streams." if gpu else
                "the plain NumPy loop (CPU backend: a smoke run, no ceiling)."), ""]
    if gpu:
        lines += ["| samples | records/block | ceiling M/s | expert | engine, vortex defaults | median | worst (config) |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for row in r["rows"]:
            ce = row["ceiling"]["gbs"] * 1e9 / (row["samples"] * 2) / 1e6
            ex = row["expert"]["gbs"] / row["ceiling"]["gbs"]
            h, w = row["headline"], row["worst"]
            wl = _label((w["blocks_to_allocate"], w["preload_count"], w["slots"], w["dispatch_spin"]))
            lines.append(f"| {row['samples']} | {row['records_per_block']} | {ce:.1f} | {ex:.2f} | "
                         f"{h['vs_ceiling']:.2f} ({h['vs_expert']:.2f} of the expert) | {row['median_vs']:.2f} | "
                         f"{w['vs_ceiling']:.2f} ({wl}) |")
        lines += floor_markdown(r)
    else:
        lines += ["| samples | records/block | NumPy loop M/s | engine, vortex defaults | median | worst |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: |"]
        for row in r["rows"]:
            lines.append(f"| {row['samples']} | {row['records_per_block']} | "
                         f"{row['expert']['ascans_per_s'] / 1e6:.3f} | {row['headline']['vs_expert']:.2f} | "
                         f"{row['median_vs']:.2f} | {row['worst']['vs_expert']:.2f} |")
    lines += ["", "Latency from the last sample of the block that completes a segment (the one carrying the "
              "next segment's boundary marker, where vortex's planner finishes a segment) to its segment "
              "callback; one B-scan per block, the acquisition paced. The segment's own records came a block "
              "earlier:", "",
              "| samples | records/block | A-scans/s | block | p50 | p99 | max |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for x in r["latency"]:
        lines.append(f"| {x['samples']} | {x['records_per_block']} | {x['rate']:,.0f} | {x['block_us']:.0f} us | "
                     f"{x['p50_us']:.0f} us | {x['p99_us']:.0f} us | {x['max_us']:.0f} us |")
    return "\n".join(lines) + "\n"


def run(results: dict, quick: bool = False) -> None:
    """`make bench`'s blocks section."""
    bench(results, be._require_gpu(), quick=quick)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="vortexgo block-size sweep (the blocks section of make bench)")
    ap.add_argument("--quick", action="store_true", help="four configurations, three block sizes")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--sizes", default="", help="comma-separated samples per A-scan (default 1024,2048; cpu: 256)")
    ap.add_argument("--records", default="", help="comma-separated records per block (default the sweep's)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per measurement")
    ap.add_argument("--json", default="", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        records = [int(s) for s in args.records.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes={args.sizes!r} / --records={args.records!r}, expected comma-separated integers")
    for r in records:
        if r < 1 or 8192 % r:
            ap.error(f"--records: {r}, expected a divisor of 8192 (the volume's records)")
    if args.seconds is not None and args.seconds <= 0:
        ap.error(f"--seconds={args.seconds}, expected > 0")
    try:
        device = be._require_gpu() if args.device == "cuda" else vg.get_device("cpu")
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    results: dict = {}
    bench(results, device, quick=args.quick, sizes=sizes or None, records=records or None, seconds=args.seconds)
    if args.json:
        Path(args.json).write_text(json.dumps(results["blocks"], indent=2))
    print(results["blocks_md"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
