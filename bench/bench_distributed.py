"""Throughput of vortexgo.distributed from 1 to N workers, against the storage read ceiling.

    python bench/bench_distributed.py --workers 1,2 --device cpu          # this CPU machine
    python bench/bench_distributed.py --workers 1,2 --device cuda         # nvidia-h200-x2 (dask-cuda)
    make bench                                                            # the GPU host: CPU 1..8 and every GPU


Writes recorded spectra (a SimulatedAcquisition's phantom: raw uint16 .npy stacks, one per
file) into --dir, then for each worker count starts a cluster (a LocalCluster of processes,
--threads threads each (default 1: each worker's core work on that many: its share of the
cores), or a LocalCUDACluster of that many GPUs), runs one warm-up job and --repeat
timed jobs (overwrite=True: every volume processed and written), and reports raw GB/s,
A-scans/s, the efficiency T(n) / (n T(1)) and the cost of a task beyond its processing: the
per-task overhead ``(n * wall - A / R) / tasks`` where A is the job's A-scans and R the rate of
one engine over each whole file in this process on the same device (no Dask, no Zarr, no
checksum), and, from each task's own timings, the median time a task spends outside its
engine's run (pipeline set-up, range checks) and inside it writing chunks. The ceiling is the files read by n processes in
parallel: from the page cache (where the timed jobs read from: the files fit in memory), and
cold (pages evicted with posix_fadvise(DONTNEED) first) for the disk. Results go to --json
and --markdown; `make bench` (bench/bench.py) runs :func:`run` into bench.json / bench.md.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import importlib.util
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional

import numpy as np

if importlib.util.find_spec("vortexgo") is None:
    # the source tree's package, unless PYTHONPATH names another (the GPU machine's carried
    # build, gpu-build/python: the tree's python/ has no extension there)
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


def _write_volumes(args: tuple) -> int:
    """Write ``volume`` (a job's output volume) into chunks ``indices`` of the Zarr array at
    ``store`` on ``threads`` threads, as a worker's chunk writers do; returns how many."""
    import concurrent.futures

    import zarr

    store, indices, volume, threads = args
    a = zarr.open_array(store, mode="r+")

    def one(i: int) -> None:
        a[i] = volume

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, indices))
    return len(indices)


def write_ceiling(store: str, workers: int, threads: int, scratch: Path) -> float:
    """Volumes a second that ``workers`` processes of ``threads`` writer threads each write to a
    Zarr array like the job's (one of the job's own output volumes, its chunks, codecs and
    store kind): the storage side's ceiling, as the read ceiling is the input's."""
    import zarr

    src = zarr.open_array(store, mode="r")
    volume = np.asarray(src[0])
    n = src.shape[0]
    zarr.create_array(str(scratch), shape=src.shape, chunks=src.chunks, dtype=src.dtype, fill_value=0,
                      overwrite=True, config={"write_empty_chunks": True})
    shares = [list(range(w, n, workers)) for w in range(workers)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_write_volumes, [(str(scratch), [], volume, 1)] * workers))  # start the processes
        t = time.perf_counter()
        done = sum(pool.map(_write_volumes, [(str(scratch), sh, volume, threads) for sh in shares]))
        return done / (time.perf_counter() - t)


def processor_config(samples: int, ascans: int, bscans: int) -> Any:
    """The benchmark's processing: the phantom's resampling and dispersion, a Hann window,
    a rolling background average of 64 records, int8 levels."""
    import vortexgo as vg
    from vortexgo.process import hann_window, spectral_filter

    sim = vg.SimulatedAcquisition(samples_per_record=samples, ascans_per_bscan=ascans, bscans_per_volume=bscans)
    return vg.ProcessorConfig(samples_per_record=samples, ascans_per_block=ascans, average_window=64,
                              resampling_samples=sim.resampling_positions(),
                              spectral_filter=spectral_filter(hann_window(samples), sim.dispersion_compensation()),
                              levels=(0.0, 60.0))


