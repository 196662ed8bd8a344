"""The dispatcher's two fixed costs, without an engine running (issue 10, docs/design.md
"Dispatch latency"):

- the round trip Python -> Go -> Python that fetches a batch: ``pyapi.Noop`` (one cgo call
  releasing the GIL: the floor), ``FastNextEvents`` (the dispatcher's call per batch, on the
  engine's registry id) and the engine's ``next_events`` by name (its path once the engine is
  closed), each a poll of a drained engine (timeout 0);
- the loop per event: ``Engine._run_batch`` over synthetic batches of a block's events (16
  segment events, then the block's update event with no handler), a no-op segment handler,
  through the C loop (``_fastcall.run_events``) and through the Python loop alone.

Prints the best of ``--repeats`` per figure (us per call, us per event)::

    PYTHONPATH=python .venv/bin/python bench/probe_dispatch.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests_py"))
from vortexgo import _core  # noqa: E402
from vortexgo.engine import dispatch as ve  # noqa: E402 - the dispatcher's module
from vortexgo.engine import _BATCH, _FIELDS, _SEGMENT, _UPDATE, Engine  # noqa: E402


def per_call(f: Callable[[], Any], calls: int, repeats: int) -> float:
    """The best of `repeats` of the time per call of f, in us (the least disturbed by the
    other jobs on a shared machine)."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            f()
        out.append((time.perf_counter_ns() - t0) / calls / 1e3)
    return min(out)


def round_trips(calls: int, repeats: int) -> None:
    import test_engine_dispatch as rig  # a small CPU engine

    eng, ep, proc = rig._rig(2)
    try:
        eng.prepare()
        eng.start()
        eng.wait()  # drained: every later poll returns 0 at once
        h = eng._h
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        ptr = buf.ctypes.data
        fast, eid = _core.fast_next_events, int(h.ID())
        noop = _core._ext.pyapi_Noop
        print(f"round trip, us per call (best of {repeats} x {calls}):")
        print(f"  pyapi.Noop (one cgo call, GIL released)  {per_call(lambda: noop(False), calls, repeats):6.3f}")
        print(f"  FastNextEvents (registry id)            {per_call(lambda: fast(eid, ptr, _BATCH, 0, 1), calls, repeats):6.3f}")
        print(f"  Engine.NextEvents (gopy's method)       "
              f"{per_call(lambda: h.NextEvents(ptr, _BATCH, 0), calls, repeats):6.3f}")
    finally:
        eng.close()
        proc.close()
        ep.close()


class _Endpoint:
    """The attributes the dispatcher reads from an endpoint."""

    def __init__(self) -> None:
        self.update_callback = self.volume_callback = self.scan_callback = self.event_callback = None
        self.aggregate_segment_callback = self.block_segment_callback = None
        self.segment_callback = lambda sample, scan_idx, volume_idx, bscan_idx: None


def loop_per_event(batches: int, repeats: int) -> None:
    segments = 16
    n = segments + 1
    buf = np.zeros((n, _FIELDS), np.int64)
    buf[:segments, 0] = _SEGMENT
    buf[:segments, 2] = np.arange(1, segments + 1) * 512  # sample
    buf[:segments, 5] = np.arange(segments)  # bscan_idx
    buf[segments, 0] = _UPDATE
    records = memoryview(buf).cast("B").cast("q")
    eng = Engine()
    eng._endpoints = [_Endpoint()]
    c_loop = ve._run_events
    print(f"loop, us per event ({segments} segment events and an update per batch, best of {repeats}):")
    try:
        for name, loop in (("C loop (run_events)", c_loop), ("Python loop", None)):
            if name.startswith("C") and loop is None:
                print(f"  {name:38s}   (no C extension)")
                continue
            ve._run_events = loop
            t = per_call(lambda: eng._run_batch(records, n), batches, repeats) / n
            print(f"  {name:38s} {t:6.3f}")
    finally:
        ve._run_events = c_loop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=100_000, help="round trips per repeat")
    ap.add_argument("--batches", type=int, default=20_000, help="batches per repeat")
    args = ap.parse_args()
    round_trips(args.calls, args.repeats)
    loop_per_event(args.batches, args.repeats)


if __name__ == "__main__":
    main()
