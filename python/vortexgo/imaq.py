"""NI frame grabbers with line-scan cameras (vortex's ``vortex.acquire.imaq`` module).

The driver's enumerations (:class:`Signal`, :class:`Polarity`, :class:`Source`),
:class:`RegionOfInterest`, :func:`enumerate`, the frame grabber itself
(:class:`Imaq`, its :class:`Info` and :class:`Resolution`), and the configuration of an
:class:`ImaqAcquisition` (:class:`LineTrigger`, :class:`FrameTrigger`,
:class:`TriggerOutput`), with vortex's fields and defaults.
:class:`ImaqAcquisitionConfig` and :class:`ImaqAcquisition` are
``vortex.acquire``'s names too (under :func:`vortexgo.compat.install`).

NI-IMAQ (``libniimaq.so``) is loaded when an acquisition is first
initialized: without it, :class:`ImaqAcquisition` raises a
:class:`~vortexgo.VortexError` naming ``VORTEXGO_NIIMAQ_LIBRARY``, the
environment variable that points at it; importing this module needs nothing.
vortexgo's virtual camera (``make virtual``, then
``VORTEXGO_INSTRUMENTS=virtual``) stands in for a frame grabber: see
``instruments/virtual/README.md``.
"""

from __future__ import annotations

import builtins
import datetime
import enum
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from . import _instruments  # noqa: F401 - VORTEXGO_INSTRUMENTS=virtual: the default VORTEXGO_VIRTUAL_DIR
from ._attrs import Config, NoCopy, StrictAttributes, ValueList
from ._core import api
from ._errors import native, release_on_collect
from ._validate import check_float, check_int
from .acquire import _Standalone

__all__ = [
    "Signal", "Polarity", "Source", "RegionOfInterest", "Resolution", "Info", "Imaq", "enumerate",
    "LineTrigger", "FrameTrigger", "TriggerOutput", "VectorTriggerOutput",
    "ImaqAcquisitionConfig", "ImaqAcquisition",
]


class Signal(StrictAttributes, enum.IntEnum):
    """A trigger's signal type (NI-IMAQ's ``IMG_SIGNAL_*``)."""

    NoSignal = 0xFFFFFFFF
    External = 0
    RTSI = 1
    IsoIn = 2
    IsoOut = 3
    Status = 4
    ScaledEncoder = 5
    SoftwareTrigger = 6


class Polarity(StrictAttributes, enum.IntEnum):
    """A trigger's active level (``IMG_TRIG_POLAR_ACTIVEL`` / ``ACTIVEH``)."""

    Low = 1
    High = 0


class Source(StrictAttributes, enum.IntEnum):
    """What drives a trigger output (``IMG_TRIG_DRIVE_*``)."""

    Disabled = 0
    AcquisitionInProgress = 1
    AcquisitionDone = 2
    PixelClock = 3
    Unasserted = 4
    Asserted = 5
    Hsync = 6
    Vsync = 7
    FrameStart = 8
    FrameDone = 9
    ScaledEncoder = 10


for _e in (Signal, Polarity, Source):
    _e.__str__ = enum.Enum.__str__  # type: ignore[method-assign] # "Polarity.High", as vortex's enums print


@dataclass
class RegionOfInterest(Config):
    """A rectangle of the acquisition window; ``pixels_per_row`` 0 means ``width``."""

    top: int = 0
    left: int = 0
    height: int = 0
    width: int = 0
    pixels_per_row: int = 0


@dataclass
class Resolution(Config):
    """The camera's sensor size in pixels (vortex's ``Imaq.Info.resolution``)."""

    horizontal: int = 0
    vertical: int = 0


