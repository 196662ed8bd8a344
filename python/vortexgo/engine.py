"""The acquisition engine (vortex's ``vortex.engine``).

An :class:`Engine` runs an acquisition through processors, formatters and
endpoints, all asynchronously in Go: blocks come from a pool preallocated by
:meth:`Engine.prepare` (pinned host + device memory), stages run concurrently
with bounded queues and backpressure, and nothing is allocated on the hot
path.

Endpoints receive the formatted volumes. ``with endpoint.tensor as volume:``
takes the endpoint's lock and yields a zero-copy CuPy array (NumPy for host
and CPU endpoints); ``with endpoint.stream as stream:`` binds the stream the
formatting runs on. Endpoint callbacks (``update_callback``,
``segment_callback``, ``volume_callback``, ``scan_callback``) fire **once the
formatting is dispatched, not completed**, in order, on a Python-owned
dispatcher thread: chain GPU work on ``endpoint.stream``.

A callback that raises is logged (logger ``"vortexgo.engine"``) and counted
in :meth:`Engine.status`; the engine keeps running unless it was built with
``callback_error_policy="stop"``.
"""

from __future__ import annotations

import datetime
import enum
import gc
import json
import logging
import math
import os
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, fields
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _core
from . import _records
from ._attrs import NoCopy, StrictAttributes, ValueList
from ._core import api
from ._device import Device, DeviceLike, get_device
from ._errors import ClosedError, InUseError, LockError, VortexError, native, translate
from ._validate import INT64_MAX, check_bool, check_float, check_int, check_timeout
from .log import is_logger
from .acquire import _Acquisition
from .endpoint import (  # noqa: F401 - re-exported: vortex users import endpoints from vortex.engine
    AscanStackEndpoint, NullEndpoint, SpectraStackDeviceTensorEndpointUInt16, SpectraStackEndpoint,
    StackDeviceTensorEndpointFloat32, StackDeviceTensorEndpointInt8, StackDeviceTensorEndpointUInt16,
    StackHostTensorEndpointFloat32, StackHostTensorEndpointInt8, StackHostTensorEndpointUInt16,
    _Endpoint, _StorageEndpoint,
)
from .endpoint import (  # noqa: F401 - vortex users import every endpoint from vortex.engine
    AscanSpiralDeviceTensorEndpointFloat32, AscanSpiralDeviceTensorEndpointInt8, AscanSpiralDeviceTensorEndpointUInt16,
    BufferStrategy, PositionDeviceTensorEndpointFloat32, PositionDeviceTensorEndpointInt8,
    PositionDeviceTensorEndpointUInt16, RadialDeviceTensorEndpointFloat32, RadialDeviceTensorEndpointInt8,
    RadialDeviceTensorEndpointUInt16, SpectraPositionDeviceTensorEndpointUInt16, SpectraRadialDeviceTensorEndpointUInt16,
    SpectraSpiralDeviceTensorEndpointUInt16, SpectraStackHostTensorEndpointUInt16, SpectraStackTensorEndpointUInt16,
    SpiralDeviceTensorEndpointFloat32, SpiralDeviceTensorEndpointInt8, SpiralDeviceTensorEndpointUInt16,
    StackTensorEndpointFloat32, StackTensorEndpointInt8, StackTensorEndpointUInt16,
)
from .source import dispersion_phasor  # noqa: F401 - vortex exports it from vortex.engine
from .format import FormatPlanner
from .io import _IO
from .marker import Flags, ScanBoundary
from .process import _Processor
from .profiler import read_profiler_log
from .scan import ScanQueue, _Warp, warp as _warp
from .storage_endpoint import *  # noqa: F401,F403 - re-exported: vortex's storage endpoints live in vortex.engine
from .storage_endpoint import __all__ as _storage_endpoints

__all__ = [
    "EngineConfig", "Engine", "EngineStatus", "StageTiming", "EngineEvent", "ScanQueue",
    "JobTiming", "SessionStatus", "read_profiler_log", "divide", "cycle",
    "Polarity", "SampleStrobe", "SegmentStrobe", "VolumeStrobe", "ScanStrobe", "EventStrobe", "StrobeList",
    "StackDeviceTensorEndpointInt8", "StackDeviceTensorEndpointUInt16", "StackDeviceTensorEndpointFloat32",
    "StackHostTensorEndpointInt8", "StackHostTensorEndpointUInt16", "StackHostTensorEndpointFloat32",
    "SpectraStackDeviceTensorEndpointUInt16", "AscanStackEndpoint", "SpectraStackEndpoint", "NullEndpoint",
    "RadialDeviceTensorEndpointInt8", "RadialDeviceTensorEndpointUInt16", "RadialDeviceTensorEndpointFloat32",
    "SpiralDeviceTensorEndpointInt8", "SpiralDeviceTensorEndpointUInt16", "SpiralDeviceTensorEndpointFloat32",
    "AscanSpiralDeviceTensorEndpointInt8",
    "PositionDeviceTensorEndpointInt8", "PositionDeviceTensorEndpointUInt16", "PositionDeviceTensorEndpointFloat32",
    "SpectraRadialDeviceTensorEndpointUInt16", "SpectraSpiralDeviceTensorEndpointUInt16",
    "SpectraPositionDeviceTensorEndpointUInt16", "BufferStrategy",
] + _storage_endpoints

#: vortex 0.5.1's name for the spiral A-scan endpoint (``vortex.engine.AscanSpiralDeviceTensorEndpointInt8``).
AscanSpiralDeviceTensorEndpointInt8 = SpiralDeviceTensorEndpointInt8

log = logging.getLogger("vortexgo.engine")


def _close_engine(h: Any) -> None:
    """The engine's finaliser. It holds the gopy handle itself (weakref.finalize
    keeps its arguments alive), so an engine dying in a reference cycle (a
    callback that refers to its engine) or at interpreter exit never reaches
    a handle the collector finalised first, as a __del__ could."""
    try:
        h.Close()
    except Exception as exc:  # pragma: no cover
        warnings.warn(f"vortexgo: closing an engine failed: {exc}", ResourceWarning, stacklevel=1)

def _own(h: Any) -> None:
    """Make engine handle ``h`` the owner of its stages (gosrc/engine Engine.Own). A stage still
    owned by an engine that was dropped but not yet collected (a reference cycle through a
    callback) is released by its finaliser: one collection, then one more try, spares a
    notebook's rebuilt engine that refusal."""
    try:
        h.Do("own", "", h, 0, 0)
    except RuntimeError as exc:
        if not isinstance(translate(exc), InUseError):
            raise
        gc.collect()
        h.Do("own", "", h, 0, 0)


# The flat records Go hands over, declared once in gosrc/engine/layout.go and
# generated into _records: the event record (kinds; fields in order: kind,
# endpoint, sample, scan_idx, volume_idx, bscan_idx, timestamp_ns, then a
# job's stage times), then the engine's record (Engine.Record): the status,
# then the timings. Errors are lifecycle events (_ENGINE: EngineEvent.Error).
_UPDATE, _SEGMENT, _VOLUME, _SCAN = _records.UPDATE, _records.SEGMENT, _records.VOLUME, _records.SCAN
_DONE, _EVENT, _QUEUE, _QUEUE_EMPTY = _records.DONE, _records.EVENT, _records.QUEUE, _records.QUEUE_EMPTY
_ENGINE, _JOB = _records.ENGINE, _records.JOB
_FIELDS = _records.FIELDS
_STATUS_FIELDS = _records.STATUS_FIELDS
_RECORD_FIELDS = _STATUS_FIELDS + _records.TIMING_FIELDS
_BATCH = 256
_POLL_MS = 100  # the dispatcher's wait per Go call: bounds how long interpreter exit can wait for it
# The arguments of the engine's "next_events" operation, the dispatcher's path once the engine is closed.
_NEXT_EVENTS_ARGS = json.dumps({"TimeoutMs": _POLL_MS})
# The C loop over simple event records (_fastcall.c run_events), or None: every record then runs
# in _run_records. Tests swap it to compare both loops.
_run_events = _core.run_events if _core.EVENT_FIELDS == _FIELDS else None
# The dispatcher's C wait on the event ring (_fastcall.c ring_next), or None (Go's wait only).
_ring_next = _core.ring_next if _core.EVENT_FIELDS == _FIELDS else None


