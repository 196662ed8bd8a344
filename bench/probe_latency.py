"""Where the callback latency goes, and the dispatcher before/after: bench_engine's
callback_dispatch measurements on any device (the dispatcher path is the same code on
the CPU backend), with variants interleaved in one run.

Variants (``--variants``, comma-separated, each ``DISPATCHER:SPIN``):

- DISPATCHER ``new`` (the engine's ``_dispatch``), ``old`` (the dispatcher before issue
  10's change, kept below: a list per event through ``tolist``, a handler table per batch,
  a slice and an argument tuple per call) or ``instr`` (the old loop, instrumented: the
  split of each segment event's latency into time in Go (queue, wake-up, GIL) and time
  in Python before its handler, and every cyclic-GC collection, through gc.callbacks);
- SPIN ``adaptive`` (the default), ``200us``, ``5ms``, or ``cost``: the per-event CPU
  cost run (engine unthrottled, no spin: events queue faster than they are handled).

Prints p50/p90/p99/max per run and the median p99 per variant::

    PYTHONPATH=python .venv/bin/python bench/probe_latency.py --device cpu
    PYTHONPATH=python python bench/probe_latency.py --device cuda --repeats 5 --seconds 3
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine as be  # noqa: E402
from vortexgo import engine as ve  # noqa: E402
from vortexgo.engine import (_BATCH, _CB_NAMES, _DONE, _ENGINE, _FIELDS, _JOB, _POLL_MS, _QUEUE,  # noqa: E402
                             _QUEUE_EMPTY, _SEGMENT, _UPDATE, _VOLUME, EngineEvent)

_ARGS_END = (2, 6, 5, 4, 0, 0, 4)

# --- the dispatcher before issue 10 (python/vortexgo/engine.py at 6c5f5ff) ---------

def _old_aggregate(self, ep: Any, kind: int, row: list, aggregate: Any, block: Any) -> None:
    """vortex's aggregated segment callbacks, around the events of one endpoint: segments
    gather per volume and per block; a volume event first hands its volume's segments to
    ``aggregate_segment_callback``, the block's update event (its last) the open volume's,
    then all of the block's to ``block_segment_callback``."""
    volume, blk = ep._agg_volume, ep._agg_block
    calls = []
    if kind == _SEGMENT:
        volume.append(row[5])
        blk.append(row[5])
    elif kind == _VOLUME or kind == _UPDATE:
        if volume and aggregate is not None:
            calls.append(("aggregate_segment_callback", aggregate, list(volume)))
        volume.clear()
        if kind == _UPDATE:
            if blk and block is not None:
                calls.append(("block_segment_callback", block, list(blk)))
            blk.clear()
    for name, cb, segments in calls:
        try:
            cb(segments)
        except Exception as exc:
            self._callback_failed(f"{type(ep).__name__}.{name}", exc)
        except BaseException as exc:
            self._handler_exited(f"{type(ep).__name__}.{name}", exc)

def _old_dispatch(self) -> None:
    """Drain the Go event queue and run the handlers, in order (DESIGN.md section 1)."""
    h = self._h
    buf = np.zeros((_BATCH, _FIELDS), np.int64)
    ptr = buf.ctypes.data
    eps = self._endpoints
    lat, lat_cap = self._latency, self._latency_cap
    if lat is not None:
        mono, base = time.monotonic_ns, int(h.StartMonotonicNs())
    while True:
        try:
            n = h.NextEventsInto(ptr, _BATCH, _POLL_MS)
        except RuntimeError as exc:  # pragma: no cover - the engine was closed under us
            self.logger.error("vortexgo: the event queue failed: %s", exc)
            return
        # Handlers are read once per batch (callbacks may be swapped while
        # the engine runs; a batch sees one set), then looked up by kind.
        table = [(ep.update_callback, ep.segment_callback, ep.volume_callback, ep.scan_callback, None, None,
                  ep.event_callback) for ep in eps]
        agg = [(ep.aggregate_segment_callback, ep.block_segment_callback) for ep in eps]
        for row in buf[:n].tolist():
            kind = row[0]
            if self._fatal is not None and kind != _DONE:
                continue  # stopping after a handler's BaseException: drain only
            if kind in (_QUEUE, _QUEUE_EMPTY):
                self._queue_event(kind == _QUEUE_EMPTY)
                continue
            if kind == _ENGINE:
                ev = EngineEvent(row[3])
                if ev == EngineEvent.Exit and self._fatal is None:
                    self._queue_event(False)  # the last block's Finish
                # row[2] says the event carries the session's error.
                self._engine_event(ev, self._session_error() if row[2] else None)
                continue
            if kind == _JOB:
                self._job(row)
                continue
            if kind == _DONE:
                return
            if kind in (_SEGMENT, _VOLUME, _UPDATE) and (agg[row[1]][0] or agg[row[1]][1]):
                _old_aggregate(self, eps[row[1]], kind, row, *agg[row[1]])
            cb = table[row[1]][kind]
            if cb is None:
                continue
            if lat is not None and len(lat) < lat_cap:
                lat.append(mono() - base - row[6])
            try:
                cb(*row[2:_ARGS_END[kind]])
            except Exception as exc:
                self._callback_failed(f"{type(eps[row[1]]).__name__}.{_CB_NAMES[kind]}", exc)
            except BaseException as exc:
                self._handler_exited(f"{type(eps[row[1]]).__name__}.{_CB_NAMES[kind]}", exc)


