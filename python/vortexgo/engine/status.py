"""What the engine reports: its lifecycle events (:class:`EngineEvent`), the job callback's
arguments (:class:`SessionStatus`, :class:`JobTiming`), and the snapshots of
:meth:`Engine.status <vortexgo.engine.Engine.status>` and
:attr:`Engine.timings <vortexgo.engine.Engine.timings>`, read by name from Go's
ENGINE_STATUS and ENGINE_TIMINGS records (gosrc/pyapi/engine.go)."""

from __future__ import annotations

import datetime
import enum
import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

from .. import _layouts
from .._attrs import StrictAttributes

#: The stages of :attr:`Engine.timings <vortexgo.engine.Engine.timings>`, in order.
STAGES = ("acquire", "process", "format", "upload")


def read_status(h: Any) -> Any:
    """The engine's ENGINE_STATUS record (engine.Status: ``rec.done``, ``rec.active`` ...)."""
    return _layouts.ENGINE_STATUS.read(h.Status)


def read_timings(h: Any) -> dict[str, "StageTiming"]:
    """The engine's ENGINE_TIMINGS record as :class:`StageTiming` by stage."""
    rec = _layouts.ENGINE_TIMINGS.read(h.Timings)
    return {s: StageTiming(*(getattr(rec, f"{s}_{f.name}") for f in fields(StageTiming))) for s in STAGES}

class EngineEvent(StrictAttributes, enum.IntEnum):
    """vortex's ``Engine.Event``: the session's lifecycle, delivered to
    :attr:`Engine.event_callback` as ``event_callback(event, exception_or_None)``
    in vortex's order.

    A session that runs to its end gives Launch, Run, Start, Complete, Stop,
    Exit; one that is stopped (or whose acquisition ends) Launch, Run, Start,
    Shutdown, Complete, Stop, Exit; a failure adds Error (and Abort for a
    device stage, whose blocks in flight are dropped) before Shutdown.
    """

    #: the session is starting up (:meth:`Engine.start` was called)
    Launch = 0
    #: the acquisition and every IO have started
    Start = 1
    #: the session's stages are running
    Run = 2
    #: dispatching ended; the session waits for the blocks in flight
    Stop = 3
    #: the last block was dispatched (the scan completed, ``blocks_to_acquire``
    #: was reached, or a stop made the next block the last)
    Complete = 4
    #: the session is ending before it completed (a stop, an error, the acquisition's end)
    Shutdown = 5
    #: the session has ended; every endpoint callback has run
    Exit = 6
    #: a stage failed; the second argument is the exception
    Error = 7
    #: a device stage failed, and the blocks behind it are dropped
    Abort = 8


@dataclass(slots=True)  # read-write as vortex's, no stray attributes
class SessionStatus:
    """vortex's ``SessionStatus``, the second argument of :attr:`Engine.job_callback`."""

    allocated: int = 0   #: blocks in the pool (``blocks_to_allocate``)
    inflight: int = 0    #: blocks out of the pool
    dispatched: int = 0  #: jobs (blocks) the session began
    limit: int = 0       #: ``blocks_to_acquire`` (0: unbounded)

    @property
    def available(self) -> int:
        """Blocks in the pool."""
        return self.allocated - self.inflight

    @property
    def utilization(self) -> float:
        """The fraction of the pool in flight."""
        return self.inflight / self.allocated if self.allocated else 0.0

    @property
    def progress(self) -> float:
        """``dispatched / limit`` (0 for an unbounded session)."""
        return self.dispatched / self.limit if self.limit > 0 else 0.0


def _epoch() -> datetime.datetime:
    """vortex's default time point (the clock's epoch), as a local datetime."""
    return datetime.datetime.fromtimestamp(0)


@dataclass(slots=True)  # read-write as vortex's, no stray attributes
class JobTiming:
    """vortex's ``JobTiming``, the third argument of :attr:`Engine.job_callback`:
    when the block's stages happened (``datetime.datetime``, local time, as
    vortex's binding gives them). vortexgo's stages are asynchronous, so
    ``process`` and ``format`` are when they were *dispatched* to the device;
    ``recycle`` is when the device had finished with the block.
    Device times per stage are in :attr:`Engine.timings`. ``JobTiming()`` (vortex's) holds the
    epoch in every field."""

    create: datetime.datetime = field(default_factory=_epoch)    #: the Generate stage began the job
    service: datetime.datetime = field(default_factory=_epoch)   #: a free block was taken for it
    scan: datetime.datetime = field(default_factory=_epoch)      #: its waveforms and markers were generated
    acquire: datetime.datetime = field(default_factory=_epoch)   #: the acquisition filled it
    process: datetime.datetime = field(default_factory=_epoch)   #: its upload and processing were dispatched
    format: datetime.datetime = field(default_factory=_epoch)    #: its formatting was dispatched to every endpoint
    recycle: datetime.datetime = field(default_factory=_epoch)   #: the device finished it; it went back to the pool