def _ring_address(ring: Any) -> int:
    """The address of an event ring (pyapi.Engine.EventRing: its record is the address)."""
    rec = np.zeros(1, np.float64)
    ring.Record(rec.ctypes.data, 1)
    return int(rec[0])


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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class JobTiming:
    """vortex's ``JobTiming``, the third argument of :attr:`Engine.job_callback`:
    when the block's stages happened (``datetime.datetime``, local time, as
    vortex's binding gives them). vortexgo's stages are asynchronous, so
    ``process`` and ``format`` are when they were *dispatched* to the device;
    ``recycle`` is when the device had finished with the block.
    Device times per stage are in :attr:`Engine.timings`."""

    create: datetime.datetime    #: the Generate stage began the job
    service: datetime.datetime   #: a free block was taken for it
    scan: datetime.datetime      #: its waveforms and markers were generated
    acquire: datetime.datetime   #: the acquisition filled it
    process: datetime.datetime   #: its upload and processing were dispatched
    format: datetime.datetime    #: its formatting was dispatched to every endpoint
    recycle: datetime.datetime   #: the device finished it; it went back to the pool


# --- strobes -------------------------------------------------------------------------


class Polarity(StrictAttributes, enum.IntEnum):
    """What an active strobe drives its line to (vortex's ``engine.Polarity``)."""

    Low = 0
    High = 1

    def __str__(self) -> str:
        return f"Polarity.{self.name}"


def _polarity(name: str, v: Any) -> Polarity:
    if isinstance(v, bool) or not isinstance(v, (int, Polarity)) or int(v) not in (0, 1):
        raise ValueError(f"{name}={v!r}, expected Polarity.Low or Polarity.High")
    return Polarity(int(v))


# Fields of a strobe: (name, check); gosrc/engine/strobe.go's StrobeLines = 32.
_STROBE_CHECKS = {
    "line": lambda n, v: check_int(n, v, 0, 31),
    "divisor": lambda n, v: check_int(n, v, 1, 1 << 40),
    "phase": lambda n, v: check_int(n, v, 0, 1 << 40),
    "duration": lambda n, v: check_int(n, v, 0, 1 << 40),
    "delay": lambda n, v: check_int(n, v, 0, 1 << 40),
    "polarity": _polarity,
    "flags": lambda n, v: _strobe_flags(n, v),
}


def _strobe_flags(name: str, v: Any) -> Flags:
    if not isinstance(v, Flags):
        raise TypeError(f"{name}={v!r}, expected a vortexgo.marker.Flags")
    return Flags(v.value)


class _Strobe:
    """A digital strobe the engine's Generate stage writes per sample for the IOs
    (bit ``line`` of each word of ``EngineConfig.strobes``' output, vortex's strobes)."""

    _kind = 0
    _fields: tuple = ()

    def __setattr__(self, k: str, v: Any) -> None:
        if k not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no field {k!r}, expected one of {self._fields}")
        object.__setattr__(self, k, _STROBE_CHECKS[k](f"{type(self).__name__}.{k}", v))

    def _record(self) -> dict:
        """gosrc/engine.Strobe's fields."""
        return {"Kind": self._kind, "Line": self.line, "Polarity": int(self.polarity), "Duration": self.duration,
                "Divisor": getattr(self, "divisor", 0), "Phase": getattr(self, "phase", 0),
                "Delay": getattr(self, "delay", 0), "Flags": getattr(self, "flags", Flags()).value}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._record() == self._record()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)}' for f in self._fields)})"


class SampleStrobe(_Strobe):
    """Active at the samples ``s`` with ``(s + phase) % divisor < duration`` (vortex's
    ``SampleStrobe(line=0, divisor=2, polarity=Polarity.High, duration=1, phase=0)``)."""

    _kind, _fields = 0, ("line", "divisor", "polarity", "duration", "phase")

    def __init__(self, line: int = 0, divisor: int = 2, polarity: Polarity = Polarity.High, duration: int = 1,
                 phase: int = 0) -> None:
        self.line, self.divisor, self.polarity, self.duration, self.phase = line, divisor, polarity, duration, phase


class _MarkerStrobe(_Strobe):
    _fields = ("line", "polarity", "duration", "delay", "flags")

    def __init__(self, line: int = 0, polarity: Polarity = Polarity.High, duration: int = 10, delay: int = 0,
                 flags: Optional[Flags] = None) -> None:
        self.line, self.polarity, self.duration, self.delay = line, polarity, duration, delay
        self.flags = Flags.all() if flags is None else flags


class SegmentStrobe(_MarkerStrobe):
    """Active ``duration`` samples from ``delay`` samples after each SegmentBoundary whose flags
    match ``flags`` (vortex's ``SegmentStrobe(line=0, polarity=High, duration=10, delay=0, flags=all)``)."""

    _kind = 1


class VolumeStrobe(_MarkerStrobe):
    """As :class:`SegmentStrobe`, at each VolumeBoundary."""

    _kind = 2


class ScanStrobe(_MarkerStrobe):
    """As :class:`SegmentStrobe`, at each ScanBoundary (the lead marker has no flags: none there)."""

    _kind = 3


class EventStrobe(_MarkerStrobe):
    """As :class:`SegmentStrobe`, at each Event marker."""

    _kind = 4


class StrobeList(ValueList):
    """A list of strobes (vortex's ``engine.StrobeList``)."""


def _default_strobes() -> StrobeList:
    """vortex's ``EngineConfig().strobes``."""
    return StrobeList([SampleStrobe(0, 2), SampleStrobe(1, 1000, Polarity.High, 10),
                       SampleStrobe(2, 1000, Polarity.Low, 10), SegmentStrobe(3), VolumeStrobe(4)])


# --- configuration -------------------------------------------------------------------