def engine_rate(files: list[str], cfg: Any, device: str, repeat: int) -> float:
    """A-scans/s of one engine per whole file in this process (best of ``repeat``): the
    processing alone, the reference of the per-task overhead."""
    from vortexgo import distributed as vd
    from vortexgo.acquire import FileAcquisition, record_raster
    from vortexgo.marker import ScanBoundary

    best = 0.0
    for _ in range(max(1, repeat)):
        ascans, seconds = 0, 0.0
        for f in files:
            src, = vd.plan_sources([f], cfg)
            acq = FileAcquisition(path=f, samples_per_record=cfg.processor.samples_per_record, loop=False,
                                  pin=False, offset=src.data_offset, length=src.volumes * cfg.volume_bytes)
            # New stages per file (the single-machine engine's set-up), closed with it.
            pipe = vd._Pipeline(None, cfg, device)
            try:
                engine = pipe.engine(acq, False)
                for v in range(src.volumes):
                    engine.scan_queue.append(record_raster(cfg.ascans_per_bscan, cfg.bscans_per_volume),
                                             marker=ScanBoundary(0, v))
                with engine:
                    engine.prepare()
                    t = time.perf_counter()
                    engine.start()
                    engine.wait()
                    seconds += time.perf_counter() - t
            finally:
                pipe.close()
                acq.close()
            ascans += src.volumes * cfg.records_per_volume
        best = max(best, ascans / seconds)
    return best


def measure(workers: list[int], device: str = "cpu", directory: str = "build/bench-distributed", files: int = 2,
            volumes: int = 16, samples: int = 1024, ascans: int = 256, bscans: int = 32,
            volumes_per_task: int = 0, task_bytes: Optional[int] = None, dtype: str = "int8", repeat: int = 3,
            ceiling: bool = True, log: Any = print, threads: int = 1, compression: str = "zstd") -> dict:
    """Run the benchmark (see the module's docstring) and return its results as JSON values.
    ``threads``: each CPU worker's threads, its share of the cores (the reference engine in
    this process runs on as many: vortexgo.set_cpu_threads)."""
    import distributed

    from vortexgo import distributed as vd

    d = Path(directory)
    paths = make_files(d, files, volumes, samples, ascans, bscans)
    total = sum(os.path.getsize(f) for f in paths)
    extra = {} if task_bytes is None else {"task_bytes": task_bytes}
    cfg = vd.ReprocessConfig(processor_config(samples, ascans, bscans), ascans_per_bscan=ascans,
                             bscans_per_volume=bscans, dtype=dtype, volumes_per_task=volumes_per_task,
                             compression=compression, **extra)
    ascans_total = files * volumes * ascans * bscans
    import vortexgo as vg

    was = vg.set_cpu_threads(threads) if device == "cpu" else None
    try:
        ref = engine_rate(paths, cfg, device, repeat)
    finally:
        if was is not None:
            vg.set_cpu_threads(was)
    log(f"one engine per whole file, this process, {device}: {ref / 1e3:.0f} k A-scans/s", flush=True)
    rows = []
    for n in workers:
        if device == "cuda":
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, range(n))), dashboard_address=None,
                                       silence_logs=40)
        else:
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=threads, processes=True,
                                               dashboard_address=None, silence_logs=40)
        with cluster, distributed.Client(cluster) as client:
            store = d / f"out-{device}-{n}.zarr"
            vd.reprocess(client, paths, cfg, store, overwrite=True, device=device)  # warm-up: imports, page cache
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                r = vd.reprocess(client, paths, cfg, store, overwrite=True, device=device)
                times.append(time.perf_counter() - t)
                assert r.written == files * volumes
        best = min(times)
        tasks = len(r.tasks)
        timings = [x.get("timings", {}) for x in r.results]

        def med(key: str) -> Optional[float]:
            v = [t[key] for t in timings if key in t]
            return 1e3 * statistics.median(v) if v else None

        row = {"workers": n, "seconds": times, "gb_per_s": total / best / 1e9, "ascans_per_s": ascans_total / best,
               "tasks": tasks, "volumes_per_task": r.tasks[0].count,
               "median_task_s": statistics.median(x["seconds"] for x in r.results),
               "overhead_ms_per_task": 1e3 * (n * best - ascans_total / ref) / tasks,
               "median_outside_run_ms": med("outside_run"), "median_write_ms": med("write"),
               "median_setup_ms": med("setup")}
        if ceiling:
            writers = vd._MAX_WRITERS if device == "cuda" else vd._WRITERS
            volume_raw = total / (files * volumes)
            row["write_ceiling_gb_per_s"] = volume_raw * write_ceiling(str(store), n, writers,
                                                                       d / f"ceiling-{device}-{n}.zarr") / 1e9
            row["read_ceiling_cached_gb_per_s"] = read_ceiling(paths, n, cold=False)
            row["read_ceiling_cold_gb_per_s"] = read_ceiling(paths, n, cold=True)
        rows.append(row)
        log(f"{n} worker(s): {row['gb_per_s']:.3f} GB/s raw, {row['ascans_per_s'] / 1e3:.0f} k A-scans/s "
            f"(best of {repeat}: {best:.2f} s, {tasks} tasks of {row['volumes_per_task']} volume(s)), "
            f"overhead {row['overhead_ms_per_task']:.0f} ms/task", flush=True)
    one = rows[0]["gb_per_s"] / rows[0]["workers"]
    for r in rows:
        r["efficiency"] = r["gb_per_s"] / (one * r["workers"])
    return {"device": device, "host": platform.node(), "cpus": os.cpu_count(), "load_average": os.getloadavg(),
            "threads_per_worker": threads if device == "cpu" else None, "compression": compression,
            "files": files, "volumes": volumes, "shape": [bscans, ascans, samples], "bytes": total,
            "volumes_per_task": volumes_per_task, "task_bytes": getattr(cfg, "task_bytes", None), "dtype": dtype,
            "engine_ascans_per_s": ref, "rows": rows}