@dataclass
class Info(Config):
    """What an :class:`Imaq` session reported when it opened (vortex's ``imaq_t::info_t``).

    Attributes:
        device: NI-IMAQ's interface type (``IMG_ATTR_INTERFACE_TYPE``).
        serial: the board's serial number.
        calibration: the board's calibration date (UTC), or None when it has none.
        resolution: the camera's :class:`Resolution`.
        acquisition_window: the camera's acquisition window (a :class:`RegionOfInterest`
            whose ``pixels_per_row`` is its width).
        line_scan: whether the camera is a line-scan camera.
        bits_per_pixel: bits of one pixel as the camera sends it.
        bytes_per_pixel: bytes of one pixel in a buffer.
    """

    device: int = 0
    serial: int = 0
    calibration: Optional[datetime.datetime] = None
    resolution: Resolution = field(default_factory=Resolution)
    acquisition_window: RegionOfInterest = field(default_factory=RegionOfInterest)
    line_scan: bool = False
    bits_per_pixel: int = 0
    bytes_per_pixel: int = 0


def _roi(g: dict) -> RegionOfInterest:
    return RegionOfInterest(g["Top"], g["Left"], g["Height"], g["Width"], g["PixelsPerRow"])


def _info(record: str) -> Info:
    """Info from gosrc/driver/imaq's Info as pyapi encodes it (Calibration: RFC 3339, zero when none)."""
    g = json.loads(record)
    cal = None
    if not g["Calibration"].startswith("0001-01-01"):
        cal = datetime.datetime.fromisoformat(g["Calibration"].replace("Z", "+00:00"))
    r = g["Resolution"]
    return Info(device=g["Device"], serial=g["Serial"], calibration=cal,
                resolution=Resolution(r["Horizontal"], r["Vertical"]), acquisition_window=_roi(g["AcquisitionWindow"]),
                line_scan=bool(g["LineScan"]), bits_per_pixel=g["BitsPerPixel"], bytes_per_pixel=g["BytesPerPixel"])