class EngineConfig(StrictAttributes):
    """Block geometry, pool sizes and the wiring acquisition -> processors -> formatters -> endpoints.

    Attributes:
        records_per_block: A-scans per block.
        blocks_to_allocate: blocks in the preallocated pool (how many can be in flight;
            vortex's default, 4).
        preload_count: blocks generated ahead for the IOs, and acquired blocks that may
            wait for processing (<= blocks_to_allocate; vortex's default, 2).
        blocks_to_acquire: stop after that many blocks; 0 runs until the scan ends.
        event_queue_size: events buffered for the dispatcher (0 = 4096).
        event_policy: ``"block"`` (default: a slow callback slows the engine, nothing is
            lost) or ``"drop"`` (events are dropped and counted instead).
        dispatch_spin: seconds the callback dispatcher polls for the next event before
            it parks; ``None`` (default) adapts: while events arrive at most 10 ms apart
            it spins through the gaps between them (up to one CPU core while an engine
            streams), otherwise 200 us, then it parks; 0 never spins. Waking a parked
            dispatcher costs tens of microseconds (the callback latency's tail). A value
            above 0 is a fixed spin, done in C on the engine's event ring with the GIL
            released and no call into Go: the lowest latency, at the cost of a core for
            up to that long after each batch of events.
        device_timings: on a CUDA device, time one block of the pool in four with
            timestamped events, for :attr:`Engine.timings` (False: no device timings
            there; a timestamped event between uploads costs the copy engine time, 1-3.5%
            of the throughput on an H100). The CPU backend times every block either way.
        galvo_output_channels: channels of the generated waveform (the
            scans' channels_per_sample; 2).
        galvo_input_channels: channels of measured positions (2); 0, as vortex allows, for a
            system without position feedback (one unused channel is then allocated per block).
        post_scan_records: records still acquired after the scan queue runs dry.
        lead_marker: the marker at sample 0 (vortex's default: a ScanBoundary without flags).
        strobes: the digital strobes written beside the waveform for the IOs (vortex's
            default: a sample clock on line 0, 10-sample pulses every 1000 samples on lines 1
            (high) and 2 (low), a pulse per segment on line 3 and per volume on line 4).
        lead_strobes: the strobe word output before the first generated sample by IOs with
            a smaller lead than the largest (0).
        scanner_warp: maps galvo to sample coordinates for the positions that travel with
            each block (``PositionFormatExecutor``'s sample target and actual); NoWarp.
    """

    def __init__(self, records_per_block: int = 1000, blocks_to_allocate: int = 4, preload_count: int = 2,
                 blocks_to_acquire: int = 0, *, event_queue_size: int = 0, event_policy: str = "block",
                 dispatch_spin: Optional[float] = None, device_timings: bool = False,
                 galvo_output_channels: int = 2, galvo_input_channels: int = 2,
                 post_scan_records: int = 0, lead_marker: Optional[ScanBoundary] = None,
                 strobes: Optional[Sequence[_Strobe]] = None, lead_strobes: int = 0,
                 scanner_warp: Optional[_Warp] = None) -> None:
        self.galvo_output_channels = galvo_output_channels
        self.galvo_input_channels = galvo_input_channels
        self.post_scan_records = post_scan_records
        self.lead_marker = ScanBoundary(0, 0, 0, Flags.none()) if lead_marker is None else lead_marker
        self.strobes = _default_strobes() if strobes is None else StrobeList(strobes)
        self.lead_strobes = lead_strobes
        self.scanner_warp = _warp.NoWarp() if scanner_warp is None else scanner_warp
        self._ios: list[tuple[_IO, dict]] = []
        self.records_per_block = records_per_block
        self.blocks_to_allocate = blocks_to_allocate
        self.preload_count = preload_count
        self.blocks_to_acquire = blocks_to_acquire
        self.event_queue_size = event_queue_size
        self.event_policy = event_policy
        self.dispatch_spin = dispatch_spin
        self.device_timings = device_timings
        # Per acquisition: its processor graph (vortex's nodes: a processor,
        # a divide or a cycle) and its master flag.
        self._acquisitions: list[tuple[_Acquisition, divide, bool]] = []
        self._processors: list[tuple[_Processor, list[FormatPlanner]]] = []
        self._formatters: list[tuple[FormatPlanner, list[_Endpoint]]] = []

    def add_acquisition(self, acquisition: _Acquisition, processors: Sequence[Any],
                        preload: bool = True, master: bool = True) -> None:
        """Feed ``acquisition``'s blocks to ``processors`` (vortex's): a list of processors,
        :func:`divide` and :func:`cycle` nodes, nested at will. A list divides: every
        processor gets every block; ``cycle([a, b])`` alternates blocks between ``a`` and
        ``b`` (ping-pong). Calling it again for the same acquisition adds to its graph.
        Several acquisitions each fill their own spectra of every block (the block holds
        the records all of them delivered). ``master`` acquisitions start after the others;
        ``preload`` is accepted for vortex compatibility (acquisitions have no buffers to
        post ahead here)."""
        if not isinstance(acquisition, _Acquisition):
            raise TypeError(f"add_acquisition: acquisition={acquisition!r}, expected a SimulatedAcquisition, "
                            "FileAcquisition or NullAcquisition")
        if isinstance(processors, _Processor) or not isinstance(processors, (list, tuple)):
            processors = [processors]
        graph = _graph("add_acquisition", "processors", processors)
        check_bool("add_acquisition: preload", preload)
        master = check_bool("add_acquisition: master", master)
        for i, (acq, g, m) in enumerate(self._acquisitions):
            if acq is acquisition:
                self._acquisitions[i] = (acq, divide(list(g) + list(graph)), m)
                return
        self._acquisitions.append((acquisition, graph, master))

    def add_io(self, io: _IO, preload: bool = True, master: bool = False, lead_samples: int = 0) -> None:
        """Send the generated waveforms and strobes to ``io`` (vortex's ``add_io(io, preload=True,
        master=False, lead_samples=0)``): ``lead_samples`` samples ahead of the acquisition;
        ``preload``: it takes the first ``preload_count`` blocks before it starts; ``master``
        IOs start after the others."""
        if not isinstance(io, _IO):
            raise TypeError(f"add_io: io={io!r}, expected a NullIO or SimulatedIO")
        self._ios.append((io, {"LeadSamples": check_int("add_io: lead_samples", lead_samples, 0, _MAX_RECORDS_PER_BLOCK),
                               "Preload": bool(preload), "Master": bool(master)}))

    def add_processor(self, processor: _Processor, formatters: Sequence[FormatPlanner]) -> None:
        """Route ``processor``'s A-scans to ``formatters`` (FormatPlanner)."""
        if not isinstance(processor, _Processor):
            raise TypeError(f"add_processor: processor={processor!r}, expected a CUDAProcessor or CPUProcessor")
        fmts = _as_list("add_processor", "formatters", formatters, FormatPlanner, "FormatPlanner")
        self._processors.append((processor, fmts))

    def add_formatter(self, formatter: FormatPlanner, endpoints: Sequence[_Endpoint]) -> None:
        """Route ``formatter``'s (a FormatPlanner's) plans to ``endpoints``."""
        if not isinstance(formatter, FormatPlanner):
            raise TypeError(f"add_formatter: formatter={formatter!r}, expected a FormatPlanner")
        eps = _as_list("add_formatter", "endpoints", endpoints, _Endpoint, "endpoint")
        self._formatters.append((formatter, eps))

    @property
    def endpoints(self) -> list[_Endpoint]:
        """Every endpoint, in wiring order (the engine's endpoint ids)."""
        return [ep for _, eps in self._formatters for ep in eps]

    @property
    def processors(self) -> list[_Processor]:
        """Every processor fed by an acquisition (each once, in graph order)."""
        return [p for _, g, _ in self._acquisitions for p in _graph_processors(g)]

    def _check_fields(self) -> None:
        o = "EngineConfig"
        # The upper bounds are the Go core's (gosrc/engine/errors.go): sizes
        # are refused before anything is allocated.
        for name, lo, hi in (("records_per_block", 1, _MAX_RECORDS_PER_BLOCK), ("blocks_to_allocate", 1, _MAX_BLOCKS),
                             ("preload_count", 0, INT64_MAX), ("blocks_to_acquire", 0, INT64_MAX),
                             ("event_queue_size", 0, _MAX_EVENT_QUEUE)):
            setattr(self, name, check_int(f"{o}.{name}", getattr(self, name), lo, hi))
        if self.preload_count > self.blocks_to_allocate:
            raise ValueError(f"{o}.preload_count={self.preload_count}, expected <= blocks_to_allocate "
                             f"({self.blocks_to_allocate})")
        if self.dispatch_spin is not None:
            check_float(f"{o}.dispatch_spin", self.dispatch_spin, 0.0, 1.0)
        if not isinstance(self.device_timings, (bool, np.bool_)):
            raise TypeError(f"{o}.device_timings={self.device_timings!r}, expected True or False")
        if self.event_policy not in ("block", "drop"):
            raise ValueError(f"{o}.event_policy={self.event_policy!r}, expected 'block' or 'drop'")
        if not self._acquisitions:
            raise ValueError(f"{o}.add_acquisition: no acquisition, expected at least 1")
        for acq, _, _ in self._acquisitions:
            acq._handle()
        for p in self.processors:
            p._handle()
            if p.config.ascans_per_block < self.records_per_block:
                raise ValueError(f"ProcessorConfig.ascans_per_block={p.config.ascans_per_block}, expected >= "
                                 f"EngineConfig.records_per_block ({self.records_per_block})")
        for f, _ in self._formatters:
            f._handle()
        self.galvo_output_channels = check_int(f"{o}.galvo_output_channels", self.galvo_output_channels, 1, 64)
        self.galvo_input_channels = check_int(f"{o}.galvo_input_channels", self.galvo_input_channels, 0, 64)
        self.post_scan_records = check_int(f"{o}.post_scan_records", self.post_scan_records, 0)
        if self.lead_marker is not None and not isinstance(self.lead_marker, ScanBoundary):
            raise TypeError(f"{o}.lead_marker={self.lead_marker!r}, expected a ScanBoundary")
        if self.lead_marker is not None and self.lead_marker.sample != 0:
            raise ValueError(f"{o}.lead_marker.sample={self.lead_marker.sample}, expected 0 (it leads the first block)")
        try:
            strobes = list(self.strobes)
        except TypeError:
            raise TypeError(f"{o}.strobes={self.strobes!r}, expected a list of strobes") from None
        for i, st in enumerate(strobes):
            if not isinstance(st, _Strobe):
                raise TypeError(f"{o}.strobes[{i}]={st!r}, expected a SampleStrobe, SegmentStrobe, VolumeStrobe, "
                                "ScanStrobe or EventStrobe")
        self.lead_strobes = check_int(f"{o}.lead_strobes", self.lead_strobes, 0, 2**32 - 1)
        if not isinstance(self.scanner_warp, _Warp):
            raise TypeError(f"{o}.scanner_warp={self.scanner_warp!r}, expected a vortexgo.scan.warp "
                            "(NoWarp, Angular, Telecentric)")

    def _native(self, scan_queue: Optional[ScanQueue] = None) -> Any:
        slots = min((p.config.slots for p in self.processors), default=0)
        # engine.Config's fields as one record (DispatchSpin in ns: 0 would
        # mean the default, so "never spin" is -1).
        h = api.NewEngineConfig(json.dumps({
            "RecordsPerBlock": int(self.records_per_block), "BlocksToAllocate": int(self.blocks_to_allocate),
            "PreloadCount": int(self.preload_count), "BlocksToAcquire": int(self.blocks_to_acquire),
            "Slots": int(slots), "EventQueueSize": int(self.event_queue_size),
            "EventPolicy": int(self.event_policy == "drop"), "DispatchSpin": 0 if self.dispatch_spin is None else (round(self.dispatch_spin * 1e9) or -1),
            "DeviceTimings": bool(self.device_timings),
            "GalvoOutputChannels": int(self.galvo_output_channels), "GalvoInputChannels": max(1, int(self.galvo_input_channels)),
            "PostScanRecords": int(self.post_scan_records), "LeadMarker": _marker_record(self.lead_marker),
            "Strobes": [st._record() for st in self.strobes], "LeadStrobes": int(self.lead_strobes),
            "ScannerWarp": self.scanner_warp._go(), "IOWiring": [w for _, w in self._ios],
            "AcquisitionMasters": [m for _, _, m in self._acquisitions],
            "Rotations": [_rotation(g) for _, g, _ in self._acquisitions]}))
        for io, _ in self._ios:
            h.Link(_LINK_IO, io._handle())
        if scan_queue is not None:
            h.Link(_LINK_SCAN_QUEUE, scan_queue._h)
        # The wiring, one engine.Link at a time.
        for acq, g, _ in self._acquisitions:
            h.Link(_LINK_ACQUISITION, acq._handle())
            for p in _graph_processors(g):
                h.Link(_LINK_ACQUISITION_PROCESSOR, p._handle())
        for p, fmts in self._processors:
            h.Link(_LINK_PROCESSOR, p._handle())
            for f in fmts:
                h.Link(_LINK_PROCESSOR_FORMATTER, f._handle())
        for f, eps in self._formatters:
            h.Link(_LINK_FORMATTER, f._handle())
            for e in eps:
                h.Link(_LINK_FORMATTER_ENDPOINT, e._h)
        return h

    @native
    def validate(self) -> None:
        """Check the fields and the wiring; raise ValueError (or TypeError) naming the first bad one."""
        self._check_fields()
        self._native().Validate()

    def __repr__(self) -> str:
        n_ep = len(self.endpoints)
        return (f"<EngineConfig {self.records_per_block} records/block, {self.blocks_to_allocate} blocks "
                f"(preload {self.preload_count}), acquire {self.blocks_to_acquire or 'until the scan ends'}; "
                f"{len(self.processors)} processor(s), {len(self._formatters)} formatter(s), {n_ep} endpoint(s)>")


