"""Throughput of vortexgo.distributed from 1 to N workers, against the storage read ceiling.

    python bench/bench_distributed.py --workers 1,2 --device cpu          # this CPU machine
    python bench/bench_distributed.py --workers 1,2 --device cuda         # nvidia-h200-x2 (dask-cuda)

Writes recorded spectra (a SimulatedAcquisition's phantom: raw uint16 .npy stacks, one per
file) into --dir, then for each worker count starts a cluster (a LocalCluster of processes,
one thread each, or a LocalCUDACluster of that many GPUs), runs one warm-up job and --repeat
timed jobs (overwrite=True: every volume processed and written), and reports raw GB/s,
A-scans/s, and the efficiency T(n) / (n T(1)). The ceiling is the files read by n processes in
parallel: from the page cache (where the timed jobs read from: the files fit in memory), and
cold (pages evicted with posix_fadvise(DONTNEED) first) for the disk. Results go to --json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))


def make_files(directory: Path, files: int, volumes: int, samples: int, ascans: int, bscans: int) -> list[str]:
    """Recorded spectra of the simulated phantom, .npy SimpleStacks (volumes, bscans, ascans, samples, 1)."""
    import vortexgo as vg
    from vortexgo.engine import Engine, EngineConfig, SpectraStackEndpoint
    from vortexgo.format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
    from vortexgo.acquire import record_raster
    from vortexgo.marker import ScanBoundary
    from vortexgo import storage as vs

    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(files):
        path = directory / f"spectra-{i}-{volumes}x{bscans}x{ascans}x{samples}.npy"
        out.append(str(path))
        if path.exists():
            continue
        acq = vg.SimulatedAcquisition(samples_per_record=samples, ascans_per_bscan=ascans, bscans_per_volume=bscans,
                                      volumes=2, seed=i + 1)
        proc = vg.CPUProcessor(samples_per_record=samples, ascans_per_block=ascans)
        planner = FormatPlanner(FormatPlannerConfig(bscans, ascans))
        stack = vs.SimpleStackUInt16()
        cfg = vs.SimpleStackConfig(str(path), (bscans, ascans, samples, 1))
        cfg.header = vs.SimpleStackHeader.NumPy
        stack.open(cfg)
        ep = SpectraStackEndpoint(StackFormatExecutor(StackFormatExecutorConfig()), stack)
        ec = EngineConfig(records_per_block=ascans, blocks_to_allocate=8, preload_count=4)
        ec.add_acquisition(acq, [proc])
        ec.add_processor(proc, [planner])
        ec.add_formatter(planner, [ep])
        eng = Engine(ec)
        for v in range(volumes):
            eng.scan_queue.append(record_raster(ascans, bscans), marker=ScanBoundary(0, v))
        with eng:
            eng.prepare()
            eng.start()
            eng.wait()
        stack.close()
    return out


def _read_range(args: tuple) -> int:
    path, lo, hi, cold = args
    fd = os.open(path, os.O_RDONLY)
    try:
        if cold:
            os.posix_fadvise(fd, lo, hi - lo, os.POSIX_FADV_DONTNEED)
        buf = bytearray(8 << 20)
        n, pos = 0, lo
        while pos < hi:
            k = os.preadv(fd, [memoryview(buf)[:min(len(buf), hi - pos)]], pos)
            if not k:
                break
            n, pos = n + k, pos + k
        return n
    finally:
        os.close(fd)


def read_ceiling(files: list[str], workers: int, cold: bool) -> float:
    """GB/s of reading every file, split in 64 MiB ranges over ``workers`` processes."""
    jobs = []
    for f in files:
        size = os.path.getsize(f)
        if cold:
            fd = os.open(f, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        jobs += [(f, lo, min(lo + (64 << 20), size), False) for lo in range(0, size, 64 << 20)]
    # spawn: this process holds the Go runtime, which a forked child would not survive
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_read_range, jobs[:workers]))  # start the processes
        if cold:
            for f in files:
                fd = os.open(f, os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
        t = time.perf_counter()
        n = sum(pool.map(_read_range, jobs))
        return n / (time.perf_counter() - t) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2 (GPUs with --device cuda)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dir", default="build/bench-distributed", help="where the recorded files and arrays go")
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--volumes", type=int, default=16, help="volumes per file")
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--ascans", type=int, default=256)
    ap.add_argument("--bscans", type=int, default=32)
    ap.add_argument("--volumes-per-task", type=int, default=1)
    ap.add_argument("--dtype", default="int8", choices=["int8", "uint16", "float32"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the results there")
    a = ap.parse_args()

    import distributed

    import vortexgo as vg
    from vortexgo import distributed as vd
    from vortexgo.process import hann_window, spectral_filter

    d = Path(a.dir)
    files = make_files(d, a.files, a.volumes, a.samples, a.ascans, a.bscans)
    total = sum(os.path.getsize(f) for f in files)
    sim = vg.SimulatedAcquisition(samples_per_record=a.samples, ascans_per_bscan=a.ascans, bscans_per_volume=a.bscans)
    pc = vg.ProcessorConfig(samples_per_record=a.samples, ascans_per_block=a.ascans, average_window=64,
                            resampling_samples=sim.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(a.samples), sim.dispersion_compensation()),
                            levels=(0.0, 60.0))
    cfg = vd.ReprocessConfig(pc, ascans_per_bscan=a.ascans, bscans_per_volume=a.bscans, dtype=a.dtype,
                             volumes_per_task=a.volumes_per_task)
    ascans_total = a.files * a.volumes * a.ascans * a.bscans
    rows = []
    for n in [int(x) for x in a.workers.split(",")]:
        if a.device == "cuda":
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, range(n))), dashboard_address=None,
                                       silence_logs=40)
        else:
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                               dashboard_address=None, silence_logs=40)
        with cluster, distributed.Client(cluster) as client:
            store = d / f"out-{a.device}-{n}.zarr"
            vd.reprocess(client, files, cfg, store, overwrite=True, device=a.device)  # warm-up: imports, page cache
            times = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                r = vd.reprocess(client, files, cfg, store, overwrite=True, device=a.device)
                times.append(time.perf_counter() - t)
                assert r.written == a.files * a.volumes
            task_s = statistics.median(x["seconds"] for x in r.results)
        best = min(times)
        rows.append({"workers": n, "seconds": times, "gb_per_s": total / best / 1e9,
                     "ascans_per_s": ascans_total / best, "median_task_s": task_s,
                     "read_ceiling_cached_gb_per_s": read_ceiling(files, n, cold=False),
                     "read_ceiling_cold_gb_per_s": read_ceiling(files, n, cold=True)})
        print(f"{n} worker(s): {rows[-1]['gb_per_s']:.3f} GB/s raw, {rows[-1]['ascans_per_s'] / 1e3:.0f} k A-scans/s "
              f"(best of {a.repeat}: {best:.2f} s), read ceiling {rows[-1]['read_ceiling_cached_gb_per_s']:.2f} GB/s "
              f"cached, {rows[-1]['read_ceiling_cold_gb_per_s']:.2f} GB/s cold", flush=True)
    one = rows[0]["gb_per_s"] / rows[0]["workers"]
    for r in rows:
        r["efficiency"] = r["gb_per_s"] / (one * r["workers"])
    result = {"device": a.device, "host": platform.node(), "cpus": os.cpu_count(), "files": a.files,
              "volumes": a.volumes, "shape": [a.bscans, a.ascans, a.samples], "bytes": total,
              "volumes_per_task": a.volumes_per_task, "dtype": a.dtype, "rows": rows}
    print("workers  GB/s   kA-scans/s  efficiency  ceiling cached / cold GB/s")
    for r in rows:
        print(f"{r['workers']:7d}  {r['gb_per_s']:.3f}  {r['ascans_per_s'] / 1e3:10.0f}  {r['efficiency']:10.2f}  "
              f"{r['read_ceiling_cached_gb_per_s']:.2f} / {r['read_ceiling_cold_gb_per_s']:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
