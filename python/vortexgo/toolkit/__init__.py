"""The async toolkit: keep a GPU's upload, compute and download engines busy at once.

- :class:`TripleBuffer`: three device buffers rotating Free -> Uploading ->
  Processing -> Downloading -> Free.
- :class:`AsyncCoordinator`: dedicated upload, compute and download streams;
  every queued op gets an id, dependencies become event waits between
  streams (never host waits), :meth:`~AsyncCoordinator.poll` reports
  completed ops without blocking. A compute op is a kernel (:class:`KernelOp`),
  a timed spin (:class:`SpinOp`) or a Python callable handed the compute
  stream to enqueue CuPy (or vortexgo) work on.
- :class:`PipelineStageManager`: named stages over multi-versioned buffers run
  in a set order per iteration; iterations overlap through events; an
  iteration cycle can be captured into a graph and replayed.
- :class:`ManagedGpuContext`: one device's coordinator plus factories.
- :func:`readback`/:class:`Readback`, :class:`BufferPool`,
  :func:`set_memory_budget`/:func:`memory_usage`, :func:`copy_peer`.

One module per concept: ``_triple``, ``_coordinator``, ``_stages``,
``_context``, ``_pool``, ``_readback``, ``_budget``, ``_peer``, ``_ops``;
``_lease`` holds the views that keep toolkit memory alive and ``_records``
the one record format of the Go calls.

The Go core never calls Python (DESIGN.md section 1): a callable compute op
runs in the calling thread between two Go calls that bracket it with events.
See docs/toolkit.md.
"""

from __future__ import annotations

from ._budget import (
    MemoryKindUsage,
    MemoryUsage,
    PurposeUsage,
    memory_usage,
    reset_memory_peak,
    set_memory_budget,
)
from ._context import ManagedGpuContext, StepReport
from ._coordinator import AsyncCoordinator, CompletedOp, ComputeCallable
from ._ops import DownloadOp, In, KernelArg, KernelOp, Op, Out, SpinOp, UploadOp, f32, f64, i32, i64, u32, u64
from ._peer import copy_peer, peer_copy_unavailable_reason
from ._pool import BufferPool, PoolStats
from ._readback import Readback, ReadbackHandle, ReadbackStats, readback
from ._stages import GpuPipelineStage, PipelineGraph, PipelineStageManager, PipelineStats, StageStats
from ._triple import TripleBuffer

__all__ = [
    "TripleBuffer", "AsyncCoordinator", "CompletedOp", "ComputeCallable",
    "PipelineStageManager", "GpuPipelineStage", "PipelineStats", "StageStats", "PipelineGraph",
    "ManagedGpuContext", "StepReport",
    "KernelOp", "SpinOp", "UploadOp", "DownloadOp", "KernelArg", "In", "Out",
    "i32", "u32", "i64", "u64", "f32", "f64",
    "readback", "Readback", "ReadbackHandle", "ReadbackStats",
    "BufferPool", "PoolStats",
    "set_memory_budget", "memory_usage", "reset_memory_peak", "MemoryUsage", "MemoryKindUsage", "PurposeUsage",
    "copy_peer", "peer_copy_unavailable_reason",
]