def task_overhead(workers: list[int], directory: str = "build/bench-distributed", tasks: int = 64,
                  repeat: int = 3, log: Any = print) -> dict:
    """The fixed cost of a task: a job of ``tasks`` tiny tasks (one volume of 8 B-scans of
    16 A-scans of 64 samples, 16 KiB: its processing takes well under a millisecond) on n CPU
    workers; wall time x n / tasks is what one task costs a worker beyond its processing
    (Dask's scheduling, the task's set-up, its chunk write, the checksum)."""
    import distributed
    import numpy as np

    import vortexgo as vg
    from vortexgo import distributed as vd

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"tiny-{tasks}.npy"
    if not f.exists():
        np.save(f, np.random.default_rng(0).integers(1000, 3000, (tasks, 8, 16, 64, 1)).astype(np.uint16))
    cfg = vd.ReprocessConfig(vg.ProcessorConfig(samples_per_record=64, ascans_per_block=128, levels=(0.0, 60.0)),
                             ascans_per_bscan=16, bscans_per_volume=8, volumes_per_task=1)
    rows = []
    for n in workers:
        with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=40) as cluster, distributed.Client(cluster) as client:
            store = d / f"tiny-{n}.zarr"
            vd.reprocess(client, [f], cfg, store, overwrite=True, device="cpu")  # warm-up
            best = math.inf
            for _ in range(repeat):
                t = time.perf_counter()
                r = vd.reprocess(client, [f], cfg, store, overwrite=True, device="cpu")
                best = min(best, time.perf_counter() - t)
        row = {"workers": n, "tasks": tasks, "seconds": best, "ms_per_task": 1e3 * best * n / tasks,
               "median_in_task_ms": 1e3 * statistics.median(x["seconds"] for x in r.results)}
        rows.append(row)
        log(f"{n} worker(s), {tasks} tiny tasks: {row['ms_per_task']:.1f} ms per task per worker "
            f"({row['median_in_task_ms']:.1f} ms inside the task, median)", flush=True)
    return {"rows": rows, "load_average": os.getloadavg(), "host": platform.node(), "cpus": os.cpu_count()}