# engine.Link codes (gosrc/engine/config.go).
(_LINK_ACQUISITION, _LINK_ACQUISITION_PROCESSOR, _LINK_PROCESSOR, _LINK_PROCESSOR_FORMATTER, _LINK_FORMATTER,
 _LINK_FORMATTER_ENDPOINT, _LINK_IO, _LINK_SCAN_QUEUE) = range(8)


def _marker_record(m: Optional[ScanBoundary]) -> Optional[dict]:
    """A ScanBoundary as gosrc/marker.Marker's fields (Kind 1: ScanBoundary)."""
    if m is None:
        return None
    return {"Kind": 1, "Sample": int(m.sample), "Sequence": int(m.sequence), "CountHint": int(m.volume_count_hint),
            "Flags": int(getattr(m.flags, "value", m.flags))}

# The Go core's bounds (gosrc/engine/errors.go).
_MAX_RECORDS_PER_BLOCK = 1 << 24
_MAX_BLOCKS = 1 << 16
_MAX_EVENT_QUEUE = 1 << 24


class divide(ValueList):
    """vortex's ``divide(nodes)``: every processor (or node) listed gets every block,
    processing in parallel. In Python it is a list, as in vortex."""


class cycle(ValueList):
    """vortex's ``cycle(nodes)``: consecutive blocks go to the nodes in turn
    (``cycle([a, b])``: ping-pong between processors ``a`` and ``b``, e.g. on two
    streams or GPUs). A formatter fed by a cycle's processors must be added under
    each of them (``add_processor(a, [f]); add_processor(b, [f])``), so that its
    planner sees every block."""


def _graph(op: str, name: str, node: Any) -> Any:
    """Check a processor graph: processors, divide (any list) and cycle nodes."""
    if isinstance(node, _Processor):
        return node
    if isinstance(node, cycle):
        kids = [_graph(op, f"{name}[{i}]", n) for i, n in enumerate(node)]
        if not kids:
            raise ValueError(f"{op}: {name}=cycle([]), expected at least one processor")
        return cycle(kids)
    if isinstance(node, (list, tuple)):
        kids = [_graph(op, f"{name}[{i}]", n) for i, n in enumerate(node)]
        if not kids:
            raise ValueError(f"{op}: {name}=[], expected at least one processor")
        return divide(kids)
    raise TypeError(f"{op}: {name}={node!r}, expected a CUDAProcessor, CPUProcessor, NullProcessor, "
                    "CopyProcessor, or a list / cycle([...]) of them")


def _graph_processors(node: Any) -> list:
    """The graph's processors, each once, in order."""
    out: list = []
    stack = [node]
    while stack:
        n = stack.pop(0)
        if isinstance(n, list):
            stack[:0] = list(n)
        elif all(p is not n for p in out):
            out.append(n)
    return out


