"""The engine section of `make bench`: end-to-end OCT processing throughput.

For 1024- and 2048-sample uint16 A-scans, in one run on one device:

- **vortexgo**: ``SimulatedAcquisition`` (a ring of pinned blocks replayed at
  full speed) -> ``CUDAProcessor`` (background subtraction, resampling,
  spectral filter, inverse FFT, magnitude in dB, int8) -> ``FormatPlanner``
  (the engine's scan queue plays a raster; every record is active) ->
  ``StackDeviceTensorEndpointInt8``, measured in steady state;
- **the same pipeline in plain CuPy** (array ops + ``cupy.fft``, the exact
  steps of gosrc/process/doc.go): (a) a straightforward loop that uploads a
  pinned block, processes it and synchronizes; (b) a two-stream version with
  double-buffered device blocks, uploads on one stream and compute on another,
  joined by events;
- **the ceiling**: back-to-back pinned host-to-device copies of the same block
  size (``cupy.cuda.runtime.memcpyAsync``).

Plus the callback dispatcher (dispatcher CPU time per event; latency from the
engine dispatching an event to its handler starting, p50 / p99) and device
memory after ``prepare()`` versus after the run.

``bench/bench.py`` calls :func:`run`. Standalone::

    python bench/bench_engine.py --quick              # GPU: prints the markdown
    python bench/bench_engine.py --device cpu --quick # the CPU-capable parts (a smoke run)

The module imports without CuPy; :func:`run` raises a clear error without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

try:
    import vortexgo as vg
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    import vortexgo as vg

from vortexgo.acquire import SimulatedAcquisition, SimulatedAcquisitionConfig, record_raster
from vortexgo.engine import Engine, EngineConfig, SpectraStackDeviceTensorEndpointUInt16, StackDeviceTensorEndpointInt8
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.process import CPUProcessor, CUDAProcessor, ProcessorConfig, hann_window, spectral_filter
from vortexgo.scan import RasterScan

#: the processing parameters every variant uses (BENCH_AVERAGE_WINDOW in the environment sets
#: the rolling average's window for A/B runs: ``host_cost.py --variant w0:BENCH_AVERAGE_WINDOW=0``)
AVERAGE_WINDOW = int(os.environ.get("BENCH_AVERAGE_WINDOW", "64"))
LEVELS = (0.0, 60.0)

# Targets of issue 3 ("Benchmark").
TARGET_CEILING = 0.9
TARGET_EVENT_US = 1.0
TARGET_P99_US = 50.0


class Geometry:
    """One benchmark configuration: spectra, scan and block sizes."""

    def __init__(self, samples: int, ascans: int, bscans: int, records_per_block: int, blocks: int = 12,
                 preload: int = 6, slots: int = 2) -> None:
        self.samples, self.ascans, self.bscans = samples, ascans, bscans
        self.rpb, self.blocks, self.preload, self.slots = records_per_block, blocks, preload, slots
        if self.records_per_volume % records_per_block:
            raise ValueError(f"a volume of {self.records_per_volume} A-scans is not a whole number of "
                             f"{records_per_block}-record blocks")

    @property
    def records_per_volume(self) -> int:
        return self.ascans * self.bscans

    @property
    def block_bytes(self) -> int:
        return self.rpb * self.samples * 2

    def describe(self) -> dict:
        return {"samples": self.samples, "ascans_per_bscan": self.ascans, "bscans_per_volume": self.bscans,
                "records_per_block": self.rpb, "blocks_to_allocate": self.blocks, "preload_count": self.preload,
                "slots": self.slots}


# --- the processing chain in plain array code -----------------------------------------


class Chain:
    """The CUDAProcessor's steps (gosrc/process/doc.go, vortex's semantics) written
    with plain array operations on ``xp`` (CuPy: elementwise ops, gathers,
    ``cupy.fft``; NumPy on the CPU). ``chain(raw)`` maps a ``(records, samples)``
    uint16 block to int8 A-scans; it keeps the background history between calls,
    so blocks must come in order."""

    def __init__(self, xp: Any, samples: int, records: int, window: int, positions: np.ndarray,
                 filt: np.ndarray, levels: tuple[float, float]) -> None:
        self.xp = xp
        n = samples
        pos = np.asarray(positions, np.float32)
        i = np.minimum(np.floor(pos).astype(np.int64), n - 2)
        self.i0 = xp.asarray(i)
        self.i1 = xp.asarray(i + 1)
        self.f = xp.asarray((pos - i.astype(np.float32)).astype(np.float32))
        self.h = xp.asarray(np.asarray(filt, np.complex64))
        self.records = records
        # vortex's background: a rolling history of the last w records,
        # carried across blocks; each block adds its last min(records, w)
        # records, then the history's mean is subtracted from every record.
        self.w = window
        if self.w:
            self.hist = xp.zeros((self.w, n), xp.float64)
            self.filled = 0
            self.head = 0
        lo, hi = (np.float32(v) for v in levels)
        self.lo = lo
        self.step = np.float32(255) / np.float32(hi - lo)
        self.floor = np.float32(2.0 ** -126)

    def __call__(self, raw: Any) -> Any:
        xp = self.xp
        x = raw.astype(xp.float32)
        if self.w:  # 1. background: the mean of the rolling history
            k = min(self.w, x.shape[0])
            rows = (self.head + np.arange(k)) % self.w  # the ring's order does not matter for a mean
            self.hist[xp.asarray(rows)] = x[x.shape[0] - k:]
            self.head = (self.head + k) % self.w
            self.filled = min(self.w, self.filled + k)
            mean = self.hist.sum(axis=0) / self.filled  # unfilled rows are zeros
            x -= mean.astype(xp.float32)
        x0 = x[:, self.i0]  # 2. linear resampling
        y = x0 + self.f * (x[:, self.i1] - x0)
        spec = y * self.h  # 3. spectral filter (complex64)
        a = xp.fft.ifft(spec, axis=1)  # 4. inverse FFT, scaled by 1/M
        p = a.real * a.real + a.imag * a.imag  # 5. power -> dB -> int8 levels
        db = xp.log10(xp.maximum(p.astype(xp.float32, copy=False), self.floor)) * np.float32(10)
        t = (db - self.lo) * self.step - np.float32(128)
        return xp.clip(xp.rint(t), -128, 127).astype(xp.int8)


def _agreement(ours: np.ndarray, ref: np.ndarray) -> dict:
    d = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
    return {"max_abs_diff_levels": int(d.max()), "identical_fraction": float((d == 0).mean()),
            "within_1_fraction": float((d <= 1).mean())}


# --- the vortexgo engine ---------------------------------------------------------------


def _raster(g: Geometry, loop: bool) -> RasterScan:
    """vortex's raster scan with every record active and in acquisition order
    (:func:`vortexgo.acquire.record_raster`): the formatted volume is the acquired
    records in order (what the NumPy chain processes, and the same formatting work
    per block as every record placed)."""
    return record_raster(g.ascans, g.bscans, loop=loop)


def _pipeline(g: Geometry, device: Any, *, total_volumes: int, endpoints: list, rate: float = 0.0,
              blocks_to_acquire: int = 0, event_queue_size: int = 0, dispatch_spin: Optional[float] = None,
              device_timings: bool = False):
    """vortex's wiring: the engine's scan queue plays ``total_volumes`` volumes of a raster (0: a
    looping one, until stopped or ``blocks_to_acquire``), a FormatPlanner reads its markers and
    the endpoints execute the plan with their executors. The acquisition is endless: the scan
    queue ends the run."""
    acq = SimulatedAcquisition(SimulatedAcquisitionConfig(
        samples_per_record=g.samples, ascans_per_bscan=g.ascans, bscans_per_volume=g.bscans, volumes=1,
        total_volumes=0, rate=rate))
    pc = ProcessorConfig(samples_per_record=g.samples, ascans_per_block=g.rpb, average_window=AVERAGE_WINDOW,
                         resampling_samples=acq.resampling_positions(),
                         spectral_filter=spectral_filter(hann_window(g.samples), acq.dispersion_compensation()),
                         levels=LEVELS, slots=g.slots)
    proc = CUDAProcessor(pc, device=device) if device.is_cuda else CPUProcessor(pc)
    fmt = FormatPlanner(FormatPlannerConfig(g.bscans, g.ascans))
    ec = EngineConfig(records_per_block=g.rpb, blocks_to_allocate=g.blocks, preload_count=g.preload,
                      blocks_to_acquire=blocks_to_acquire, event_queue_size=event_queue_size,
                      dispatch_spin=dispatch_spin, device_timings=device_timings)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, endpoints)
    engine = Engine(ec)
    if total_volumes == 0:
        engine.scan_queue.append(_raster(g, loop=True))
    else:
        scan = _raster(g, loop=False)
        for _ in range(total_volumes):
            engine.scan_queue.append(scan)
    return engine, acq, pc, proc


def _read_tensor(ep: Any, gpu: bool) -> np.ndarray:
    with ep.tensor as v:
        if gpu:
            import cupy as cp

            with ep.stream as s:
                host = cp.asnumpy(v, stream=s)
                s.synchronize()
            return host
        return np.array(v, copy=True)


def reference_volume(g: Geometry, device: Any) -> tuple[np.ndarray, np.ndarray, ProcessorConfig]:
    """One volume through the engine: its raw spectra and its int8 volume, both
    (records, samples) on the host, and the processor configuration."""
    ep = StackDeviceTensorEndpointInt8()
    spectra = SpectraStackDeviceTensorEndpointUInt16()
    engine, _, pc, proc = _pipeline(g, device, total_volumes=1, endpoints=[ep, spectra])
    try:
        engine.prepare()
        engine.start()
        engine.wait()
        raw = _read_tensor(spectra, device.is_cuda).reshape(g.records_per_volume, g.samples)
        out = _read_tensor(ep, device.is_cuda).reshape(g.records_per_volume, -1)
    finally:
        engine.close()
        ep.close()
        spectra.close()
        proc.close()
    return raw, out, pc


def _free_device_bytes(gpu: bool) -> Optional[int]:
    if not gpu:
        return None
    import cupy as cp

    return int(cp.cuda.runtime.memGetInfo()[0])


def engine_throughput(g: Geometry, device: Any, seconds: float, warm: float) -> dict:
    """Steady-state A-scans/s of the engine end to end, from volume callback stamps
    (each carries the A-scan count since start); device memory around the run."""
    gpu = device.is_cuda
    ep = StackDeviceTensorEndpointInt8()
    engine, _, _, proc = _pipeline(g, device, total_volumes=0, endpoints=[ep])
    stamps: list[tuple[int, int]] = []

    def on_volume(sample: int, scan_idx: int, volume_idx: int) -> None:
        stamps.append((time.perf_counter_ns(), sample))

    ep.volume_callback = on_volume
    try:
        free_before = _free_device_bytes(gpu)
        engine.prepare()
        free_prepared = _free_device_bytes(gpu)
        t0 = time.perf_counter_ns()
        engine.start()
        engine.wait_for(warm + seconds)
        # Drops counted while it ran: stop() may interrupt the block waiting at a volume
        # boundary for its callbacks, and that block is counted as dropped too.
        dropped_running = engine.status().blocks_dropped
        engine.stop()
        free_after = _free_device_bytes(gpu)
        status, timings = engine.status(), engine.timings
    finally:
        engine.close()
        ep.close()
        proc.close()
    if status.error:
        raise RuntimeError(f"the engine failed: {status.error}")
    steady = [s for s in stamps if s[0] - t0 >= warm * 1e9]
    if len(steady) < 2:
        steady = stamps[len(stamps) // 2:]
    if len(steady) < 2:
        raise RuntimeError(f"only {len(stamps)} volumes in {warm + seconds:.1f} s: make the run longer")
    (ta, sa), (tb, sb) = steady[0], steady[-1]
    rate = (sb - sa) / ((tb - ta) / 1e9)
    whole = stamps[-1][1] / ((stamps[-1][0] - t0) / 1e9)
    out = {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "whole_run_ascans_per_s": whole,
           "volumes": len(stamps), "volumes_measured": len(steady) - 1, "seconds_measured": (tb - ta) / 1e9,
           "blocks_dropped": dropped_running, "blocks_dropped_at_stop": status.blocks_dropped - dropped_running,
           # device timings are off on a GPU by default (EngineConfig.device_timings)
           "process_ms_p50": timings["process"].p50 if timings["process"].count else None,
           "format_ms_p50": timings["format"].p50 if timings["format"].count else None}
    if gpu:
        out["memory"] = {"free_before_prepare": free_before, "free_after_prepare": free_prepared,
                         "free_after_run": free_after, "engine_bytes": free_before - free_prepared,
                         "growth_bytes": free_prepared - free_after}
    return out


def engine_counters(g: Geometry, device: Any, seconds: float, warm: float, *,
                    pipeline: Optional[Callable[[Geometry, Any, list], tuple]] = None,
                    callback: bool = False, timings: bool = False) -> dict:
    """Steady-state A-scans/s of the engine with no callback at all, from the formatted-block
    counter over ``seconds`` after ``warm``: the workload of a pipeline that notifies no one
    (the expert peers). A volume_callback makes the engine wait at every volume boundary until
    the handler of the previous volume has run (so that it sees its volume);
    :func:`engine_throughput` measures that case.

    ``pipeline(g, device, endpoints)`` builds another pipeline (``_pipeline``'s result shape),
    ``callback`` sets an empty volume_callback (bench/probe_gap.py's variants); with
    ``timings`` (EngineConfig.device_timings, which costs throughput on a GPU) the result
    carries the median upload time (``engine.timings``) too."""
    ep = StackDeviceTensorEndpointInt8()
    if pipeline is None:
        engine, _, _, proc = _pipeline(g, device, total_volumes=0, endpoints=[ep], device_timings=timings)
    else:
        engine, _, _, proc = pipeline(g, device, [ep])
    if callback:
        ep.volume_callback = lambda *a: None
    try:
        engine.prepare()
        engine.start()
        time.sleep(warm)
        s0, t0 = engine.status(), time.perf_counter()
        time.sleep(seconds)
        s1, t1 = engine.status(), time.perf_counter()
        upload = engine.timings["upload"].p50 if timings else None
        engine.stop()
        status = engine.status()
    finally:
        engine.close()
        ep.close()
        proc.close()
    if status.error:
        raise RuntimeError(f"the engine failed: {status.error}")
    rate = (s1.blocks_formatted - s0.blocks_formatted) * g.rpb / (t1 - t0)
    return {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "seconds_measured": t1 - t0,
            "upload_ms_p50": upload}


# --- the plain-CuPy (or NumPy) baselines -----------------------------------------------


def _pinned_blocks(raw: np.ndarray, g: Geometry, gpu: bool) -> list[np.ndarray]:
    """The volume's raw spectra as a ring of host blocks (pinned on a GPU)."""
    blocks = raw.reshape(-1, g.rpb, g.samples)
    if not gpu:
        return [np.ascontiguousarray(b) for b in blocks]
    import cupy as cp

    out = []
    for b in blocks:
        mem = cp.cuda.alloc_pinned_memory(b.nbytes)
        h = np.frombuffer(mem, np.uint16, b.size).reshape(b.shape)
        h[...] = b
        out.append(h)
    return out


def _timed_blocks(step: Callable[[int], None], finish: Callable[[], None], seconds: float) -> tuple[int, float]:
    """Run step(k) for ~`seconds` (after a warm-up and a calibration); (blocks, elapsed s)."""
    for k in range(3):
        step(k)
    finish()
    t = time.perf_counter()
    n = 0
    while n < 4 or time.perf_counter() - t < 0.2:
        step(n)
        n += 1
    finish()
    per = (time.perf_counter() - t) / n
    n = max(4, int(seconds / per))
    t = time.perf_counter()
    for k in range(n):
        step(k)
    finish()
    return n, time.perf_counter() - t


def baseline_sync(chain: Chain, host: list[np.ndarray], g: Geometry, gpu: bool, seconds: float) -> dict:
    """The straightforward loop: upload a pinned block, process it, store the int8
    A-scans in a device volume, synchronize; one block at a time."""
    xp = chain.xp
    vol = xp.empty((g.records_per_volume, g.samples), xp.int8)
    per_vol = g.records_per_volume // g.rpb
    if gpu:
        import cupy as cp

        s = cp.cuda.Stream(non_blocking=True)
        d = cp.empty((g.rpb, g.samples), cp.uint16)

        def step(k: int) -> None:
            j = k % per_vol
            with s:
                d.set(host[k % len(host)], stream=s)
                vol[j * g.rpb:(j + 1) * g.rpb] = chain(d)
            s.synchronize()

        finish = s.synchronize
    else:
        def step(k: int) -> None:
            j = k % per_vol
            vol[j * g.rpb:(j + 1) * g.rpb] = chain(host[k % len(host)])

        def finish() -> None:
            pass

    n, dt = _timed_blocks(step, finish, seconds)
    rate = n * g.rpb / dt
    return {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "blocks": n}


def baseline_two_stream(chain: Chain, host: list[np.ndarray], g: Geometry, seconds: float) -> dict:
    """Overlapped CuPy: two device blocks; block k+1 uploads on one stream while block k
    is processed on another; events order the reuse of each device block."""
    import cupy as cp

    up, comp = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    dev = [cp.empty((g.rpb, g.samples), cp.uint16) for _ in range(2)]
    uploaded = [cp.cuda.Event(disable_timing=True) for _ in range(2)]
    consumed = [cp.cuda.Event(disable_timing=True) for _ in range(2)]
    vol = cp.empty((g.records_per_volume, g.samples), cp.int8)
    per_vol = g.records_per_volume // g.rpb

    def step(k: int) -> None:
        j = k & 1
        up.wait_event(consumed[j])  # block k-2 is done with dev[j] (no-op before its first record)
        dev[j].set(host[k % len(host)], stream=up)
        uploaded[j].record(up)
        comp.wait_event(uploaded[j])
        with comp:
            i = k % per_vol
            vol[i * g.rpb:(i + 1) * g.rpb] = chain(dev[j])
        consumed[j].record(comp)

    def finish() -> None:
        up.synchronize()
        comp.synchronize()

    n, dt = _timed_blocks(step, finish, seconds)
    rate = n * g.rpb / dt
    return {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "blocks": n}


def h2d_ceiling(g: Geometry, seconds: float, repeats: int = 3, ring: Optional[int] = None) -> dict:
    """Back-to-back pinned host-to-device copies (median of `repeats`) from a ring of
    `ring` blocks (default: one volume's blocks, the ring every variant of the run reads),
    and of one block copied again and again (``one_block_gbs``).

    Why a ring: a stream of spectra never reads the same host memory twice in a row,
    and a single 16-32 MiB block copied back to back measured 5-9% faster on an H100
    host (52.6 vs 48.2 GB/s at 16 MiB): its pages stay warm in the host's caches, a
    ceiling no pipeline fed fresh data can reach."""
    import cupy as cp

    nbytes = g.block_bytes
    n_ring = ring or max(1, g.records_per_volume // g.rpb)
    mems = [cp.cuda.alloc_pinned_memory(nbytes) for _ in range(n_ring)]
    hosts = [np.frombuffer(m, np.uint8, nbytes) for m in mems]
    for h in hosts:
        h[:] = 1
    dev = cp.empty(nbytes, cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    kind = cp.cuda.runtime.memcpyHostToDevice

    def rate(blocks: list) -> float:
        def copy(n: int) -> None:
            for i in range(n):
                cp.cuda.runtime.memcpyAsync(dev.data.ptr, blocks[i % len(blocks)].ctypes.data, nbytes, kind, s.ptr)
            s.synchronize()

        copy(2 * len(blocks))
        t = time.perf_counter()
        copy(16)
        n = max(16, int(seconds / repeats / ((time.perf_counter() - t) / 16)))
        rates = []
        for _ in range(repeats):
            t = time.perf_counter()
            copy(n)
            rates.append(n * nbytes / (time.perf_counter() - t) / 1e9)
        return statistics.median(rates)

    gbs = rate(hosts)
    one = rate(hosts[:1])
    return {"gbs": gbs, "ascans_per_s": gbs * 1e9 / (g.samples * 2), "block_bytes": nbytes, "ring_blocks": n_ring,
            "one_block_gbs": one}


# --- callbacks ---------------------------------------------------------------------------


def callback_dispatch(g: Geometry, device: Any, blocks: int, latency_seconds: float, rate: float,
                      cost_g: Optional[Geometry] = None) -> dict:
    """Dispatcher cost per event (its thread's CPU time over the events it handled, the
    engine unthrottled: many small blocks, a no-op segment_callback per B-scan), and the
    latency from the engine dispatching an event to the handler starting, with the
    acquisition paced at `rate` A-scans/s like a scanner (so the queue does not fill)."""
    segs_per_block = g.rpb // g.ascans
    cost_g = cost_g or g

    # 1. cost: large blocks of short B-scans make events faster than the
    # dispatcher handles them, so the queue never runs dry and the figure is
    # the per-event dispatch cost (plus the handler), without wake-ups.
    ep = StackDeviceTensorEndpointInt8()
    total = blocks * (cost_g.rpb // cost_g.ascans)
    warm = min(total // 10, 2000)
    state = {"n": 0}

    def on_segment(sample: int, scan_idx: int, volume_idx: int, bscan_idx: int) -> None:
        n = state["n"] = state["n"] + 1
        if n == warm:
            state["cpu0"], state["t0"] = time.thread_time_ns(), time.perf_counter_ns()
        elif n == total:
            state["cpu1"], state["t1"] = time.thread_time_ns(), time.perf_counter_ns()

    ep.segment_callback = on_segment
    # No spin: the cost is the dispatcher's own work per event, not polling.
    engine, _, _, proc = _pipeline(cost_g, device, total_volumes=0, endpoints=[ep], blocks_to_acquire=blocks,
                                   dispatch_spin=0)
    try:
        engine.prepare()
        engine.start()
        engine.wait()
        status = engine.status()
    finally:
        engine.close()
        ep.close()
        proc.close()
    if state["n"] != total or "cpu1" not in state:
        raise RuntimeError(f"segment_callback ran {state['n']} times, expected {total}")
    events = total - warm
    # Every event of the queue costs the dispatcher (update events too, without a handler).
    cost_us = (state["cpu1"] - state["cpu0"]) / events / 1e3
    wall_us = (state["t1"] - state["t0"]) / events / 1e3

    # 2. latency: a paced acquisition, the recorder on; the default (adaptive)
    # spin, a fixed 200 us spin and one as long as the gap between blocks (5 ms),
    # with the dispatcher thread's CPU use while events stream; then the
    # adaptive spin with blocks 50 ms apart (beyond its 10 ms bound: it parks).
    latency = []
    for spin, r in ((None, rate), (200e-6, rate), (5e-3, rate), (None, g.rpb / 0.05)):
        ep = StackDeviceTensorEndpointInt8()
        cpu: list[int] = []
        calls = [0]

        def on_segment(*a: Any) -> None:
            # The dispatcher thread's CPU clock, read every 16th call: the read is a system
            # call (1-2 us on a VM), and every handler before an event in its block's burst
            # of 16 adds its cost to that event's latency; the latency measured is the
            # engine's, not the probe's.
            calls[0] += 1
            if calls[0] % 16 == 0:
                cpu.append(time.thread_time_ns())

        ep.segment_callback = on_segment
        engine, _, _, proc = _pipeline(g, device, total_volumes=0, endpoints=[ep], rate=r, dispatch_spin=spin)
        try:
            engine.record_callback_latency()
            engine.prepare()
            engine.start()
            engine.wait_for(latency_seconds)
            engine.stop()
            lat = engine.callback_latencies_ns()
        finally:
            engine.close()
            ep.close()
            proc.close()
        lat = lat[len(lat) // 10:] / 1e3  # skip the start-up
        if lat.size == 0:
            raise RuntimeError("no callback latency was recorded")
        half = len(cpu) // 2  # the dispatcher thread's CPU over the second half of the run
        busy = (cpu[-1] - cpu[half]) / (latency_seconds / 2 * 1e9) if len(cpu) > 2 else float("nan")
        latency.append({"dispatch_spin_us": "adaptive" if spin is None else spin * 1e6, "events": int(lat.size),
                        "block_gap_ms": g.rpb / r * 1e3, "dispatcher_cpu": busy,
                        "p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99)),
                        "max": float(lat.max()), "min": float(lat.min())})
    return {"events": events, "events_dropped": status.events_dropped, "cost_us_per_event": cost_us,
            "wall_us_per_event": wall_us, "events_per_s_cost_run": 1e6 / wall_us if wall_us else None,
            "latency_rate_ascans_per_s": rate, "latency": latency, "segments_per_block": segs_per_block,
            "geometry": g.describe(), "cost_geometry": cost_g.describe(),
            "cost_segments_per_block": cost_g.rpb // cost_g.ascans}


# --- the section -------------------------------------------------------------------------


def _configs(gpu: bool, quick: bool, sizes: list[int]) -> list[Geometry]:
    if not gpu:
        return [Geometry(s, 64, 16, 256, blocks=6, preload=3, slots=2) for s in sizes]
    # 65,536 A-scans per volume: 8 blocks of 8,192 A-scans.
    return [Geometry(s, 512, 128, 8192) for s in sizes]


def bench(results: dict, device: Any, *, quick: bool = False, sizes: Optional[list[int]] = None,
          seconds: Optional[float] = None) -> dict:
    """Measure everything available on `device` into results["engine"] and results["engine_md"]."""
    gpu = device.is_cuda
    sizes = sizes or ([1024, 2048] if gpu else [256])
    seconds = seconds if seconds is not None else ((0.8 if quick else 3.0) if gpu else 0.5)
    warm = 0.5 if gpu else 0.2
    if gpu:
        import cupy as cp

        xp: Any = cp
    else:
        xp = np
    out: dict[str, Any] = {"device": device.name, "backend": "cuda" if gpu else "cpu", "configs": []}
    for g in _configs(gpu, quick, sizes):
        row: dict[str, Any] = {"samples": g.samples, "geometry": g.describe()}
        raw, ref_out, pc = reference_volume(g, device)
        chain = Chain(xp, g.samples, g.rpb, AVERAGE_WINDOW, pc.resampling_samples, pc.spectral_filter, LEVELS)
        mine = np.concatenate([_to_host(chain(xp.asarray(b))) for b in raw.reshape(-1, g.rpb, g.samples)])
        row["agreement"] = _agreement(ref_out, mine)
        del mine
        row["engine"] = engine_throughput(g, device, seconds, warm)
        host = _pinned_blocks(raw, g, gpu)
        row["sync"] = baseline_sync(chain, host, g, gpu, seconds * 0.6)
        if gpu:
            row["two_stream"] = baseline_two_stream(chain, host, g, seconds * 0.6)
            row["ceiling"] = h2d_ceiling(g, seconds * 0.4)
        e = row["engine"]["ascans_per_s"]
        row["ratio"] = {"engine_vs_sync": e / row["sync"]["ascans_per_s"]}
        if gpu:
            row["ratio"]["engine_vs_two_stream"] = e / row["two_stream"]["ascans_per_s"]
            row["ratio"]["engine_vs_ceiling"] = row["engine"]["gbs"] / row["ceiling"]["gbs"]
        out["configs"].append(row)
        del host, raw, ref_out, chain
        if gpu:
            cp.get_default_memory_pool().free_all_blocks()  # the next engine's memory figures start clean
    # Callbacks: small blocks, a segment (B-scan) every 32 A-scans, 16 per block.
    cg = Geometry(256, 32, 64, 512, blocks=16, preload=8, slots=2) if gpu else Geometry(64, 16, 16, 128, blocks=8,
                                                                                           preload=4, slots=1)
    # Cost: 8192-record blocks of 32-A-scan B-scans, 256 segment events per block.
    cost_g = Geometry(256, 32, 1024, 8192, blocks=16, preload=8, slots=2) if gpu else None
    out["callbacks"] = callback_dispatch(cg, device, blocks=(250 if quick else 1250) if gpu else 600,
                                         latency_seconds=(1.0 if quick else 3.0) if gpu else 0.5,
                                         rate=200_000.0 if gpu else 20_000.0, cost_g=cost_g)
    out["callbacks"]["host_hiccups"] = host_hiccups()
    out["callbacks"]["host_hiccups_cpus"] = host_hiccups(3.0, 2)
    results["engine"] = _jsonable(out)
    results["engine_md"] = markdown(results["engine"])
    return results["engine"]


HICCUP = Path(__file__).resolve().parent.parent / "gpu-build" / "tools" / "hiccup"


def host_hiccups(seconds: float = 3.0, threads: int = 1) -> Optional[dict]:
    """The host's own tail, in the same run: bench/hiccup.c (built by `make gpu-build`) spins
    reading the clock and counts the gaps in which its thread did not run (the kernel, interrupts,
    the hypervisor). A dispatcher's latency cannot have a shorter tail than such gaps allow. With
    `threads` >= 2, that many threads pinned to their own CPUs, and how many of the first one's
    gaps overlap the second's (whether the CPUs stall together). None when the tool was not
    carried."""
    if not HICCUP.exists():
        return None
    out = subprocess.run([str(HICCUP), str(seconds), str(threads)], capture_output=True, text=True,
                         timeout=seconds + 30)
    return json.loads(out.stdout) if out.returncode == 0 else None


def _to_host(a: Any) -> np.ndarray:
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return round(float(x), 4)
    return x


def _mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def hiccup_md(cb: dict) -> list[str]:
    """The host's gaps beside the latency table (host_hiccups: one thread, then two pinned)."""
    lines: list[str] = []
    hic = cb.get("host_hiccups")
    if hic:
        per_s = {k: v / hic["seconds"] for k, v in hic["gaps_over_us"].items()}
        lines += ["", f"The host in the same run (bench/hiccup.c: a thread that only spins reading the clock, "
                      f"{hic['seconds']:.0f} s): off its CPU for more than 20 us {per_s['20']:.0f} times a second, "
                      f"more than 50 us {per_s['50']:.1f} times, more than 100 us {per_s['100']:.1f} times, at most "
                      f"{hic['max_us']:.0f} us ({hic['lost_fraction'] * 100:.1f}% of its time). The engine's poster "
                      f"and the dispatcher are two such threads and every event waits on both: a gap that lands "
                      f"between a block's post and its handlers adds itself to all of that block's events."]
    pair = cb.get("host_hiccups_cpus")
    if pair:
        t = pair["threads"]
        ov = pair["overlap_20us"]
        rates = ", ".join(f"CPU {x['cpu']} {x['gaps_over_us']['20'] / x['seconds']:.0f}" for x in t)
        share = ov["overlapping_second"] / ov["first"] if ov["first"] else 0.0
        verdict = ("each CPU is mostly taken away on its own, not the machine as a whole" if share < 0.5 else
                   "the CPUs mostly stall together: the machine pauses as a whole")
        lines += ["", f"Two such threads, each pinned to its own CPU ({pair['seconds']:.0f} s): gaps over 20 us a "
                      f"second: {rates}; {ov['overlapping_second']} of the first CPU's {ov['first']} "
                      f"({share * 100:.0f}%) overlap one of the second's: {verdict}."]
    return lines


def markdown(r: dict) -> str:
    """The section as markdown, in the foundation section's style."""
    gpu = r["backend"] == "cuda"
    lines = [f"## Engine end to end ({r['device']})", ""]
    if gpu:
        lines += ["Host raw uint16 block -> device -> processed int8 volume in the endpoint. vortexgo: "
                  "`SimulatedAcquisition` (pinned replay ring) -> `CUDAProcessor` (background subtraction over "
                  f"{AVERAGE_WINDOW} A-scans, resampling, spectral filter, inverse FFT, dB, int8) -> "
                  "`StackDeviceTensorEndpointInt8`, steady state. Ceiling: back-to-back pinned H2D copies from "
                  "the replay ring's blocks (one volume), same run. The CuPy columns are the steps as unfused CuPy array ops (about 20 kernels, "
                  "temporaries per block: *sync* block by block, *two streams* overlapping the upload), a "
                  "correctness reference, not a peer: the expert CuPy and PyTorch pipelines are in the peers "
                  "section.", "",
                  "| A-scan | block | vortexgo (M A-scans/s) | vortexgo (GB/s raw) | unfused CuPy, sync | "
                  "unfused CuPy, two streams | H2D ceiling (GB/s) | vortexgo / ceiling |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for c in r["configs"]:
            e, ra = c["engine"], c["ratio"]
            lines.append(f"| {c['samples']} x uint16 | {c['geometry']['records_per_block']} | "
                         f"{e['ascans_per_s'] / 1e6:.2f} | {e['gbs']:.2f} | {c['sync']['ascans_per_s'] / 1e6:.2f} | "
                         f"{c['two_stream']['ascans_per_s'] / 1e6:.2f} | {c['ceiling']['gbs']:.2f} | "
                         f"{ra['engine_vs_ceiling']:.2f} |")
        lines += ["", "CuPy columns in M A-scans/s. Target: vortexgo / ceiling >= "
                  f"{TARGET_CEILING} ({', '.join(_mark(c['ratio']['engine_vs_ceiling'] >= TARGET_CEILING) for c in r['configs'])})."]
    else:
        lines += ["CPU backend smoke run (no GPU): `SimulatedAcquisition` -> `CPUProcessor` -> "
                  "`StackDeviceTensorEndpointInt8` next to the same steps in plain NumPy, block by block. "
                  "Not a performance figure.", "",
                  "| A-scan | block | vortexgo (M A-scans/s) | NumPy loop (M A-scans/s) | vortexgo / NumPy |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for c in r["configs"]:
            lines.append(f"| {c['samples']} x uint16 | {c['geometry']['records_per_block']} | "
                         f"{c['engine']['ascans_per_s'] / 1e6:.3f} | {c['sync']['ascans_per_s'] / 1e6:.3f} | "
                         f"{c['ratio']['engine_vs_sync']:.2f} |")
    agree = "; ".join(f"{c['samples']}: max |diff| {c['agreement']['max_abs_diff_levels']} level(s), "
                      f"{100 * c['agreement']['identical_fraction']:.3f} % identical"
                      for c in r["configs"])
    lines += ["", f"Same math: the engine's int8 volume against the {'CuPy' if gpu else 'NumPy'} chain on the "
              f"same raw spectra ({agree})."]
    cb = r["callbacks"]
    g = cb["geometry"]
    lines += ["", "### Callback dispatch", "",
              f"`segment_callback` per B-scan. Cost: the dispatcher thread's CPU time per event (handler "
              f"included) over {cb['events']} events, engine unthrottled, no spinning, "
              f"{cb['cost_segments_per_block']} segments per {cb['cost_geometry']['records_per_block']}-record block "
              "so that events arrive faster than they are handled and the dispatcher never parks "
              f"({cb['wall_us_per_event']:.3f} us of wall time per event). Latency ({g['ascans_per_bscan']}-A-scan "
              f"B-scans, {cb['segments_per_block']} per {g['records_per_block']}-record block, {g['samples']} "
              "samples): from the engine dispatching "
              "the event (its Go timestamp, on CLOCK_MONOTONIC) to the Python handler starting, acquisition paced "
              f"at {cb['latency_rate_ascans_per_s'] / 1e3:.0f} k A-scans/s (a block every "
              f"{g['records_per_block'] / cb['latency_rate_ascans_per_s'] * 1e3:.2f} ms), with the dispatcher's "
              "default adaptive spin (it spins through the gaps while events arrive at most 10 ms apart), a fixed "
              "200 us spin and a spin that covers the gap between blocks (`dispatch_spin=5e-3`); the last row "
              "paces blocks 50 ms apart, beyond what the adaptive dispatcher spins through: it parks through each gap and wakes to spin shortly before the next block is due. *Dispatcher CPU*: its thread's CPU "
              "time over the run's second half, as a fraction of one core.", "",
              f"Per-event cost: **{cb['cost_us_per_event']:.3f} us** (target < {TARGET_EVENT_US} us: "
              f"{_mark(cb['cost_us_per_event'] < TARGET_EVENT_US)}).", "",
              "| dispatch_spin | block gap (ms) | events | latency p50 (us) | latency p99 (us) | latency max (us) | "
              "dispatcher CPU | p99 target |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in cb["latency"]:
        spin = row["dispatch_spin_us"]
        spin = spin if isinstance(spin, str) else f"{spin:.0f} us"
        lines.append(f"| {spin} | {row['block_gap_ms']:.2f} | {row['events']} | {row['p50']:.1f} | {row['p99']:.1f} | "
                     f"{row['max']:.1f} | {row['dispatcher_cpu']:.2f} | < {TARGET_P99_US:.0f} us "
                     f"({_mark(row['p99'] < TARGET_P99_US)}) |")
    lines += hiccup_md(cb)
    if gpu:
        lines += ["", "### Device memory after prepare()", "",
                  "| A-scan | allocated by prepare (MiB) | free after prepare (MiB) | free after the run (MiB) "
                  "| growth over the run (bytes) | volumes |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for c in r["configs"]:
            m = c["engine"]["memory"]
            lines.append(f"| {c['samples']} x uint16 | {m['engine_bytes'] / 2**20:.1f} | "
                         f"{m['free_after_prepare'] / 2**20:.1f} | {m['free_after_run'] / 2**20:.1f} | "
                         f"{m['growth_bytes']} | {c['engine']['volumes']} |")
    return "\n".join(lines) + "\n"


def _require_gpu() -> Any:
    if not vg.is_cuda_available():
        raise RuntimeError(f"bench_engine needs a CUDA GPU (use --device cpu for the CPU smoke run): "
                           f"{vg.cuda_unavailable_reason()}")
    try:
        import cupy  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(f"bench_engine needs CuPy for its baselines: {exc}") from None
    return vg.get_device("cuda:0")


def run(results: dict, quick: bool = False) -> None:
    """`make bench`'s engine section: results["engine"] (JSON) and results["engine_md"] (markdown)."""
    bench(results, _require_gpu(), quick=quick)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="vortexgo engine benchmark (the engine section of make bench)")
    ap.add_argument("--quick", action="store_true", help="shorter runs (about 1 s per measurement)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cuda (default; needs a GPU and CuPy) or cpu (a smoke run of the CPU-capable parts)")
    ap.add_argument("--sizes", default="", help="comma-separated samples per A-scan (default 1024,2048; cpu: 256)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per throughput measurement")
    ap.add_argument("--json", default="", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes={args.sizes!r}, expected comma-separated integers")
    for s in args.sizes:
        if s < 16 or s & (s - 1):
            ap.error(f"--sizes: {s}, expected powers of two >= 16")
    if args.seconds is not None and args.seconds <= 0:
        ap.error(f"--seconds={args.seconds}, expected > 0")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    results: dict = {}
    try:
        device = _require_gpu() if args.device == "cuda" else vg.get_device("cpu")
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    bench(results, device, quick=args.quick, sizes=args.sizes or None, seconds=args.seconds)
    if args.json:
        Path(args.json).write_text(json.dumps(results["engine"], indent=2))
    print(results["engine_md"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