# --- instrumented copy of the old loop (segment events only) ----------------------


def instrumented_dispatch(rec: dict):
    """The old loop for endpoint events, recording per segment event the Go timestamp,
    the return of NextEventsInto and the handler's start, its index in the batch and the
    batch size."""

    def _dispatch(self: Any) -> None:
        h = self._h
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        ptr = buf.ctypes.data
        eps = self._endpoints
        mono, base = time.monotonic_ns, int(h.StartMonotonicNs())
        out = rec["rows"]
        while True:
            n = h.NextEventsInto(ptr, _BATCH, _POLL_MS)
            t_ret = mono()
            table = [(ep.update_callback, ep.segment_callback, ep.volume_callback, ep.scan_callback, None, None,
                      ep.event_callback) for ep in eps]
            for i, row in enumerate(buf[:n].tolist()):
                kind = row[0]
                if kind == _DONE:
                    return
                if kind > 6 or row[1] < 0:
                    continue
                cb = table[row[1]][kind]
                if cb is None:
                    continue
                if kind == _SEGMENT:
                    out.append((row[6] + base, t_ret, mono(), i, n))
                cb(*row[2:_ARGS_END[kind]])

    return _dispatch


DISPATCHERS = {"new": ve.Engine._dispatch, "old": _old_dispatch}
SPINS = {"adaptive": None, "200us": 200e-6, "5ms": 5e-3, "cost": 0.0}