def _expand(node: Any) -> list[list[Any]]:
    """vortex's expansion of a processor graph into the rotation: the processor
    sets that process consecutive blocks in turn (vortex/engine/engine.hpp)."""
    if isinstance(node, _Processor):
        return [[node]]
    subs = [_expand(n) for n in node]
    if isinstance(node, cycle):
        # Rows of equal width (repeat each row's processors), stacked.
        width = math.lcm(*(len(sp[0]) for sp in subs))
        return [row * (width // len(row)) for sp in subs for row in sp]
    # divide: columns of equal length (repeat each subplan's rows), side by side.
    rows = math.lcm(*(len(sp) for sp in subs))
    long = [sp * (rows // len(sp)) for sp in subs]
    return [[p for sp in long for p in sp[i]] for i in range(rows)]


def _rotation(graph: Any) -> list[list[int]]:
    """The graph's rotation as indices into :func:`_graph_processors` (Config.Rotations)."""
    procs = _graph_processors(graph)
    index = {id(p): i for i, p in enumerate(procs)}
    sets = _expand(graph)
    if len(sets) > _MAX_BLOCKS:
        raise ValueError(f"add_acquisition: the processor graph expands to {len(sets)} sets, expected at most "
                         f"{_MAX_BLOCKS}")
    return [[index[id(p)] for p in row] for row in sets]


def _as_list(op: str, name: str, items: Any, cls: type, what: str) -> list:
    if isinstance(items, cls):
        items = [items]
    try:
        out = list(items)
    except TypeError:
        raise TypeError(f"{op}: {name}={items!r}, expected a list of {what}") from None
    for i, x in enumerate(out):
        if not isinstance(x, cls):
            raise TypeError(f"{op}: {name}[{i}]={x!r}, expected a {what}")
    return out


# --- status -------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineStatus:
    """A snapshot of the engine's counters (:meth:`Engine.status`)."""

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
    #: ``inflight_blocks / blocks_to_allocate``
    block_utilization: float = 0.0
    #: profiler marks not written because the writer fell behind
    profiler_dropped: int = 0

    @property
    def state(self) -> str:
        """``"running"``, ``"done"``, ``"failed"`` or ``"idle"`` (of the current or last session)."""
        if self.error:
            return "failed"
        return "running" if self.running else ("done" if self.done else "idle")

    def __repr__(self) -> str:
        lines = [f"EngineStatus({self.state})"]
        for f in fields(self):
            if f.name in ("running", "done", "inflight_blocks"):
                continue
            v = getattr(self, f.name)
            if f.name == "error" and not v:
                continue
            lines.append(f"  {f.name:<17} {v}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{f.name}</td><td>{getattr(self, f.name)}</td></tr>" for f in fields(self))
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


# --- the engine ------------------------------------------------------------------------


class Engine(NoCopy, StrictAttributes):
    """Runs an :class:`EngineConfig`'s pipeline, in sessions, as vortex's engine.

    ``Engine(config)`` or vortex's ``Engine(logger); engine.initialize(config)``;
    then :meth:`prepare` once (allocates everything, validates: ValueError
    naming the field), and any number of sessions: :meth:`start`,
    :meth:`wait` (interruptible: Ctrl-C stops the engine cleanly and
    re-raises) or :meth:`wait_for`, and :meth:`stop`, which every
    :meth:`start` needs before the next (as in vortex, ``start()`` while a
    session exists does nothing). A session's first error is raised once, by
    whichever of ``wait``, ``wait_for`` or ``stop`` sees it first.

    Between sessions, as in vortex: a session stopped mid-scan leaves its
    scan active, so ``scan_queue.reset()`` (or ``clear()``) before the next;
    format planners keep their state, so ``formatter.reset()`` too;
    endpoints, storage and processors keep theirs (storage appends).

    Args:
        config: the configuration.
        device: defaults to the processors' device.
        callback_error_policy: ``"continue"`` (default: a raising callback is
            logged and counted) or ``"stop"`` (also stops the engine).
    """

    def __init__(self, config: Optional[EngineConfig] = None, device: DeviceLike = None, *,
                 callback_error_policy: str = "continue", logger: Optional[logging.Logger] = None) -> None:
        self._h = None
        if is_logger(config):
            config, logger = None, config
        if callback_error_policy not in ("continue", "stop"):
            raise ValueError(f"callback_error_policy={callback_error_policy!r}, expected 'continue' or 'stop'")
        self.callback_error_policy = callback_error_policy
        self.logger = logger or log
        #: ``event_callback(event, exception_or_None)``: the session's lifecycle
        #: (:class:`EngineEvent`, also ``Engine.Event``), on the dispatcher thread.
        self.event_callback: Optional[Callable[[EngineEvent, Optional[BaseException]], Any]] = None
        #: ``job_callback(id, SessionStatus, JobTiming)`` for every block as it
        #: leaves the pipeline (vortex's). Set it before :meth:`start`: the
        #: engine posts job events only for sessions started with one set.
        self.job_callback: Optional[Callable[[int, SessionStatus, JobTiming], Any]] = None
        #: The file the next sessions write vortex's profiler log to, or None for the
        #: ``VORTEX_PROFILER_LOG`` environment variable's (no log if it is unset);
        #: read it with :func:`read_profiler_log`.
        self.profiler_log: Optional[str] = None
        self._session = False  # a session exists: start() was called, stop() not yet
        self._error_raised = False  # the session's error was raised by wait/wait_for/stop
        self._wall0 = 0  # the session's start on time.time_ns's clock (JobTiming)
        self._device_spec = device
        self.device: Optional[Device] = None
        self.config: Optional[EngineConfig] = None
        self._endpoints: list[_Endpoint] = []
        self._dispatcher: Optional[threading.Thread] = None
        self._callback_errors = 0
        self._last_callback_error: Optional[BaseException] = None
        self._finalizer: Optional[weakref.finalize] = None
        self._latency: Optional[list[int]] = None  # off unless record_callback_latency() was called
        self._latency_cap = 0
        self._latency_base = 0  # StartMonotonicNs of the session the dispatcher records
        self._started = False
        self._prepared = False
        self._closed = False
        self._ring_spin_ns = 0  # dispatch_spin in ns when fixed (> 0): the C spin on the event ring
        self._fatal: Optional[BaseException] = None  # a handler's BaseException, re-raised by wait()
        self._scan_queue = ScanQueue()
        if config is not None:
            self.initialize(config)

    @property
    def scan_queue(self) -> ScanQueue:
        """vortex's ``engine.scan_queue``: the Generate stage plays its scans into every block.

        Assigning another :class:`ScanQueue` takes effect at the next :meth:`start` (vortex's
        session takes the queue when it starts). While a session runs it is refused with
        :class:`~vortexgo.InUseError`: that session plays the current queue to its end; change
        what it plays with ``scan_queue.interrupt(scan)``, ``append``, ``clear()`` or ``reset()``.
        """
        return self._scan_queue

    @scan_queue.setter
    @native
    def scan_queue(self, queue: ScanQueue) -> None:
        if not isinstance(queue, ScanQueue):
            raise TypeError(f"scan_queue={queue!r:.60}, expected a vortexgo.scan.ScanQueue")
        h = getattr(self, "_h", None)
        if h is not None and not self._closed:
            h.Do("scan_queue", "", queue._h, 0, 0)  # InUseError while a session runs
        self._scan_queue = queue

    def initialize(self, config: EngineConfig) -> None:
        """Adopt ``config``. It is checked, and its wiring fixed, by :meth:`prepare`."""
        if not isinstance(config, EngineConfig):
            raise TypeError(f"config={config!r}, expected an EngineConfig")
        if self.config is not None:
            raise VortexError("the engine is already initialized, expected a new Engine")
        self.config = config

    def _pick_device(self, config: EngineConfig) -> Device:
        """The engine's device: ``device``, else the first processor's. Processors on other
        GPUs are allowed (vortex's ``cycle([a, b])`` over two GPUs): their blocks are
        uploaded to their GPU and their outputs copied back to the engine's, where the
        endpoints format them."""
        procs = config.processors
        if self._device_spec is not None:
            dev = get_device(self._device_spec)
        elif procs:
            dev = procs[0].device
        else:
            dev = get_device(None)
        for p in procs:
            if p.device != dev and not (p.device.is_cuda and dev.is_cuda):
                raise ValueError(f"{type(p).__name__} on {p.device.alias}, expected the engine's device {dev.alias} "
                                 "(processors on other devices must be CUDA processors of a CUDA engine)")
        return dev

    def _handle(self):
        if self._closed:
            raise ClosedError("the engine is closed")
        if self._h is None:
            raise VortexError("the engine is not prepared, expected prepare() first")
        return self._h

    # --- lifecycle --------------------------------------------------------------

    @native
    def prepare(self) -> None:
        """Validate the configuration against the stages and allocate everything the run needs.

        Raises ValueError naming the offending field (shapes, dtypes, block
        sizes, storage not open or of the wrong shape) before anything starts.
        """
        if self._closed:
            raise ClosedError("the engine is closed")
        cfg = self.config
        if cfg is None:
            raise ValueError("the engine has no configuration, expected Engine(config) or initialize(config)")
        if self._h is not None:
            raise VortexError("engine.prepare: already prepared, expected one prepare() per engine")
        cfg._check_fields()
        dev = self._pick_device(cfg)
        self._endpoints = cfg.endpoints
        for ep in self._endpoints:
            t = ep._tensor
            if t is not None and t._stack():
                raise LockError(f"preparing {type(ep).__name__} while this thread holds its tensor's lock")
            if ep._closed:
                raise ClosedError(f"{type(ep).__name__} is closed, expected an open endpoint")
        h = api.NewEngine(dev._h, cfg._native(self.scan_queue))
        try:
            # Own the stages before anything touches them: a stage serves one engine at a
            # time, and acq.prepare() below would disturb another engine's run (DESIGN.md 9).
            _own(h)
            for acq, graph, _ in cfg._acquisitions:
                acq.prepare()
                spr = acq.samples_per_record
                for p in _graph_processors(graph):
                    if p.config.samples_per_record != spr:
                        raise ValueError(f"ProcessorConfig.samples_per_record={p.config.samples_per_record}, expected "
                                         f"{spr} (its acquisition's samples_per_record)")
            self._check_storage_open()
            # A fixed dispatch_spin: the dispatcher spins on the event ring in C (_dispatch).
            self._ring_spin_ns = round(cfg.dispatch_spin * 1e9) if cfg.dispatch_spin else 0
            h.Prepare()
        except BaseException:
            h.Close()  # gives back what it owned
            raise
        self._h, self.device = h, dev
        self._finalizer = weakref.finalize(self, _close_engine, h)
        for ep in self._endpoints:
            ep._device = self.device
            ep._tensor, ep._stream = None, None
        self._prepared = True

    def _check_storage_open(self) -> None:
        cfg = self.config
        assert cfg is not None
        routed = {id(f) for _, fs in cfg._processors for f in fs}
        for f, eps in cfg._formatters:
            if id(f) not in routed:
                continue  # the Go wiring check names it
            for ep in eps:
                if isinstance(ep, _StorageEndpoint) and not ep.storage.is_open:
                    raise ValueError(f"{type(ep).__name__}: the {type(ep.storage).__name__} is not open, expected "
                                     "storage.open(SimpleStackConfig(...)) before prepare()")

    @native
    def start(self) -> None:
        """Start a session: the pipeline and the callback dispatcher thread.

        As vortex's ``start()``, it does nothing while a session exists (one
        that is running, or that ended without :meth:`stop`): call ``stop()``
        first to start another.
        """
        h = self._handle()
        if not self._prepared:
            raise VortexError("engine.start: not prepared, expected prepare() first")
        if self._session:
            self.logger.warning("vortexgo: engine.start() while a session exists does nothing (as in vortex); "
                                "call engine.stop() first to start another session")
            return
        if self._in_dispatcher():
            raise VortexError("engine.start() from a callback; start the next session from your own thread")
        # The previous session's dispatcher exited with its Exit event.
        self._join_dispatcher(None)
        # An endpoint with callbacks gets them run before the engine writes
        # the next volume into it: a volume_callback then sees the volume it
        # is told about (vortex runs callbacks inline, with the same effect).
        # Events go out only for the callbacks set now, so the dispatcher never
        # wakes for an event it would discard (set callbacks before start()).
        for i, ep in enumerate(self._endpoints):
            kinds = {kind for kind, name in _CB_NAMES.items() if getattr(ep, name) is not None}
            # Segments are gathered; volume events and the block's update (its last) deliver them.
            if ep.aggregate_segment_callback is not None:
                kinds |= {_SEGMENT, _VOLUME, _UPDATE}
            if ep.block_segment_callback is not None:
                kinds |= {_SEGMENT, _UPDATE}
            ep._agg_volume, ep._agg_block = [], []
            h.SetCallbacks(i, sum(1 << kind for kind in kinds))
        h.Do("job_events", json.dumps({"On": self.job_callback is not None}), h, 0, 0)
        # Read here, not in Go: the Go runtime's copy of the environment is
        # taken when the library loads, before a script sets the variable.
        prof = self.profiler_log if self.profiler_log is not None else os.environ.get("VORTEX_PROFILER_LOG", "")
        h.Do("profiler_log", json.dumps({"Path": os.fspath(prof)}), h, 0, 0)
        self._fatal = None
        self._callback_errors, self._last_callback_error = 0, None
        h.Start()
        self._wall0 = time.time_ns() - (time.monotonic_ns() - int(h.StartMonotonicNs()))
        self._started, self._session, self._error_raised = True, True, False
        # With a fixed dispatch_spin the dispatcher takes events from the session's ring in C
        # (_fastcall.c ring_next); the ring object keeps the ring's memory mapped while it reads.
        ring = h.EventRing() if self._ring_spin_ns and _ring_next is not None else None
        # The thread holds the engine weakly (_dispatch_loop): an engine dropped while it runs is
        # collected, and its finaliser stops it, as vortex's destructor does.
        self._dispatcher = threading.Thread(target=_dispatch_loop, args=(weakref.ref(self), ring),
                                            name="vortexgo-engine-dispatcher", daemon=True)
        self._dispatcher.start()

    def _in_dispatcher(self) -> bool:
        return self._dispatcher is not None and threading.current_thread() is self._dispatcher

    @native
    def stop(self) -> None:
        """End the session: stop the acquisition and wait until every acquired block is
        formatted, every completed volume stored (a stop mid-volume loses no completed
        volume) and every callback run. Raises the session's error unless
        :meth:`wait` or :meth:`wait_for` already did.

        From a callback it only requests the stop (waiting there would wait for itself).
        With no session it is a no-op.
        """
        if self._h is None and not self._closed:
            return  # never prepared: nothing runs
        h = self._handle()
        if self._in_dispatcher():
            h.RequestStop()
            return
        if not self._session:
            return
        self._check_no_lock_held("stop")
        try:
            h.Stop()
        except Exception:
            if not self._error_raised:
                self._end_session()
                raise
        self._end_session()
        self._raise_run_error()

    def _end_session(self) -> None:
        self._join_dispatcher(None)
        self._session = False

    def shutdown(self, interrupt: bool = False) -> None:
        """Ask the session to end without waiting (vortex's ``shutdown``); :meth:`stop`
        is still needed before the next :meth:`start`. With ``interrupt``, the blocks
        acquired but not yet processed are dropped (counted in ``blocks_dropped``);
        blocks already processed are still formatted and every completed volume is
        stored. Safe anywhere, including callbacks."""
        interrupt = check_bool("interrupt", interrupt)
        if self._h is not None and not self._closed:
            self._h.Do("shutdown", json.dumps({"Interrupt": interrupt}), self._h, 0, 0)

    def request_stop(self) -> None:
        """Ask the engine to stop without waiting (safe anywhere, including callbacks):
        ``shutdown(interrupt=False)``."""
        if self._h is not None and not self._closed:
            self._h.RequestStop()

    def _join_dispatcher(self, timeout: Optional[float]) -> bool:
        d = self._dispatcher
        if d is None or d is threading.current_thread():
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while d.is_alive():
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return False
            d.join(left)
        return True

    def wait(self) -> None:
        """Block until the session ends and every callback has run; raise the session's
        error if a stage failed (once: a later wait, wait_for or stop does not raise it
        again). With no session it returns at once, as vortex's.

        Interruptible: a KeyboardInterrupt (Ctrl-C) stops the engine cleanly
        (every completed volume delivered and stored) and is re-raised.
        """
        h = self._handle()
        if not self._session:
            return
        if self._in_dispatcher():
            raise VortexError("engine.wait() from a callback would wait for itself; use request_stop() there")
        self._check_no_lock_held("wait")
        try:
            # Short slices in Go (GIL released): the main thread returns to
            # the interpreter between them, so Ctrl-C is delivered.
            while not h.WaitFor(50):
                pass
            self._join_dispatcher(None)
        except KeyboardInterrupt:
            self._stop_quietly()
            raise
        self._raise_run_error()

    def _check_no_lock_held(self, op: str) -> None:
        """Waiting for the run while this thread holds an endpoint's tensor lock
        would wait forever: the engine waits for that lock to format the next block."""
        for ep in self._endpoints:
            t = ep._tensor
            if t is not None and t._stack():
                raise LockError(f"engine.{op}() while this thread holds {type(ep).__name__}'s tensor lock would "
                                "deadlock (the engine waits for that lock); leave the `with endpoint.tensor` "
                                "block first")

    def _stop_quietly(self) -> None:
        try:
            self._h.Stop()
        except RuntimeError:
            pass  # the run's own error stays available through status()
        self._join_dispatcher(5.0)

    def wait_for(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True when the run has ended and its callbacks have run."""
        h = self._handle()
        timeout = check_timeout("timeout", timeout)
        if timeout is None:
            self.wait()
            return True
        if not self._session:
            return True
        if not self._in_dispatcher():
            self._check_no_lock_held("wait_for")
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if h.WaitFor(int(max(0.0, min(left, 0.05)) * 1000)):
                break
            if left <= 0:
                return False
        if self._in_dispatcher():
            return True
        if not self._join_dispatcher(max(0.0, deadline - time.monotonic())):
            return False
        self._raise_run_error()
        return True

    def _raise_run_error(self) -> None:
        """Raise the session's error once (vortex hands its exception out once)."""
        fatal, self._fatal = self._fatal, None
        if fatal is not None:
            # A handler raised SystemExit, KeyboardInterrupt or another
            # BaseException: the engine was stopped; it surfaces here.
            self._error_raised = True
            raise fatal
        if self._error_raised:
            return
        err = self._h.Err()
        if err:
            self._error_raised = True
            raise translate(RuntimeError(err))

    @property
    def done(self) -> bool:
        """Whether no session runs (vortex's ``done``): True before the first
        :meth:`start`, once the session has ended, and after :meth:`stop`."""
        if self._h is None or not self._session:
            return True
        return bool(self._record(self._h)[_records.S_DONE])

    @staticmethod
    def _record(h: Any) -> list[float]:
        rec = np.zeros(_RECORD_FIELDS, np.float64)
        h.Record(rec.ctypes.data, _RECORD_FIELDS)
        return rec.tolist()

    @property
    def endpoints(self) -> list[_Endpoint]:
        """The endpoints, in wiring order."""
        return list(self._endpoints)

    def status(self) -> EngineStatus:
        """A snapshot of the current (or last) session's counters: blocks acquired /
        processed / formatted / dropped, volumes, callback errors, events dropped, blocks
        in flight, and vortex's fields (``active``, ``dispatched_blocks``,
        ``inflight_blocks``, ``dispatch_completion``, ``block_utilization``)."""
        if self._h is None:
            return EngineStatus()
        v = dict(zip(_records.STATUS_NAMES, (int(x) for x in self._record(self._handle())[:_STATUS_FIELDS])))
        cfg = self.config
        dispatched, allocated, in_flight = v["dispatched"], v["allocated"], v["in_flight"]
        limit = cfg.blocks_to_acquire if cfg is not None else 0
        return EngineStatus(
            blocks_acquired=v["blocks_acquired"], blocks_processed=v["blocks_processed"],
            blocks_formatted=v["blocks_formatted"], blocks_dropped=v["blocks_dropped"], volumes=v["volumes"],
            callback_errors=v["callback_errors"], events_dropped=v["events_dropped"], in_flight=in_flight,
            running=bool(v["running"]), done=bool(v["done"]), error=self._h.Err().replace("\n", " "),
            active=self._session, dispatched_blocks=dispatched, inflight_blocks=in_flight,
            dispatch_completion=dispatched / limit if limit > 0 else 0.0,
            block_utilization=in_flight / allocated if allocated > 0 else 0.0, profiler_dropped=v["profiler_dropped"])

    @property
    def timings(self) -> dict[str, StageTiming]:
        """Per-block job timing by stage, ``{"acquire", "process", "format", "upload"}`` ->
        :class:`StageTiming` (ms); ``upload`` is the host-to-device copy within ``process``.

        On a CUDA device only with ``EngineConfig(device_timings=True)`` (empty, count 0,
        otherwise), and over a sample, one block of the pool in four: timestamped events
        between uploads cost copy-engine time. On the CPU backend every block is timed."""
        if self._h is None:
            return {s: StageTiming() for s in ("acquire", "process", "format", "upload")}
        v = self._record(self._handle())[_STATUS_FIELDS:]
        k = len(_records.TIMING_STATS)  # count, mean, min, max, p50, p99: StageTiming's fields in order
        return {stage: StageTiming(int(v[k * i]), *v[k * i + 1:k * i + k])
                for i, stage in enumerate(_records.TIMING_STAGES)}

    @property
    def start_monotonic_ns(self) -> int:
        """The base of the events' timestamps on ``time.monotonic_ns()``'s clock
        (``perf_counter_ns`` too, on Linux), read by Go just before the engine
        started; 0 before :meth:`start`."""
        if self._h is None or self._closed:
            return 0
        return int(self._h.StartMonotonicNs())

    def record_callback_latency(self, capacity: int = 1 << 20) -> None:
        """Record, for the first ``capacity`` endpoint callbacks, the time from the
        engine dispatching the event (the Go timestamp) to its handler starting on
        the dispatcher thread, in ns (:meth:`callback_latencies_ns`).

        Off by default (the dispatcher then pays one ``is None`` test per
        callback); call it before :meth:`start`. Used by ``bench/bench_engine.py``.
        """
        capacity = check_int("capacity", capacity, 1, 1 << 32)
        if self._started:
            raise VortexError("record_callback_latency: the engine has started, expected a call before start()")
        self._latency, self._latency_cap = [], int(capacity)

    def callback_latencies_ns(self) -> np.ndarray:
        """The latencies recorded since :meth:`record_callback_latency` (int64 ns, in callback order)."""
        return np.array(self._latency or (), np.int64)

    @property
    def last_callback_error(self) -> Optional[BaseException]:
        """The most recent exception raised by a callback, or None."""
        return self._last_callback_error

    @native
    def close(self) -> None:
        """Stop the run if needed and free the blocks. Endpoints, processors and storage stay
        open (their tensors outlive the engine); close them yourself."""
        if self._closed:
            return
        if self._h is None:
            self._closed = True
            return
        self._closed = True
        self._finalizer.detach()
        self._h.Close()
        self._join_dispatcher(5.0)
        self._session = False

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.config is None:
            return "<Engine (not initialized)>"
        if self._closed:
            return "<Engine closed>"
        if self._h is None:
            return f"<Engine {self.config!r} not prepared>"
        st = self.status()
        phase = st.state if self._started else ("prepared" if self._prepared else "initialized")
        return (f"<Engine on {self.device.alias} {phase}: {st.blocks_acquired} blocks acquired, "
                f"{st.volumes} volumes, {st.callback_errors} callback errors>")

    # --- the dispatcher thread -------------------------------------------------------

    def _callback_failed(self, what: str, exc: BaseException) -> None:
        self._callback_errors += 1
        self._last_callback_error = exc
        self.logger.exception("vortexgo: %s raised; %s", what,
                              "stopping the engine" if self.callback_error_policy == "stop" else "the engine keeps running")
        try:
            self._h.RecordCallbackErrors(1)
            if self.callback_error_policy == "stop":
                self._h.RequestStop()
        except RuntimeError:  # pragma: no cover - the engine was closed under us
            pass

    def _handler_exited(self, what: str, exc: BaseException) -> None:
        """A handler raised a BaseException (``sys.exit()``, KeyboardInterrupt):
        never let it kill the dispatcher (the engine would wait forever for its
        events). Stop the engine, keep draining, and re-raise it from wait()."""
        if self._fatal is None:
            self._fatal = exc
        self.logger.error("vortexgo: %s raised %s; stopping the engine (wait() re-raises it)",
                          what, type(exc).__name__)
        try:
            self._h.RequestStop()
        except RuntimeError:  # pragma: no cover - the engine was closed under us
            pass

    def _engine_event(self, event: EngineEvent, exc: Optional[BaseException]) -> None:
        cb = self.event_callback
        if cb is None:
            return
        try:
            cb(event, exc)
        except Exception as e:
            self._callback_failed(f"event_callback({event!r})", e)
        except BaseException as e:
            self._handler_exited(f"event_callback({event!r})", e)

    def _session_error(self) -> BaseException:
        err = self._h.Err()
        return translate(RuntimeError(err)) if err else VortexError("engine error")

    def _job(self, row: list) -> None:
        """vortex's ``job_callback(id, SessionStatus, JobTiming)`` for a job event row."""
        cb = self.job_callback
        if cb is None:
            return
        cfg = self.config
        status = SessionStatus(allocated=cfg.blocks_to_allocate, inflight=row[2], dispatched=row[4],
                               limit=cfg.blocks_to_acquire)
        at = datetime.datetime.fromtimestamp
        w0 = self._wall0
        timing = JobTiming(*(at((w0 + t) / 1e9) for t in row[7:14]))
        try:
            cb(row[3], status, timing)
        except Exception as exc:
            self._callback_failed("job_callback", exc)
        except BaseException as exc:
            self._handler_exited("job_callback", exc)

    def _queue_event(self, empty: bool) -> None:
        """The scan queue's callbacks while the engine plays it (vortex runs them on its acquire
        thread, here they run on the dispatcher): the scans' ``callback(sample, event)`` recorded
        by the Generate stage, or ``empty_callback(online_queue)`` when the queue ran dry (the
        Generate stage waits until it returns, so what it appends plays next, as in vortex)."""
        q = self.scan_queue
        try:
            if empty and q.empty_callback is not None:
                q.empty_callback(ScanQueue.OnlineScanQueue(q))
            q.poll_events()
        except Exception as exc:
            self._callback_failed("ScanQueue.empty_callback" if empty else "a ScanQueue callback", exc)
        except BaseException as exc:
            self._handler_exited("ScanQueue.empty_callback" if empty else "a ScanQueue callback", exc)

    def _aggregate(self, ep: _Endpoint, kind: int, segment: int) -> None:
        """vortex's aggregated segment callbacks, around the events of one endpoint: segments
        gather per volume and per block; a volume event first hands its volume's segments to
        ``aggregate_segment_callback``, the block's update event (its last) the open volume's,
        then all of the block's to ``block_segment_callback``."""
        volume, blk = ep._agg_volume, ep._agg_block
        aggregate, block = ep.aggregate_segment_callback, ep.block_segment_callback
        if kind == _SEGMENT:
            volume.append(segment)
            blk.append(segment)
            return
        calls = []
        if kind == _VOLUME or kind == _UPDATE:
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

    def _dispatch_setup(self, ring: Any) -> tuple:
        """What the dispatcher loop needs of the engine, read once per session: the record
        buffer, its flat view, the registry id and the ring's address and spin."""
        h = self._h
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        # One flat int64 view of the records: the loop reads each field it
        # needs straight from the buffer (docs/design.md, "Dispatch latency").
        records = memoryview(buf).cast("B").cast("q")
        if self._latency is not None:
            self._latency_base = int(h.StartMonotonicNs())
        addr, spin = (_ring_address(ring), self._ring_spin_ns) if ring is not None else (0, 0)
        return h, buf, records, int(h.ID()), addr, spin

    def _run_batch(self, ev: memoryview, n: int) -> bool:
        """Run the handlers of the first ``n`` event records of ``ev`` (``_FIELDS`` int64s each);
        True after the done event.

        Runs of simple records (an endpoint's update, segment, volume, scan or event record
        without aggregated segments) go through the C loop (``_fastcall.run_events``), which
        does what :meth:`_run_records` does for them; every other record, and every record
        without the extension, runs in :meth:`_run_records`.
        """
        run = _run_events
        if run is None:
            return self._run_records(ev, 0, n)
        i = 0
        while i < n:
            r = run(self, ev, i, n)
            if r.__class__ is tuple:  # record r[0]'s handler raised r[1]
                self._handler_raised(ev, *r)
                i = r[0] + 1
            elif r < n:
                if self._fatal is not None:  # stopping after a handler's BaseException: drain only
                    return self._run_records(ev, r, n)
                if self._run_records(ev, r, r + 1):
                    return True
                i = r + 1
            else:
                break
        return False

    def _handler_raised(self, ev: memoryview, i: int, exc: BaseException) -> None:
        """Route the exception the C loop's handler of record ``i`` raised as the Python loop
        routes its own: raised here, so that the log has its traceback."""
        o = i * _FIELDS
        what = f"{type(self._endpoints[ev[o + 1]]).__name__}.{_CB_NAMES[ev[o]]}"
        try:
            raise exc
        except Exception as e:
            self._callback_failed(what, e)
        except BaseException as e:
            self._handler_exited(what, e)
        finally:
            exc = None  # noqa: F841 - the frame, kept by the traceback, must not keep the exception

    def _run_records(self, ev: memoryview, start: int, stop: int) -> bool:
        """Run the handlers of event records ``start`` to ``stop - 1`` of ``ev``; True after
        the done event.

        The hot path allocates no container per event: fields are read from the buffer (ints,
        which the cyclic GC does not track), handlers are called with their arguments spelled
        out (no slice, no argument tuple) and read from the endpoint when their event runs (a
        handler replaced while the engine runs takes effect from its next event), so a stream of
        events never triggers a collection in the dispatcher.
        """
        eps = self._endpoints
        lat = self._latency
        for o in range(start * _FIELDS, stop * _FIELDS, _FIELDS):
            kind = ev[o]
            if self._fatal is not None and kind != _DONE:
                continue  # stopping after a handler's BaseException: drain only
            if kind <= _SCAN or kind == _EVENT:
                ep = eps[ev[o + 1]]
                if kind != _SCAN and kind != _EVENT and (ep.aggregate_segment_callback is not None
                                                         or ep.block_segment_callback is not None):
                    self._aggregate(ep, kind, ev[o + 5])
                if kind == _SEGMENT:
                    cb = ep.segment_callback
                elif kind == _UPDATE:
                    cb = ep.update_callback
                elif kind == _VOLUME:
                    cb = ep.volume_callback
                elif kind == _SCAN:
                    cb = ep.scan_callback
                else:
                    cb = ep.event_callback
                if cb is None:
                    continue
                if lat is not None and len(lat) < self._latency_cap:
                    lat.append(time.monotonic_ns() - self._latency_base - ev[o + 6])
                try:
                    if kind == _SEGMENT:
                        cb(ev[o + 2], ev[o + 3], ev[o + 4], ev[o + 5])
                    elif kind == _UPDATE:
                        cb()
                    elif kind == _VOLUME:
                        cb(ev[o + 2], ev[o + 3], ev[o + 4])
                    else:  # scan (sample, scan_idx), event (sample, id: it travels in scan_idx)
                        cb(ev[o + 2], ev[o + 3])
                except Exception as exc:
                    self._callback_failed(f"{type(ep).__name__}.{_CB_NAMES[kind]}", exc)
                except BaseException as exc:
                    self._handler_exited(f"{type(ep).__name__}.{_CB_NAMES[kind]}", exc)
            elif kind == _QUEUE or kind == _QUEUE_EMPTY:
                self._queue_event(kind == _QUEUE_EMPTY)
            elif kind == _ENGINE:
                event = EngineEvent(ev[o + 3])
                if event == EngineEvent.Exit and self._fatal is None:
                    self._queue_event(False)  # the last block's Finish
                # The sample field says the event carries the session's error.
                self._engine_event(event, self._session_error() if ev[o + 2] else None)
            elif kind == _JOB:
                self._job(ev[o:o + _FIELDS].tolist())
            elif kind == _DONE:
                return True
        return False


def _dispatch_loop(ref: "weakref.ref[Engine]", ring: Any = None) -> None:
    """The dispatcher thread: drain the Go event queue and run the handlers, in order
    (DESIGN.md section 1).

    With ``ring`` (a fixed ``dispatch_spin``: the session's ``EventRing``), each wait spins on
    the queue's ring in C with the GIL released (``_fastcall.ring_next``) and takes the records
    with no call into Go; only a wait the spin does not cover parks in Go.

    The engine is held only while a batch's handlers run (``ref``, a weak reference, between
    batches), so an engine the user dropped while it runs is collected and its finaliser stops
    it, as vortex's destructor does. The loop then drains the session to its done event,
    running no handler (a format stage may wait for the acknowledgement of the records).
    """
    eng = ref()
    if eng is None:
        return
    h, buf, records, eid, addr, spin = eng._dispatch_setup(ring)
    eng = None
    ptr = buf.ctypes.data
    # At most one cgo call per batch on the engine's registry id (pyapi.FastNextEvents), not gopy's
    # method wrapper. Once the engine is closed that id is stale (a ClosedError, before any
    # event is taken): the rest of the last session drains by name ("next_events").
    fast = _core.fast_next_events
    while True:
        try:
            if addr and eid:
                n = _ring_next(addr, records, spin)
                if n == -2:  # stages wait for this acknowledgement: wake them, then take events
                    ring.Do("ack", "", ring, 0, 0)
                    continue
                if n <= 0:  # spun out (0): park in Go without a second spin; closed and
                    n = fast(eid, ptr, _BATCH, _POLL_MS, 0)  # drained (-1): Go's done event
            elif eid:
                n = fast(eid, ptr, _BATCH, _POLL_MS, 1)
            else:
                n = json.loads(h.Do("next_events", _NEXT_EVENTS_ARGS, h, ptr, _BATCH * _FIELDS))["Records"]
        except RuntimeError as exc:
            if eid:
                eid = 0
                continue
            eng = ref()  # pragma: no cover
            (eng.logger if eng is not None else logging.getLogger(__name__)).error(  # pragma: no cover
                "vortexgo: the event queue failed: %s", exc)
            return  # pragma: no cover
        if n <= 0:
            continue
        eng = ref()
        if eng is None:  # dropped while running: its finaliser closed it; drain to the done event
            if _DONE in buf[:n, 0]:
                return
            continue
        done = eng._run_batch(records, n)
        eng = None  # the last reference may go here: the finaliser then runs on this thread
        if done:
            return


#: vortex's name: ``Engine.Event.Exit`` and so on.
Engine.Event = EngineEvent

# An event record's fields (kind, endpoint, sample, scan_idx, volume_idx,
# bscan_idx, timestamp, then a job's times) and each handler's arguments
# (_run_batch): update (), segment (sample, scan_idx, volume_idx, bscan_idx),
# volume (sample, scan_idx, volume_idx), scan (sample, scan_idx), event
# (sample, id: the id travels in scan_idx). vortex's meanings: scan_idx is the
# scan's sequence number, volume_idx the volume's index in its scan, bscan_idx
# the segment's index in the volume.
_CB_NAMES = {_UPDATE: "update_callback", _SEGMENT: "segment_callback", _VOLUME: "volume_callback",
             _SCAN: "scan_callback", _EVENT: "event_callback"}