def markdown(result: dict) -> str:
    """One result of :func:`measure` as a markdown table."""
    def ms(v: Optional[float]) -> str:
        return "—" if v is None else f"{v:.0f}"

    lines = [f"### vortexgo.distributed, {result['device']} workers ({result['host']}, {result['cpus']} CPUs, "
             f"load {result['load_average'][0]:.1f})", "",
             f"{result['files']} files of {result['volumes']} volumes of {' x '.join(map(str, result['shape']))} "
             f"({result['bytes'] / 1e6:.0f} MB)"
             + (f", {result['threads_per_worker']} thread(s) per worker" if result.get("threads_per_worker") else "")
             + (f", chunks {result.get('compression', 'zstd')}")
             + "; one engine per file in one process: "
             f"{result['engine_ascans_per_s'] / 1e3:.0f} k A-scans/s.", "",
             "| workers | tasks x volumes | raw GB/s | k A-scans/s | efficiency | overhead ms/task | "
             "outside run / writes ms (median task) | write ceiling, raw GB/s | read ceiling cached / cold GB/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        ceil = (f"{r['read_ceiling_cached_gb_per_s']:.2f} / {r['read_ceiling_cold_gb_per_s']:.2f}"
                if "read_ceiling_cached_gb_per_s" in r else "—")
        wc = f"{r['write_ceiling_gb_per_s']:.2f}" if "write_ceiling_gb_per_s" in r else "—"
        lines.append(f"| {r['workers']} | {r['tasks']} x {r['volumes_per_task']} | {r['gb_per_s']:.3f} | "
                     f"{r['ascans_per_s'] / 1e3:.0f} | {r['efficiency']:.2f} | {r['overhead_ms_per_task']:.0f} | "
                     f"{ms(r['median_outside_run_ms'])} / {ms(r['median_write_ms'])} | {wc} | {ceil} |")
    if "overhead" in result:
        lines += ["", "Per-task cost, tiny tasks (16 KiB, one volume each): "
                  + "; ".join(f"{r['workers']} worker(s): {r['ms_per_task']:.1f} ms per task per worker, "
                              f"{r['median_in_task_ms']:.1f} ms inside the task"
                              for r in result["overhead"]["rows"]) + "."]
    return "\n".join(lines) + "\n"


def run(results: dict, quick: bool = False) -> None:
    """`make bench`'s section: CPU workers 1, 2, 4, 8 (up to the CPUs) and every GPU through dask-cuda,
    into results["distributed"] (JSON) and results["distributed_md"] (markdown). Skipped without
    dask/distributed/zarr (``make gpu-dask`` carries them)."""
    try:
        import distributed  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as e:
        results["distributed_md"] = f"### vortexgo.distributed\n\nskipped: {e}\n"
        return
    import vortexgo as vg

    out, md = {}, []
    cpus = [n for n in (1, 2, 4, 8) if n <= (os.cpu_count() or 1)]
    out["cpu"] = measure(cpus, "cpu", repeat=1 if quick else 2)
    out["cpu"]["overhead"] = task_overhead(cpus[:2])
    md.append(markdown(out["cpu"]))
    if vg.is_cuda_available():
        try:
            import dask_cuda  # noqa: F401
            from vortexgo._device import cuda_device_count
        except ImportError as e:
            md.append(f"CUDA workers skipped: {e}\n")
        else:
            gpus = list(range(1, cuda_device_count() + 1))
            out["cuda"] = measure(gpus, "cuda", repeat=1 if quick else 2)
            md.append(markdown(out["cuda"]))
    results["distributed"] = out
    results["distributed_md"] = "\n".join(md)


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
    ap.add_argument("--volumes-per-task", type=int, default=0, help="0: sized by --task-bytes (the default)")
    ap.add_argument("--task-bytes", type=int, default=None, help="raw bytes per task (default: ReprocessConfig's)")
    ap.add_argument("--dtype", default="int8", choices=["int8", "uint16", "float32"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="threads per CPU worker (its share of the cores)")
    ap.add_argument("--compression", default="zstd", choices=["zstd", "none"], help="the chunks' codec")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the read ceiling")
    ap.add_argument("--overhead-tasks", type=int, default=64, help="tiny tasks of the per-task cost (0: skip it)")
    ap.add_argument("--json", default=None, help="write the results there")
    ap.add_argument("--markdown", default=None, help="write the table there")
    a = ap.parse_args()
    result = measure([int(x) for x in a.workers.split(",")], a.device, a.dir, a.files, a.volumes, a.samples,
                     a.ascans, a.bscans, a.volumes_per_task, a.task_bytes, a.dtype, a.repeat, not a.no_ceiling,
                     threads=a.threads, compression=a.compression)
    if a.overhead_tasks and a.device == "cpu":
        result["overhead"] = task_overhead([int(x) for x in a.workers.split(",")][:2], a.dir, a.overhead_tasks,
                                           a.repeat)
    md = markdown(result)
    print(md)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))
    if a.markdown:
        Path(a.markdown).write_text(md)


if __name__ == "__main__":
    main()
