"""CUDA-event timing shared by the kernel probes (probe_kernels.py, probe_fft.py)."""

from __future__ import annotations

import statistics
from typing import Callable

import cupy as cp


def timed(fn: Callable[[], object], reps: int = 20) -> float:
    """The median time in seconds of ``fn``'s work on the current stream, between two CUDA events,
    over ``reps`` calls after one warm-up call."""
    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
    return statistics.median(ts)