class Imaq(NoCopy, StrictAttributes):
    """An NI frame grabber's interface and session (vortex's ``imaq.Imaq``, its ``imaq_t``).

    ``Imaq(interface_name)`` opens the interface (``"img0"``, see
    :func:`enumerate`) and a session on it, and reads its :attr:`info`;
    ``Imaq()`` is an unopened one (:attr:`valid` is False, and its methods
    raise). Opening raises vortex's errors as :class:`~vortexgo.VortexError`
    (``interface "img3" open failed: (...)``; ``session open failed: (...)
    device in use`` while another session holds the interface), or one naming
    ``VORTEXGO_NIIMAQ_LIBRARY`` when NI-IMAQ is missing. :meth:`close` (or
    collection) stops a capture and closes the interface.
    """

    def __init__(self, interface_name: Optional[str] = None) -> None:
        self._h: Any = None
        self._fin: Any = None
        self._name = ""
        self._info = Info()
        if interface_name is None:
            return
        if not isinstance(interface_name, str):
            raise TypeError(f"Imaq: interface_name={interface_name!r}, expected a str")
        self._h = native(api.OpenImaq)(interface_name)
        self._name = interface_name
        self._info = _info(self._h.Info())
        self._fin = release_on_collect(self, self._h.Close, "an IMAQ session")

    def _session(self, op: str) -> Any:
        if self._h is None or not self._h.Valid():
            raise RuntimeError(f"Imaq.{op}: no interface is open (Imaq(interface_name) opens one)")
        return self._h

    @property
    def info(self) -> Info:
        """What the session reported when it opened (a copy)."""
        return self._info.copy()

    @property
    def valid(self) -> bool:
        """Whether the interface is open."""
        return self._h is not None and bool(self._h.Valid())

    @property
    def name(self) -> str:
        """The interface's name (``""`` for ``Imaq()``)."""
        return self._name

    @property
    def running(self) -> bool:
        """Whether a capture was started and not stopped."""
        return self._h is not None and bool(self._h.Running())

    def required_buffer_size(self) -> int:
        """Bytes of one ring buffer for the configured region."""
        return int(native(self._session("required_buffer_size").RequiredBufferSize)())

    def configure_region(self, roi: RegionOfInterest) -> None:
        """Acquire ``roi`` of the acquisition window (``pixels_per_row`` 0: its width).

        Raises vortex's ``setting ROI offset (t=..., l=...) and shape [h=... x w=...]
        failed: (...) incompatible ROI (check alignment and size)`` when the
        board cannot acquire it.
        """
        if not isinstance(roi, RegionOfInterest):
            raise TypeError(f"Imaq.configure_region: roi={roi!r}, expected an imaq.RegionOfInterest")
        native(self._session("configure_region").ConfigureRegion)(
            *(check_int(f"Imaq.configure_region: roi.{k}", getattr(roi, k), 0, 2**32 - 1)
              for k in ("top", "left", "height", "width", "pixels_per_row")))

    def query_region(self) -> RegionOfInterest:
        """The region the session acquires."""
        return _roi(json.loads(native(self._session("query_region").QueryRegion)()))

    def configure_line_trigger(self, line: int, skip: int = 0, polarity: Polarity = Polarity.High,
                               signal: Signal = Signal.External) -> None:
        """Acquire one camera line per trigger on ``line``, skipping ``skip`` triggers after each."""
        o = "Imaq.configure_line_trigger"
        native(self._session("configure_line_trigger").ConfigureLineTrigger)(
            _u32(f"{o}: line", line), _u32(f"{o}: skip", skip),
            int(_enum(o, "polarity", polarity, Polarity)), int(_enum(o, "signal", signal, Signal)))

    def configure_trigger_output(self, line: int, source: Source, polarity: Polarity = Polarity.High,
                                 signal: Signal = Signal.External) -> None:
        """Drive trigger ``line`` from ``source``."""
        o = "Imaq.configure_trigger_output"
        native(self._session("configure_trigger_output").ConfigureTriggerOutput)(
            _u32(f"{o}: line", line), int(_enum(o, "source", source, Source)),
            int(_enum(o, "polarity", polarity, Polarity)), int(_enum(o, "signal", signal, Signal)))

    def stop_capture(self) -> None:
        """Stop a started capture (nothing when none runs)."""
        if self._h is not None:
            native(self._h.StopCapture)()

    def close(self) -> None:
        """Stop a capture and close the interface (vortexgo's; vortex closes it
        when collected, which happens here too)."""
        if self._fin is not None:
            self._fin.detach()
            self._fin = None
            native(self._h.Close)()

    def __enter__(self) -> "Imaq":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.valid:
            return "<Imaq (not open)>"
        i = self._info
        return (f"<Imaq {self._name}: {i.resolution.horizontal} x {i.resolution.vertical}, "
                f"{i.bits_per_pixel} bits per pixel>")


def enumerate() -> list[str]:  # noqa: A001 - vortex's name
    """The NI-IMAQ interface names (``["img0", ...]``)."""
    return json.loads(native(api.ImaqEnumerate)())


def _enum(owner: str, name: str, v: Any, cls: type) -> Any:
    try:
        return cls(v)
    except ValueError:
        raise ValueError(f"{owner}.{name}={v!r}, expected a {cls.__name__}") from None


@dataclass
class LineTrigger(Config):
    """The line trigger input: ``line``, ``skip`` lines after each trigger, its polarity and signal."""

    line: int = 0
    skip: int = 0
    polarity: Polarity = Polarity.High
    signal: Signal = Signal.External

    def __repr__(self) -> str:
        return f"LineTrigger(line={self.line}, skip={self.skip}, polarity={self.polarity!r}, signal={self.signal!r})"


@dataclass
class FrameTrigger(Config):
    """The frame trigger input (one trigger a frame)."""

    line: int = 0
    polarity: Polarity = Polarity.High
    signal: Signal = Signal.External

    def __repr__(self) -> str:
        return f"FrameTrigger(line={self.line}, polarity={self.polarity!r}, signal={self.signal!r})"


