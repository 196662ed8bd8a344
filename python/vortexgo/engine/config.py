"""The engine's configuration: :class:`EngineConfig` (block geometry, pool sizes, the
strobes and the wiring acquisition -> processors -> formatters -> endpoints) and vortex's
processor graph nodes, :class:`divide` and :class:`cycle`. It crosses to Go as one record
plus its links (gosrc/pyapi/engine.go NewEngineConfig, EngineConfig.Link); Go validates it."""

from __future__ import annotations

import json
import math
from typing import Any, Optional, Sequence

import numpy as np

from .._attrs import StrictAttributes, ValueList
from .._core import api
from .._errors import native
from .._validate import check_bool, check_float, check_int
from ..acquire import _Acquisition
from ..endpoint import _Endpoint
from ..format import FormatPlanner
from ..io import _IO
from ..marker import Flags, ScanBoundary
from ..process import _Processor
from ..scan import ScanQueue, _Warp, warp as _warp
from .strobes import StrobeList, _Strobe, _default_strobes

class EngineConfig(StrictAttributes):
    """Block geometry, pool sizes and the wiring acquisition -> processors -> formatters -> endpoints.

    Attributes:
        records_per_block: A-scans per block.
        blocks_to_allocate: blocks in the preallocated pool (how many can be in flight;
            vortex's default, 4): the acquisition's pinned memory. On a GPU with blocks under
            2 MiB of raw spectra (up to 2 MiB with a processor on another GPU) the engine cycles
            a deeper ring of 32 device blocks behind them (``status().blocks_allocated``;
            ``VORTEXGO_DEVICE_BLOCKS``).
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

    def copy(self) -> "EngineConfig":
        """A copy of the configuration (vortex's ``copy()``): its own values and its own wiring lists,
        sharing the components (acquisitions, processors, formatters, endpoints, IOs) it wires, as
        vortex's shallow copy shares its component pointers. Adding to the copy leaves this one as is."""
        import copy as _copy

        out = _copy.copy(self)
        for k, v in vars(self).items():
            if isinstance(v, list):
                object.__setattr__(out, k, [(t[0], _copy.copy(t[1])) + tuple(t[2:]) if isinstance(t, tuple) and
                                            len(t) > 1 and isinstance(t[1], (list, dict)) else t for t in v])
            elif hasattr(v, "copy") and k in ("lead_marker", "strobes", "scanner_warp"):
                object.__setattr__(out, k, v.copy())
        return out

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
        self._ios.append((io, {"LeadSamples": check_int("add_io: lead_samples", lead_samples, 0),
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
        """Check what crosses to Go as a value of its type (ints within Go's int64, numbers,
        booleans, the stages' classes) and normalise it. The bounds are Go's alone
        (gosrc/engine/config.go Config.Validate, through :meth:`validate`), whose errors name
        the field."""
        o = "EngineConfig"
        for name in ("records_per_block", "blocks_to_allocate", "preload_count", "blocks_to_acquire",
                     "event_queue_size", "galvo_input_channels", "post_scan_records"):
            setattr(self, name, check_int(f"{o}.{name}", getattr(self, name)))
        # Go reads 0 output channels as its default (2): a width of 0 is refused here.
        self.galvo_output_channels = check_int(f"{o}.galvo_output_channels", self.galvo_output_channels, 1)
        if self.dispatch_spin is not None:
            check_float(f"{o}.dispatch_spin", self.dispatch_spin)
        if not isinstance(self.device_timings, (bool, np.bool_)):
            raise TypeError(f"{o}.device_timings={self.device_timings!r}, expected True or False")
        if self.event_policy not in ("block", "drop"):  # the names of Go's QueuePolicy values
            raise ValueError(f"{o}.event_policy={self.event_policy!r}, expected 'block' or 'drop'")
        for acq, _, _ in self._acquisitions:
            acq._handle()
        for p in self.processors:
            p._handle()
            if p.config.ascans_per_block < self.records_per_block:
                raise ValueError(f"ProcessorConfig.ascans_per_block={p.config.ascans_per_block}, expected >= "
                                 f"EngineConfig.records_per_block ({self.records_per_block})")
        for f, _ in self._formatters:
            f._handle()
        if self.lead_marker is not None and not isinstance(self.lead_marker, ScanBoundary):
            raise TypeError(f"{o}.lead_marker={self.lead_marker!r}, expected a ScanBoundary")
        try:
            strobes = list(self.strobes)
        except TypeError:
            raise TypeError(f"{o}.strobes={self.strobes!r}, expected a list of strobes") from None
        for i, st in enumerate(strobes):
            if not isinstance(st, _Strobe):
                raise TypeError(f"{o}.strobes[{i}]={st!r}, expected a SampleStrobe, SegmentStrobe, VolumeStrobe, "
                                "ScanStrobe or EventStrobe")
        # Go's LeadStrobes is a uint32: the type's range, not a bound of the engine's.
        self.lead_strobes = check_int(f"{o}.lead_strobes", self.lead_strobes, 0, 2**32 - 1)
        if not isinstance(self.scanner_warp, _Warp):
            raise TypeError(f"{o}.scanner_warp={self.scanner_warp!r}, expected a vortexgo.scan.warp "
                            "(NoWarp, Angular, Telecentric)")

    def _native(self, scan_queue: Optional[ScanQueue] = None) -> Any:
        slots = min((p.config.slots for p in self.processors), default=0)
        # engine.Config's fields as one record, dispatch_spin beside it in seconds
        # (engine.SpinSeconds; None: Go's default); galvo_input_channels 0, vortex's "no
        # position feedback", allocates one unused channel: Go's 0 means 2.
        spin = self.dispatch_spin
        h = api.NewEngineConfig(json.dumps({
            "RecordsPerBlock": int(self.records_per_block), "BlocksToAllocate": int(self.blocks_to_allocate),
            "PreloadCount": int(self.preload_count), "BlocksToAcquire": int(self.blocks_to_acquire),
            "Slots": int(slots), "EventQueueSize": int(self.event_queue_size),
            "EventPolicy": int(self.event_policy == "drop"),
            "DeviceTimings": bool(self.device_timings),
            "GalvoOutputChannels": int(self.galvo_output_channels), "GalvoInputChannels": int(self.galvo_input_channels) or 1,
            "PostScanRecords": int(self.post_scan_records), "LeadMarker": _marker_record(self.lead_marker),
            "Strobes": [st._record() for st in self.strobes], "LeadStrobes": int(self.lead_strobes),
            "ScannerWarp": self.scanner_warp._go(), "IOWiring": [w for _, w in self._ios],
            "AcquisitionMasters": [m for _, _, m in self._acquisitions],
            "Rotations": [_rotation(g) for _, g, _ in self._acquisitions]}), 0.0 if spin is None else float(spin),
            spin is not None)
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
        self._native().Validate()  # the bounds and the wiring: gosrc/engine Config.Validate

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
    return [[index[id(p)] for p in row] for row in _expand(graph)]


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


