"""Where the callback latency goes: bench_engine's
callback_dispatch measurements on any device (the dispatcher path is the same code on
the CPU backend), with variants interleaved in one run.

Variants (``--variants``, comma-separated, each ``DISPATCHER:SPIN``):

- DISPATCHER ``new`` (the engine's ``_dispatch_loop``), ``sleep`` (the same, the main thread in
  ``time.sleep`` instead of ``engine.wait_for``'s 50 ms polls: no other Python thread ever wants
  the GIL), ``pin`` (the same, the dispatcher thread pinned to the last CPU: no migrations), ``py``
  (the same with every record run by the
  Python loop, as without the C extension: ``engine._run_events`` None), ``go`` (the same with a
  fixed spin waiting in Go instead of on the event ring in C: ``engine._ring_next`` None) or
  ``instr`` / ``instring`` (the same
  loop as ``new``, instrumented: each segment event's latency split into waiting for a busy
  dispatcher, time in Go (spin or wake-up, cgo return, GIL) and time in Python before its
  handler; see `analyse`; ``instring`` waits on the event ring in C as a fixed spin does, and
  its "in Go" is then the C wait and the GIL);
- every run counts the cyclic-GC collections on the dispatcher thread (gc.callbacks);
- SPIN ``adaptive`` (the default), ``200us``, ``5ms``, or ``cost``: the per-event CPU
  cost run (engine unthrottled, no spin: events queue faster than they are handled).

Prints p50/p90/p99/max per run and the median p99 per variant::

    PYTHONPATH=python .venv/bin/python bench/probe_latency.py --device cpu
    PYTHONPATH=python python bench/probe_latency.py --device cuda --repeats 5 --seconds 3
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine as be  # noqa: E402
from vortexgo import _core  # noqa: E402
from vortexgo.engine import dispatch as ve  # noqa: E402 - the dispatcher's module
from vortexgo.engine import _BATCH, _FIELDS, _POLL_MS, _SEGMENT  # noqa: E402

# --- the dispatcher, instrumented ----------------------------------------------


def instrumented_dispatch(rec: dict, on_ring: bool = False):
    """The engine's dispatcher loop, recording per batch when it entered FastNextEvents (with
    `on_ring`: the C wait on the event ring, ring_next, as the engine's dispatcher does with a
    fixed spin), when that returned, and the Go timestamps of its segment events (read after the
    batch ran, so the handlers run as in the plain loop). With the latency recorder's handler
    starts (ts + latency, in callback order) this splits each segment event's latency."""

    def _dispatch(ref: Any, ring: Any = None) -> None:
        self = ref()  # held for the whole run: a probe's engine is never dropped while it runs
        h = self._h
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        ptr = buf.ctypes.data
        records = memoryview(buf).cast("B").cast("q")
        self._latency_base = int(h.StartMonotonicNs())
        mono = time.monotonic_ns
        out = rec["batches"]
        fast, eid = _core.fast_next_events, int(h.ID())  # the engine's call per batch (_dispatch_loop)
        ring_next = _core.ring_next
        addr, spin = (int(ring.Addr()), self._ring_spin_ns) if on_ring and ring is not None else (0, 0)
        while True:
            t_call = mono()
            if addr:
                n = ring_next(addr, records, spin)
                if n == -2:
                    ring.Ack()
                    continue
                if n <= 0:  # spun out, or closed and drained: Go parks or hands out the done event
                    n = fast(eid, ptr, _BATCH, _POLL_MS, 0)
            else:
                n = fast(eid, ptr, _BATCH, _POLL_MS, 1)
            t_ret = mono()
            if n and self._run_batch(records, n):
                return
            seg = buf[:n, 6][buf[:n, 0] == _SEGMENT]
            if seg.size:
                out.append((t_call, t_ret, seg + self._latency_base))

    return _dispatch


DISPATCHERS = {"new": ve._dispatch_loop}
SPINS = {"adaptive": None, "200us": 200e-6, "5ms": 5e-3, "cost": 0.0}