def run_once(g: Any, device: Any, rate: float, seconds: float, disp: str, spin: str) -> dict:
    """One engine run with dispatcher `disp`; its latencies (or cost), GC collections."""
    rec: dict = {"rows": [], "gc": []}
    gc_start: dict = {}
    dispatcher_thread = []

    def on_gc(phase: str, info: dict) -> None:
        if threading.current_thread() not in dispatcher_thread:
            return
        if phase == "start":
            gc_start["t"] = time.monotonic_ns()
        else:
            rec["gc"].append((gc_start.get("t", 0), time.monotonic_ns(), info["generation"]))

    ve.Engine._dispatch = instrumented_dispatch(rec) if disp == "instr" else DISPATCHERS[disp]
    inner = ve.Engine._dispatch

    def wrapped(self: Any) -> None:
        dispatcher_thread.append(threading.current_thread())
        inner(self)

    ve.Engine._dispatch = wrapped
    gc.callbacks.append(on_gc)
    ep = be.StackDeviceTensorEndpointInt8()
    state = {"n": 0}
    cost = spin == "cost"
    if cost:
        total = 600 * (g.rpb // g.ascans)
        warm = total // 10

        def on_segment(sample: int, scan_idx: int, volume_idx: int, bscan_idx: int) -> None:
            n = state["n"] = state["n"] + 1
            if n == warm:
                state["cpu0"] = time.thread_time_ns()
            elif n == total:
                state["cpu1"] = time.thread_time_ns()

        ep.segment_callback = on_segment
        engine, _, _, proc = be._pipeline(g, device, total_volumes=0, endpoints=[ep], blocks_to_acquire=600,
                                          dispatch_spin=0)
    else:
        ep.segment_callback = lambda *a: None
        engine, _, _, proc = be._pipeline(g, device, total_volumes=0, endpoints=[ep], rate=rate,
                                          dispatch_spin=SPINS[spin])
    try:
        if not cost:
            engine.record_callback_latency()
        engine.prepare()
        engine.start()
        if cost:
            engine.wait()
        else:
            engine.wait_for(seconds)
            engine.stop()
        rec["lat"] = engine.callback_latencies_ns()
    finally:
        gc.callbacks.remove(on_gc)
        ve.Engine._dispatch = DISPATCHERS["new"]
        engine.close()
        ep.close()
        proc.close()
    if cost:
        rec["cost_us"] = (state["cpu1"] - state["cpu0"]) / (total - warm) / 1e3
    return rec


def summary(lat_us: np.ndarray) -> str:
    if lat_us.size == 0:
        return "no events"
    return (f"n={lat_us.size:6d} p50={np.percentile(lat_us, 50):7.1f} p90={np.percentile(lat_us, 90):7.1f} "
            f"p99={np.percentile(lat_us, 99):7.1f} max={lat_us.max():8.1f}")


def analyse(rec: dict) -> None:
    """The instrumented run's split, and the GC collections against the p99 outliers."""
    rows = np.array(rec["rows"], np.int64)
    rows = rows[len(rows) // 10:]
    if rows.size == 0:
        return
    ts, ret, hs, idx, n = rows.T
    total = (hs - ts) / 1e3
    print("    in Go      ", summary((ret - ts) / 1e3))
    print("    in Python  ", summary((hs - ret) / 1e3))
    print(f"    index in batch p50 {np.percentile(idx, 50):.0f} max {idx.max()}, batch size p50 "
          f"{np.percentile(n, 50):.0f}")
    cut = np.percentile(total, 99)
    out = np.nonzero(total >= cut)[0]
    gcs = np.array(rec["gc"], np.int64).reshape(-1, 3)
    hit = sum(1 for k in out if gcs.size and np.any((gcs[:, 1] >= ts[k]) & (gcs[:, 0] <= hs[k])))
    print(f"    outliers >= p99 ({cut:.1f} us): {out.size}, {hit} with a GC collection inside; their time in Go "
          f"median {np.median((ret - ts)[out]) / 1e3:.1f} us, in Python {np.median((hs - ret)[out]) / 1e3:.1f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--seconds", type=float, default=1.0, help="per latency run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rate", type=float, default=0.0, help="A-scans/s (default: 20k CPU, 200k GPU, as bench_engine)")
    ap.add_argument("--variants", default="old:cost,new:cost,old:adaptive,new:adaptive,old:5ms,new:5ms")
    args = ap.parse_args()
    import vortexgo as vg

    device = vg.get_device("cuda:0" if args.device == "cuda" else args.device)
    gpu = device.is_cuda
    # bench_engine's callback geometries.
    g = be.Geometry(256, 32, 64, 512, blocks=16, preload=8, slots=2) if gpu else be.Geometry(
        64, 16, 16, 128, blocks=8, preload=4, slots=1)
    rate = args.rate or (200_000.0 if gpu else 20_000.0)
    print(f"device {device.name}; {g.rpb // g.ascans} segments per {g.rpb}-record block, a block every "
          f"{g.rpb / rate * 1e3:.2f} ms; latency in us")
    res: dict = {}
    for r in range(args.repeats):
        for v in args.variants.split(","):
            disp, spin = v.split(":")
            rec = run_once(g, device, rate, args.seconds, disp, spin)
            gcs = len(rec["gc"])
            if spin == "cost":
                res.setdefault(v, []).append(rec["cost_us"])
                print(f"[{r}] {v:14s} cost {rec['cost_us']:.2f} us/event, dispatcher GC collections {gcs}")
                continue
            lat = rec["lat"][len(rec["lat"]) // 10:] / 1e3
            res.setdefault(v, []).append(np.percentile(lat, 99) if lat.size else float("nan"))
            print(f"[{r}] {v:14s} {summary(lat)}, dispatcher GC collections {gcs}")
            for t0, t1, gen in rec["gc"]:
                print(f"    GC gen{gen} {(t1 - t0) / 1e3:.1f} us")
            if disp == "instr":
                analyse(rec)
    print("median over repeats (p99 us, or cost us/event):",
          {k: round(float(np.median(v)), 2) for k, v in res.items()})


if __name__ == "__main__":
    main()