@dataclass
class TriggerOutput(Config):
    """A trigger line the frame grabber drives from ``source``."""

    line: int = 0
    source: Source = Source.Hsync
    polarity: Polarity = Polarity.High
    signal: Signal = Signal.External

    def __repr__(self) -> str:
        return (f"TriggerOutput(line={self.line}, source={self.source!r}, polarity={self.polarity!r}, "
                f"signal={self.signal!r})")


class VectorTriggerOutput(ValueList):
    """vortex's list of :class:`TriggerOutput` (``ImaqAcquisitionConfig.trigger_output``)."""

    __slots__ = ()


def _u32(owner: str, v: Any) -> int:
    return check_int(owner, v, 0, 2**32 - 1)


@dataclass
class ImaqAcquisitionConfig(Config):
    """Configuration of an :class:`ImaqAcquisition` (vortex's fields and defaults).

    Attributes:
        samples_per_record: pixels of one camera line (a record).
        records_per_block: lines of one frame (a block); the engine's
            ``EngineConfig.records_per_block`` must equal it.
        device_name: the NI-IMAQ interface.
        offset: the region's offset in the acquisition window, ``[samples, records]``
            (vortex's ``(X, Y)``); prefer :attr:`sample_offset` and :attr:`record_offset`.
        line_trigger: a :class:`LineTrigger`, or None (the default).
        frame_trigger: a :class:`FrameTrigger`, or None (the default).
        trigger_output: the :class:`TriggerOutput` lines, ``[TriggerOutput()]`` by default.
        ring_size: buffers of NI-IMAQ's ring (frames the host may fall behind).
        acquire_timeout: the longest wait for one frame (a ``datetime.timedelta``, or seconds).
        stop_on_error: stop the capture at the first error.
        bypass_region_check: accept a region larger than the camera's (the
            rest of the block is left as it was).
    """

    samples_per_record: int = 1024
    records_per_block: int = 1000
    device_name: str = "img0"
    offset: list = field(default_factory=lambda: [0, 0])
    line_trigger: Optional[LineTrigger] = None
    frame_trigger: Optional[FrameTrigger] = None
    trigger_output: VectorTriggerOutput = field(default_factory=lambda: VectorTriggerOutput([TriggerOutput()]))
    ring_size: int = 10
    acquire_timeout: datetime.timedelta = datetime.timedelta(seconds=1)
    stop_on_error: bool = True
    bypass_region_check: bool = False

    @property
    def sample_offset(self) -> int:
        """Pixels skipped at the left of the acquisition window (``offset[0]``)."""
        return self.offset[0]

    @sample_offset.setter
    def sample_offset(self, v: int) -> None:
        self.offset = [v, self.offset[1]]

    @property
    def record_offset(self) -> int:
        """Lines skipped at the top of each frame (``offset[1]``)."""
        return self.offset[1]

    @record_offset.setter
    def record_offset(self, v: int) -> None:
        self.offset = [self.offset[0], v]

    @property
    def channels_per_sample(self) -> int:
        """One channel per sample (a camera line is one channel)."""
        return 1

    @property
    def shape(self) -> list[int]:
        """``[records_per_block, samples_per_record, channels_per_sample]``."""
        return [self.records_per_block, self.samples_per_record, self.channels_per_sample]

    def validate(self) -> None:
        """vortex's check (RuntimeError): a ring of at least one buffer."""
        if self.ring_size == 0:
            raise RuntimeError(f"ring size ({self.ring_size}) must be non-zero")

    def copy(self) -> "ImaqAcquisitionConfig":
        """A copy of this configuration."""
        import copy as _copy

        return _copy.deepcopy(self)

    def _record(self) -> dict:
        """The Go acquire.ImaqConfig's fields, checked."""
        o = "ImaqAcquisitionConfig"
        self.validate()
        if len(self.offset) != 2:
            raise ValueError(f"{o}.offset={self.offset!r}, expected [sample_offset, record_offset]")

        def trig(name: str, t: Any, cls: type, fields: tuple) -> Optional[dict]:
            if t is None:
                return None
            if not isinstance(t, cls):
                raise TypeError(f"{o}.{name}={t!r}, expected an imaq.{cls.__name__} or None")
            r = {"Line": _u32(f"{o}.{name}.line", t.line),
                 "Polarity": int(_enum(o, f"{name}.polarity", t.polarity, Polarity)),
                 "Signal": int(_enum(o, f"{name}.signal", t.signal, Signal))}
            if "skip" in fields:
                r["Skip"] = _u32(f"{o}.{name}.skip", t.skip)
            if "source" in fields:
                r["Source"] = int(_enum(o, f"{name}.source", t.source, Source))
            return r

        outputs = [trig(f"trigger_output[{k}]", t, TriggerOutput, ("source",))
                   for k, t in builtins.enumerate(self.trigger_output)]
        timeout = self.acquire_timeout
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        timeout = check_float(f"{o}.acquire_timeout", timeout, 0.0)
        if not isinstance(self.device_name, str):
            raise TypeError(f"{o}.device_name={self.device_name!r}, expected a str")
        return {"DeviceName": self.device_name,
                "SamplesPerRecord": check_int(f"{o}.samples_per_record", self.samples_per_record, 1, 2**32 - 1),
                "RecordsPerBlock": check_int(f"{o}.records_per_block", self.records_per_block, 1, 2**32 - 1),
                "SampleOffset": _u32(f"{o}.sample_offset", self.offset[0]),
                "RecordOffset": _u32(f"{o}.record_offset", self.offset[1]),
                "LineTrigger": trig("line_trigger", self.line_trigger, LineTrigger, ("skip",)),
                "FrameTrigger": trig("frame_trigger", self.frame_trigger, FrameTrigger, ()),
                "TriggerOutput": outputs,
                "RingSize": check_int(f"{o}.ring_size", self.ring_size, 1, 1 << 16),
                "AcquireTimeout": int(round(timeout * 1e9)), "StopOnError": bool(self.stop_on_error),
                "BypassRegionCheck": bool(self.bypass_region_check)}


