"""GenICam line-scan cameras through Aravis (beyond vortex, which has no such driver).

:class:`GenICamAcquisition` acquires from a GigE Vision or USB3 Vision
camera (CoaXPress cameras where a GenTL producer exposes them to Aravis is
not supported: Aravis speaks GigE Vision and USB3 Vision) through `Aravis
<https://github.com/AravisProject/aravis>`_ 0.8: each frame of
``records_per_block`` lines of ``samples_per_record`` pixels is one engine
block of as many records (A-scans). The engine's pinned blocks are handed
to Aravis as the frames' buffers, so a frame lands in its block with no host
copy; Mono8, Mono10p and Mono12p frames land packed at the end of their
block, the engine uploads the packed bytes (Mono12p: 3/4 of the uint16
bytes over the bus) and widens them to uint16 on the device (a CUDA kernel
on a GPU, its Go twin on the CPU backend), so the host never touches the
pixels; used without an engine, or with a processor on another device, the
acquisition widens them on the host instead.

The line rate, exposure, pixel format and trigger are set through GenICam's
standard features (``AcquisitionLineRate``, ``ExposureTime``,
``PixelFormat``, ``TriggerSelector``/``TriggerMode``/``TriggerSource``), and
any other feature by name (``GenICamConfig.features``).

An incomplete frame (Aravis's buffer status: missing packets, a timeout)
ends the run with that status and is never delivered; a dropped frame (no
buffer was queued when it came, or its frame id is skipped) ends it too
unless ``GenICamConfig.tolerate_dropped_frames``. Both are counted in
the engine's status (``frames_received``, ``frames_dropped``,
``frames_incomplete``). A camera lost mid-run (unplugged, its heartbeat
gone) or silent for ``acquire_timeout`` ends the run with an error naming
it; the volumes completed before are kept.

Aravis (``libaravis-0.8.so.0``; Debian/Ubuntu: ``apt-get install
libaravis-0.8-0 aravis-tools``) is loaded when a camera is first opened:
without it, :class:`GenICamAcquisition` raises a
:class:`~vortexgo.VortexError` naming the library, the package and
``VORTEXGO_ARAVIS_LIBRARY``, the environment variable that points at
another copy; importing this module needs nothing. Aravis's simulated
camera ``"Fake_1"`` (its in-process Fake interface) and
``arv-fake-gv-camera-0.8 -i 127.0.0.1`` (a GigE Vision camera on the
loopback interface) stand in for a camera.
"""

from __future__ import annotations

import datetime
import enum
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from ._attrs import Config, StrictAttributes
from ._core import api
from ._errors import native
from ._validate import check_float, check_int
from .acquire import _Acquisition

__all__ = ["PixelFormat", "Trigger", "Feature", "GenICamConfig", "GenICamAcquisition", "CameraInfo",
           "aravis_version", "device_ids", "enable_interface"]


class PixelFormat(StrictAttributes, enum.IntEnum):
    """The camera's monochrome pixel format (GenICam's names)."""

    Mono8 = 0    #: 8 bits per pixel
    Mono10 = 1   #: 10 bits in 16
    Mono12 = 2   #: 12 bits in 16
    Mono16 = 3   #: 16 bits
    Mono10p = 4  #: 10 bits packed, 4 pixels in 5 bytes
    Mono12p = 5  #: 12 bits packed, 2 pixels in 3 bytes


@dataclass
class Trigger(Config):
    """The camera's trigger (GenICam's TriggerSelector, TriggerMode, TriggerSource,
    TriggerActivation); an empty field leaves the camera's setting.

    Attributes:
        selector: the trigger configured: ``"LineStart"`` (a line per pulse, the usual
            OCT line trigger from the scanner's clock) or ``"FrameStart"``.
        mode: ``"On"`` (triggered) or ``"Off"`` (free running at ``line_rate``).
        source: the input, ``"Line0"``, ``"Line1"``, ``"Software"`` ...
        activation: the edge or level, ``"RisingEdge"`` ...
    """

    selector: str = ""
    mode: str = ""
    source: str = ""
    activation: str = ""


@dataclass
class Feature(Config):
    """One more GenICam feature set by name after the others: an integer or
    float value is set as such, anything else as text (an enumeration entry)."""

    name: str = ""
    value: Any = ""