@dataclass(slots=True)  # read-write as vortex's, no stray attributes
class EngineStatus:
    """A snapshot of the engine's counters (:meth:`Engine.status`): a value of its own, whose
    fields may be set (vortex's read-write fields) without touching the engine."""

    blocks_acquired: int = 0
    blocks_processed: int = 0
    blocks_formatted: int = 0
    blocks_dropped: int = 0
    volumes: int = 0
    callback_errors: int = 0
    events_dropped: int = 0
    in_flight: int = 0
    running: bool = False
    done: bool = False
    error: str = ""
    #: whether a session exists, started and not yet stopped (vortex's field, as the four below)
    active: bool = False
    #: jobs (blocks) the session began
    dispatched_blocks: int = 0
    #: blocks out of the pool (``in_flight``)
    inflight_blocks: int = 0
    #: ``dispatched_blocks / blocks_to_acquire`` (0 for an unbounded session)
    dispatch_completion: float = 0.0
    #: ``inflight_blocks / blocks_allocated``
    block_utilization: float = 0.0
    #: how many blocks the engine cycles, ``blocks_to_allocate`` or, on a GPU with blocks under
    #: 2 MiB of raw spectra, a deeper ring of 32 device blocks (the acquisition's pinned memory
    #: stays ``blocks_to_allocate`` blocks; ``VORTEXGO_DEVICE_BLOCKS`` sets the count)
    blocks_allocated: int = 0
    #: profiler marks not written because the writer fell behind
    profiler_dropped: int = 0
    #: frames a camera source received (:class:`~vortexgo.genicam.GenICamAcquisition`), incomplete ones too
    frames_received: int = 0
    #: frames a camera sent that never arrived (the host had no buffer queued, or the link lost them)
    frames_dropped: int = 0
    #: frames that arrived with data missing (never delivered as blocks)
    frames_incomplete: int = 0

    def copy(self) -> "EngineStatus":
        """An independent copy (vortex's ``copy()``)."""
        return dataclasses.replace(self)

    @property
    def state(self) -> str:
        """``"running"``, ``"done"``, ``"failed"`` or ``"idle"`` (of the current or last session)."""
        if self.error:
            return "failed"
        return "running" if self.running else ("done" if self.done else "idle")

    @property
    def reports_frames(self) -> bool:
        """Whether a camera source reports frames (:class:`~vortexgo.genicam.GenICamAcquisition`):
        the printed form then shows ``frames_received``, ``frames_dropped`` and ``frames_incomplete``."""
        return bool(self.frames_received or self.frames_dropped or self.frames_incomplete)

    def __repr__(self) -> str:
        lines = [f"EngineStatus({self.state})"]
        frames = self.reports_frames
        for f in fields(self):
            if f.name in ("running", "done", "inflight_blocks"):
                continue
            if f.name.startswith("frames_") and not frames:
                continue
            v = getattr(self, f.name)
            if f.name == "error" and not v:
                continue
            lines.append(f"  {f.name:<19} {v}{self._why(f.name)}")
        return "\n".join(lines)

    def _why(self, name: str) -> str:
        """A note after a value that reads as wrong without vortex's definition (issue 31:
        a finished run printed "done" beside ``active True`` and two zero ratios)."""
        if name == "active" and self.active and not self.running:
            return "  (the session stays until stop(), as in vortex)"
        if name == "dispatch_completion" and self.dispatched_blocks and not self.dispatch_completion:
            return "  (unbounded session: blocks_to_acquire is 0)"
        if name == "block_utilization" and not self.running and not self.inflight_blocks:
            return "  (no block in flight)"
        return ""

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{f.name}</td><td>{getattr(self, f.name)}</td></tr>" for f in fields(self)
                       if self.reports_frames or not f.name.startswith("frames_"))
        return f"<b>EngineStatus ({self.state})</b><table>{rows}</table>"


@dataclass(frozen=True)
class StageTiming:
    """Per-block time of one stage, in milliseconds (:attr:`Engine.timings`).

    ``mean``, ``min`` and ``max`` cover every block; ``p50`` and ``p99`` the
    most recent 1024.
    """

    count: int = 0
    mean: float = 0.0
    min: float = 0.0
    max: float = 0.0
    p50: float = 0.0
    p99: float = 0.0

    def __repr__(self) -> str:
        return (f"StageTiming(n={self.count}, mean={self.mean:.3f} ms, p50={self.p50:.3f}, "
                f"p99={self.p99:.3f}, max={self.max:.3f})")