class ImaqAcquisition(_Standalone):
    """Acquires from an NI frame grabber's line-scan camera (vortex's ``ImaqAcquisition``).

    :meth:`initialize` opens ``device_name``, fits the region of interest
    (``sample_offset``, ``record_offset``, ``samples_per_record`` x
    ``records_per_block``), configures the triggers, the frame timeout and
    NI-IMAQ's ring of ``ring_size`` buffers. Each block is one frame: each
    camera line is a record, each pixel a sample, uint16. The camera starts
    with the first block; a frame the ring overwrote before it was read
    (the host fell behind: "frame N has been overwritten"), a timeout or a
    frame grabber error ends the run with vortex's error, and ``stop``
    leaves the camera ready for the next run. Register it with
    ``preload=False``, as vortex asks.
    """

    _config_type = ImaqAcquisitionConfig
    _constructor = "NewImaqAcquisition"

    @property
    def running(self) -> bool:
        """Whether the camera captures."""
        if self._h is None or self._closed:
            return False
        return bool(self._h.ImaqRunning())

    @property
    def info(self) -> Info:
        """The session's NI-IMAQ :class:`Info` (vortexgo's; vortex's acquisition does not expose its session)."""
        return _info(native(self._handle().ImaqInfo)())

    @property
    def region(self) -> RegionOfInterest:
        """The region NI-IMAQ acquires (fitted to the board's alignment)."""
        return _roi(json.loads(native(self._handle().ImaqRegion)()))

    def _describe(self) -> str:
        c = self._config
        return f"{c.device_name}, {c.records_per_block} x {c.samples_per_record} uint16"