def run_once(g: Any, device: Any, rate: float, seconds: float, disp: str, spin: str) -> dict:
    """One engine run with dispatcher `disp`; its latencies (or cost), GC collections."""
    rec: dict = {"batches": [], "gc": []}
    gc_start: dict = {}
    dispatcher_thread = []

    def on_gc(phase: str, info: dict) -> None:
        if threading.current_thread() not in dispatcher_thread:
            return
        if phase == "start":
            gc_start["t"] = time.monotonic_ns()
        else:
            rec["gc"].append((gc_start.get("t", 0), time.monotonic_ns(), info["generation"]))

    c_loop, c_wait = ve._run_events, ve._ring_next
    if disp == "py":
        ve._run_events = None
    if disp == "go":  # a fixed spin waits in Go, not on the event ring in C
        ve._ring_next = None
    inner = (instrumented_dispatch(rec, disp == "instring") if disp in ("instr", "instring")
             else DISPATCHERS.get(disp, DISPATCHERS["new"]))

    def wrapped(ref: Any, ring: Any = None) -> None:
        dispatcher_thread.append(threading.current_thread())
        if disp == "pin":
            os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})  # this thread only
        inner(ref, ring)

    ve._dispatch_loop = wrapped  # the engine's start() reads it when it starts its dispatcher thread
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
        elif disp == "sleep":
            time.sleep(seconds)
            engine.stop()
        else:
            engine.wait_for(seconds)
            engine.stop()
        rec["lat"] = engine.callback_latencies_ns()
    finally:
        gc.callbacks.remove(on_gc)
        ve._dispatch_loop = DISPATCHERS["new"]
        ve._run_events, ve._ring_next = c_loop, c_wait
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


def analyse(rec: dict, lat_ns: np.ndarray) -> None:
    """Split each segment event's latency: waiting for a busy dispatcher (posted while it ran
    Python), in Go (from the later of the post and the dispatcher's call to the return of
    FastNextEvents: the spin or the wake-up, the cgo return, the GIL) and in Python (from
    that return to its handler: the batch's earlier handlers and the per-event work)."""
    ts, t_call, t_ret, pos = [], [], [], []
    for c, r, seg in rec["batches"]:
        ts.extend(seg.tolist())
        t_call.extend([c] * seg.size)
        t_ret.extend([r] * seg.size)
        pos.extend(range(seg.size))
    k = min(len(ts), lat_ns.size)
    ts, t_call, t_ret, pos = (np.array(x[:k], np.int64) for x in (ts, t_call, t_ret, pos))
    start = ts + lat_ns[:k]
    sl = slice(k // 10, k)  # skip the start-up, as the latency figures do
    ts, t_call, t_ret, start, pos = ts[sl], t_call[sl], t_ret[sl], start[sl], pos[sl]
    total = (start - ts) / 1e3
    busy = np.maximum(t_call - ts, 0) / 1e3
    in_go = (t_ret - np.maximum(ts, t_call)) / 1e3
    in_py = (start - t_ret) / 1e3
    print("    total          ", summary(total))
    print("    waiting (busy) ", summary(busy), f"({np.mean(ts < t_call) * 100:.0f} % of events posted while busy)")
    print("    in Go          ", summary(in_go))
    print("    in Python      ", summary(in_py))
    # Where in Python: before the batch's first handler (the loop's start) or between one
    # handler and the next (a stall inside the batch).
    first = pos == 0
    step = np.diff(start) / 1e3
    inside = step[(pos[1:] > 0)]  # from the previous handler's start, same batch
    print("    in Python, first of its batch ", summary(in_py[first]))
    print("    in Python, handler to handler ", summary(inside))
    cut = np.percentile(total, 99)
    out = total >= cut
    gcs = np.array(rec["gc"], np.int64).reshape(-1, 3)
    hit = sum(1 for a, b in zip(ts[out], start[out]) if gcs.size and np.any((gcs[:, 1] >= a) & (gcs[:, 0] <= b)))
    print(f"    the {out.sum()} events >= p99 ({cut:.1f} us): {hit} with a GC collection inside; median waiting "
          f"{np.median(busy[out]):.1f}, in Go {np.median(in_go[out]):.1f}, in Python {np.median(in_py[out]):.1f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--seconds", type=float, default=1.0, help="per latency run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rate", type=float, default=0.0, help="A-scans/s (default: 20k CPU, 200k GPU, as bench_engine)")
    ap.add_argument("--variants", default="new:cost,new:adaptive,new:5ms,new:200us")
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
            if disp in ("instr", "instring"):
                analyse(rec, rec["lat"])
    print("median over repeats (p99 us, or cost us/event):",
          {k: round(float(np.median(v)), 2) for k, v in res.items()})


if __name__ == "__main__":
    main()