@dataclass
class GenICamConfig(Config):
    """Configuration of a :class:`GenICamAcquisition` (a line-scan OCT camera's usual setup).

    Attributes:
        camera: the Aravis device id (``""``: the first camera found; an id is
            ``"Vendor-Model-Serial"`` or a GigE Vision camera's address; ``"Fake_1"``
            is Aravis's simulated camera). :func:`device_ids` lists them.
        samples_per_record: pixels per line, the spectrum (the camera's ``Width``).
        records_per_block: lines per frame (the camera's ``Height``); the engine's
            ``EngineConfig.records_per_block`` must equal it.
        pixel_format: a :class:`PixelFormat`.
        line_rate: lines per second (0 leaves the camera's): set as
            ``AcquisitionLineRate``, else ``LineRate``, else (an area camera) as
            ``AcquisitionFrameRate = line_rate / records_per_block``.
        exposure_time_us: the exposure in microseconds (0 leaves the camera's).
        trigger: a :class:`Trigger`.
        features: more :class:`Feature` settings, applied in order, last.
        acquire_timeout: the longest wait for one frame (a ``datetime.timedelta``, or seconds).
        tolerate_dropped_frames: keep acquiring past dropped frames (counted; each
            shifts the scan by a frame) instead of ending the run.
        packet_resend: let a GigE Vision stream ask for lost packets again (off: a lost
            packet makes its frame incomplete at once).
    """

    camera: str = ""
    samples_per_record: int = 2048
    records_per_block: int = 512
    pixel_format: PixelFormat = PixelFormat.Mono12
    line_rate: float = 0.0
    exposure_time_us: float = 0.0
    trigger: Trigger = field(default_factory=Trigger)
    features: list = field(default_factory=list)
    acquire_timeout: datetime.timedelta = datetime.timedelta(seconds=1)
    tolerate_dropped_frames: bool = False
    packet_resend: bool = True

    @property
    def shape(self) -> list[int]:
        """``[records_per_block, samples_per_record, 1]``: a block (one frame)."""
        return [self.records_per_block, self.samples_per_record, 1]

    def _record(self) -> dict:
        o = "GenICamConfig"
        try:
            fmt = PixelFormat(self.pixel_format)
        except ValueError:
            raise ValueError(f"{o}.pixel_format={self.pixel_format!r}, expected a genicam.PixelFormat") from None
        if not isinstance(self.trigger, Trigger):
            raise TypeError(f"{o}.trigger={self.trigger!r}, expected a genicam.Trigger")
        feats = []
        for k, f in enumerate(self.features):
            if not isinstance(f, Feature):
                raise TypeError(f"{o}.features[{k}]={f!r}, expected a genicam.Feature")
            if not isinstance(f.name, str) or not f.name:
                raise ValueError(f"{o}.features[{k}].name={f.name!r}, expected a feature's name")
            feats.append({"Name": f.name, "Value": str(f.value)})
        for k in ("selector", "mode", "source", "activation"):
            if not isinstance(getattr(self.trigger, k), str):
                raise TypeError(f"{o}.trigger.{k}={getattr(self.trigger, k)!r}, expected a str")
        if not isinstance(self.camera, str):
            raise TypeError(f"{o}.camera={self.camera!r}, expected a str (an Aravis device id)")
        timeout = self.acquire_timeout
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        timeout = check_float(f"{o}.acquire_timeout", timeout, 1e-9)
        t = self.trigger
        return {"Camera": self.camera,
                "SamplesPerRecord": check_int(f"{o}.samples_per_record", self.samples_per_record, 1, 2**31 - 1),
                "RecordsPerBlock": check_int(f"{o}.records_per_block", self.records_per_block, 1, 2**31 - 1),
                "PixelFormat": int(fmt),
                "LineRate": check_float(f"{o}.line_rate", self.line_rate, 0.0),
                "ExposureTimeUs": check_float(f"{o}.exposure_time_us", self.exposure_time_us, 0.0),
                "Trigger": {"Selector": t.selector, "Mode": t.mode, "Source": t.source, "Activation": t.activation},
                "Features": feats,
                "AcquireTimeout": int(round(timeout * 1e9)),
                "TolerateDroppedFrames": bool(self.tolerate_dropped_frames),
                "NoPacketResend": not self.packet_resend}


@dataclass(frozen=True)
class CameraInfo:
    """A :class:`GenICamAcquisition`'s camera and its current (or last) session's frames."""

    id: str = ""
    vendor: str = ""
    model: str = ""
    gige_vision: bool = False
    #: the feature the line rate was set through ("" when ``line_rate`` is 0)
    line_rate_feature: str = ""
    #: the camera's control was lost (unplugged, heartbeat gone)
    lost: bool = False
    received: int = 0
    dropped: int = 0
    incomplete: int = 0


class GenICamAcquisition(_Acquisition):
    """Acquires from a GenICam line-scan camera through Aravis (see the module).

    :meth:`initialize` opens the camera and configures it (width, height,
    pixel format, trigger, line rate, exposure, features), then checks that
    a frame is exactly ``records_per_block x samples_per_record`` pixels.
    In an engine, each block's pinned buffer is queued with the camera's
    stream ``preload_count`` blocks ahead and the frame lands in it; the
    camera starts at the first block and stops with the engine. A block is
    ``config.shape`` uint16, one line per record.
    """

    _config_type = GenICamConfig
    _constructor = "NewGenICamAcquisition"

    @property
    def camera(self) -> CameraInfo:
        """The camera and the frames of the current (or last) session."""
        r = json.loads(native(self._handle().GenICamInfo)())
        return CameraInfo(id=r["ID"], vendor=r["Vendor"], model=r["Model"], gige_vision=r["GigEVision"],
                          line_rate_feature=r["LineRateFeature"], lost=r["Lost"], received=r["Received"],
                          dropped=r["Dropped"], incomplete=r["Incomplete"])

    def _describe(self) -> str:
        c = self._config
        return (f"{c.camera or 'first camera'}, {c.records_per_block} lines x "
                f"{c.samples_per_record} pixels {PixelFormat(c.pixel_format).name}")


@native
def aravis_version() -> str:
    """Load Aravis (if not yet) and return its version ("0.8.26")."""
    return api.AravisLoad()


@native
def enable_interface(name: str) -> None:
    """Enable one of Aravis's interfaces by name (``"Fake"``: the simulated
    camera ``"Fake_1"``, which a :class:`GenICamConfig` naming it enables itself)."""
    api.AravisEnableInterface(name)


@native
def device_ids() -> list[str]:
    """Rescan the enabled interfaces and list the cameras' Aravis ids."""
    return json.loads(api.AravisDeviceIDs())
