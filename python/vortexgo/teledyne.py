"""Teledyne SP Devices ADQ digitizers (vortex's ``vortex.acquire.teledyne`` module).

The driver's names (:class:`Teledyne`, the board; :class:`Info`,
:class:`DeviceInfo` and :func:`enumerate`; the enums :class:`TriggerSource`,
:class:`ClockGenerator`, :class:`ClockReferenceSource`, :class:`ClockEdges`,
:class:`FFTMode`, :class:`ADQProductID`) and the parts of a
:class:`TeledyneConfig` (:class:`Clock`, :class:`Input`, :class:`VectorInput`),
with vortex's fields and defaults. :class:`TeledyneConfig` and
:class:`TeledyneAcquisition` are vortex's ``vortex.acquire`` names too
(``vortexgo.compat``).

ADQAPI (``libadq.so``) is loaded when a board is first opened: without it,
:class:`Teledyne`, :func:`enumerate` and :class:`TeledyneAcquisition` raise
a :class:`~vortexgo.VortexError` naming ``VORTEXGO_ADQ_LIBRARY``, the
environment variable that points at it; importing this module needs
nothing. The driver checks the library's API revision as ADQAPI asks
(``ADQAPI_ValidateVersion``) and refuses another one. vortexgo's virtual
digitizer (``make virtual``, then
``VORTEXGO_ADQ_LIBRARY=build/virtual/libadq.so``, or
``VORTEXGO_INSTRUMENTS=virtual``) stands in for a board: see
``instruments/virtual/README.md`` and ``docs/hardware.md``.
"""

from __future__ import annotations

import builtins
import datetime
import enum
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _instruments  # noqa: F401 - VORTEXGO_INSTRUMENTS=virtual: the default VORTEXGO_VIRTUAL_DIR
from ._attrs import Config, NoCopy, StrictAttributes, ValueList
from ._core import api
from ._errors import native, release_on_collect
from ._validate import check_float, check_int
from .acquire import _Standalone

__all__ = [
    "TriggerSource", "ClockGenerator", "ClockReferenceSource", "ClockEdges", "FFTMode", "ADQProductID",
    "InfoFWOCT", "Info", "DeviceInfo", "Teledyne", "enumerate", "library",
    "Clock", "Input", "VectorInput", "TeledyneConfig", "TeledyneAcquisition",
]

_INT32 = (-(2**31), 2**31 - 1)


class TriggerSource(StrictAttributes, enum.IntEnum):
    """What triggers a record (ADQAPI's ``ADQEventSource`` values)."""

    PortTrig = 2
    PortSync = 9
    PortGPIO = 25
    Periodic = 4


class ClockGenerator(StrictAttributes, enum.IntEnum):
    """Where the sampling clock comes from (``ADQClockGenerator``)."""

    InternalPLL = 1
    ExternalClock = 2


class ClockReferenceSource(StrictAttributes, enum.IntEnum):
    """The internal PLL's reference (``ADQReferenceClockSource``)."""

    Internal = 1
    Port_CLK = 2
    PXIE_10M = 3


class ClockEdges(StrictAttributes, enum.IntEnum):
    """Which k-clock edges the FWOCT firmware resamples on."""

    Rising = 0
    Falling = 1
    Both = 2


class FFTMode(StrictAttributes, enum.IntEnum):
    """The FWOCT firmware's FFT output (``Disabled``: no FFT)."""

    Disabled = -1
    Complex = 0
    Magnitude = 1
    LogMagnitude = 2


class ADQProductID(StrictAttributes, enum.IntEnum):
    """ADQAPI's product identifiers (``ADQProductID_Enum``, ``PID_*``); ``ADQ114``
    is ``ADQ214``'s value, as vortex binds it."""

    ADQ214 = 0x0001
    ADQ114 = 0x0001  # vortex binds PID_ADQ214 under this name: an alias
    ADQ112 = 0x0005
    SphinxHS = 0x000B
    SphinxLS = 0x000C
    ADQ108 = 0x000E
    ADQDSP = 0x000F
    SphinxAA14 = 0x0011
    SphinxAA16 = 0x0012
    ADQ412 = 0x0014
    ADQ212 = 0x0015
    SphinxAA_LS2 = 0x0016
    SphinxHS_LS2 = 0x0017
    SDR14 = 0x001B
    ADQ1600 = 0x001C
    SphinxXT = 0x001D
    ADQ208 = 0x001E
    DSU = 0x001F
    ADQ14 = 0x0020
    EV12AS350_EVM = 0x0022
    ADQ7 = 0x0023
    ADQ8 = 0x0026
    ADQ12 = 0x0027
    ADQ32 = 0x0031
    ADQSM = 0x0032


for _e in (TriggerSource, ClockGenerator, ClockReferenceSource, ClockEdges, FFTMode, ADQProductID):
    _e.__str__ = enum.Enum.__str__  # type: ignore[method-assign] # "TriggerSource.Periodic", as vortex's enums print


# --- the board (vortex's teledyne.Teledyne) -----------------------------------


@dataclass
class InfoFWOCT(Config):
    """The FWOCT firmware found on a board (vortex's ``info.fwoct``): ``detected``
    is false on a board without it (the other fields are then meaningless)."""

    detected: bool = False
    alignment_divisor: int = 8
    version: int = 0
    id: int = 0
    oct_channel_count: int = 0
    clock_channel_count: int = 0
    fft_capacity: int = 0
    sample_time_capacity: int = 0


@dataclass
class Info(Config):
    """What a :class:`Teledyne` board is (vortex's ``Teledyne.info``): its index
    (from 0) and ADQAPI device number (index + 1), its transfer buffers, the
    constant parameters ADQAPI reports and the FWOCT firmware."""

    board_index: int = 0
    device_number: int = 1
    buffer_count: int = 16
    hugepage_bytes: int = 1 << 30
    product_name: str = ""
    product_options: str = ""
    serial_number: str = ""
    firmware_name: str = ""
    channel_count: int = 0
    pattern_generator_count: int = 0
    fwoct: InfoFWOCT = field(default_factory=InfoFWOCT)


def _info(record: str) -> Info:
    """Info from gosrc/driver/teledyne's Info as pyapi encodes it."""
    g = json.loads(record)
    f = g["FWOCT"]
    return Info(board_index=g["BoardIndex"], device_number=g["DeviceNumber"], buffer_count=g["BufferCount"],
                hugepage_bytes=g["HugepageBytes"], product_name=g["ProductName"], product_options=g["ProductOptions"],
                serial_number=g["SerialNumber"], firmware_name=g["FirmwareName"], channel_count=g["ChannelCount"],
                pattern_generator_count=g["PatternGeneratorCount"],
                fwoct=InfoFWOCT(f["Detected"], f["AlignmentDivisor"], f["Version"], f["ID"], f["OCTChannelCount"],
                                f["ClockChannelCount"], f["FFTCapacity"], f["SampleTimeCapacity"]))


class DeviceInfo(Config):
    """One ADQ device in the system (vortex's ``DeviceInfo``, ADQAPI's
    ``ADQInfoListEntry``): its :attr:`ProductID` (an :class:`ADQProductID`
    value) and ``DevFile``."""

    __slots__ = ("_pid", "_dev")

    def __init__(self, ProductID: int = 0, DevFile: str = "") -> None:  # noqa: N803 - ADQAPI's names
        self._pid, self._dev = int(ProductID), str(DevFile)

    @property
    def ProductID(self) -> int:  # noqa: N802 - ADQAPI's name
        """The product's identifier (compare with :class:`ADQProductID`)."""
        return self._pid

    @property
    def DevFile(self) -> str:  # noqa: N802 - ADQAPI's name
        """The device's file (ADQAPI's)."""
        return self._dev

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceInfo) and (self._pid, self._dev) == (other._pid, other._dev)

    def __hash__(self) -> int:
        return hash((self._pid, self._dev))

    def __repr__(self) -> str:
        return f"<ProductID={self._pid}>"

    def __deepcopy__(self, memo: dict) -> "DeviceInfo":
        return DeviceInfo(self._pid, self._dev)


def library() -> str:
    """Load ADQAPI if it is not loaded yet (checking its API revision) and
    return the library's name. vortexgo's, not vortex's: ``python -m
    vortexgo hardware-check`` may print it.

    Raises :class:`~vortexgo.VortexError` naming ``VORTEXGO_ADQ_LIBRARY``
    without the library, or "system ADQAPI version is incompatible ..." for
    another API revision."""
    return native(api.TeledyneLoad)()


def enumerate() -> list[DeviceInfo]:  # noqa: A001 - vortex's name
    """Every ADQ device in the system (vortex's ``teledyne.enumerate``)."""
    return [DeviceInfo(d["ProductID"], d["DevFile"]) for d in json.loads(native(api.TeledyneEnumerate)())]


class Teledyne(NoCopy, StrictAttributes):
    """An ADQ digitizer (vortex's ``teledyne.Teledyne``, its ``board_t``):
    ``Teledyne(board_index)`` opens the board at ``board_index`` (from 0).

    Raises :class:`~vortexgo.VortexError` when the board is not found
    ("device index is out of range"), or when ADQAPI is missing (the
    message names ``VORTEXGO_ADQ_LIBRARY``). :meth:`close` (or collection)
    stops a capture and closes it.
    """

    def __init__(self, board_index: int = 0) -> None:
        self._h = None
        i = check_int("Teledyne: board_index", board_index, 0, 2**31 - 2)
        self._adopt(native(api.OpenTeledyneBoard)(i), owned=True)

    @classmethod
    def _borrow(cls, h: Any) -> "Teledyne":
        """An acquisition's board (the acquisition closes it)."""
        b = cls.__new__(cls)
        b._h = None
        b._adopt(h, owned=False)
        return b

    def _adopt(self, h: Any, owned: bool) -> None:
        self._h = h
        self._info = _info(h.Info())
        self._fin = release_on_collect(self, h.Close, "a Teledyne board") if owned else None

    @property
    def info(self) -> Info:
        """What the board is."""
        return self._info

    @property
    def handle(self) -> int:
        """ADQAPI's control unit handle of the board (0 once closed)."""
        return int(self._h.Handle()) if self._h is not None else 0

    @property
    def valid(self) -> bool:
        """Whether the board is open."""
        return self._h is not None and bool(self._h.Valid())

    @property
    def running(self) -> bool:
        """Whether the board is capturing."""
        return self._h is not None and bool(self._h.Running())

    def start_capture(self) -> None:
        """Start the board's acquisition as configured (vortex's ``start_capture``)."""
        native(self._h.StartCapture)()

    def stop_capture(self) -> None:
        """Stop the board's acquisition (vortex's ``stop_capture``)."""
        native(self._h.StopCapture)()

    def close(self) -> None:
        """Stop a capture and close the board (vortexgo's; vortex closes it when
        collected, which happens here too). Nothing for an acquisition's board."""
        if self._fin is not None:
            self._fin.detach()
            self._fin = None
            native(self._h.Close)()

    def __repr__(self) -> str:
        i = self._info
        return f"<teledyne.Teledyne {i.board_index} {i.product_name}{i.product_options} ({i.serial_number})>"


# --- acquisition configuration (vortex's TeledyneConfig parts) ----------------


def _enum(owner: str, name: str, v: Any, cls: type) -> Any:
    try:
        return cls(v)
    except ValueError:
        raise ValueError(f"{owner}.{name}={v!r}, expected a teledyne.{cls.__name__}") from None


@dataclass
class Clock(Config):
    """The board's clock system (vortex's ``teledyne.Clock``): the sampling
    rate, the internal PLL's reference, the generator and the reference's
    source, a delay adjustment and the low-jitter mode."""

    sampling_frequency: int = 2_500_000_000
    reference_frequency: int = 10_000_000
    clock_generator: ClockGenerator = ClockGenerator.InternalPLL
    reference_source: ClockReferenceSource = ClockReferenceSource.Internal
    delay_adjustment: int = 0
    low_jitter_mode_enabled: bool = True

    def __repr__(self) -> str:
        return (f"Clock(sampling_frequency={self.sampling_frequency!r}, reference_frequency={self.reference_frequency!r}, "
                f"clock_generator={self.clock_generator!r}, reference_source={self.reference_source!r}, "
                f"delay_adjustment={self.delay_adjustment!r}, low_jitter_mode_enabled={self.low_jitter_mode_enabled!r})")


@dataclass
class Input(Config):
    """One acquired channel (from 0)."""

    channel: int = 0

    def __repr__(self) -> str:
        return f"Input(channel={self.channel!r})"


class VectorInput(ValueList):
    """vortex's list of :class:`Input` (``TeledyneConfig.inputs``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"VectorInput[{', '.join(repr(i) for i in self)}]"


def _complex_array(owner: str, v: Any) -> np.ndarray:
    a = np.asarray(v if v is not None else [], dtype=np.complex64).reshape(-1)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{owner}: non-finite values, expected a finite complex filter")
    return a


def _int16_array(owner: str, v: Any) -> np.ndarray:
    a = np.asarray(v if v is not None else []).reshape(-1)
    if a.size and (a.dtype.kind not in "iuf" or (a.dtype.kind in "iu" and (a.min() < -32768 or a.max() > 32767))
                   or (a.dtype.kind == "f" and not np.all(np.isfinite(a)))):
        raise ValueError(f"{owner}: expected int16 values (signed samples)")
    return a.astype(np.int16)


@dataclass
class TeledyneConfig(Config):
    """Configuration of a :class:`TeledyneAcquisition` (vortex's fields and defaults).

    Attributes:
        samples_per_record: samples of one record (a multiple of 8 with the
            FWOCT firmware).
        records_per_block: records of each block; the engine's
            ``EngineConfig.records_per_block`` must equal it.
        device: the board's index (from 0).
        clock: the :class:`Clock`.
        inputs: the :class:`Input` channels, at least one.
        trigger_source: a :class:`TriggerSource` (``PortTrig``).
        trigger_skip_factor: keep one trigger in this many (1: all).
        trigger_offset_samples: samples skipped after a trigger.
        trigger_sync_passthrough: pass the trigger to the SYNC port.
        sample_skip_factor: keep one sample in this many (1: all).
        enable_fwoct: use the FWOCT firmware (else it is bypassed).
        resampling_factor: the FWOCT k-clock resampling's upsampling.
        clock_delay_samples: the k-clock's delay relative to the OCT signal.
        clock_edges: the k-clock edges resampled on (:class:`ClockEdges`).
        background: subtracted from each record (int16, a record long), or empty.
        spectral_filter: the complex filter before the FFT (a record long), or empty.
        fft_mode: the FWOCT FFT's output (:class:`FFTMode`).
        acquire_timeout: the longest wait for one block (a ``datetime.timedelta``, or seconds).
        enable_hugepages: transfer buffers in hugepages (refused: vortexgo's
            transfer buffers are ADQAPI's own).
        stop_on_error: stop the board at the first error.
        periodic_trigger_frequency: the ``Periodic`` trigger's rate (Hz).
        test_pattern_signal: acquire the board's test pattern instead.
    """

    samples_per_record: int = 1024
    records_per_block: int = 1000
    device: int = 0
    clock: Clock = field(default_factory=Clock)
    inputs: VectorInput = field(default_factory=VectorInput)
    trigger_source: TriggerSource = TriggerSource.PortTrig
    trigger_skip_factor: int = 1
    trigger_offset_samples: int = 0
    trigger_sync_passthrough: bool = True
    sample_skip_factor: int = 1
    enable_fwoct: bool = False
    resampling_factor: float = 1.0
    clock_delay_samples: float = 0.0
    clock_edges: ClockEdges = ClockEdges.Rising
    background: Any = field(default_factory=lambda: np.zeros(0, np.int16), compare=False)
    spectral_filter: Any = field(default_factory=lambda: np.zeros(0, np.complex64), compare=False)
    fft_mode: FFTMode = FFTMode.Disabled
    acquire_timeout: datetime.timedelta = datetime.timedelta(seconds=1)
    enable_hugepages: bool = False
    stop_on_error: bool = True
    periodic_trigger_frequency: float = 10_000.0
    test_pattern_signal: bool = False

    @property
    def channels_per_sample(self) -> int:
        """Channels per sample, one per input."""
        return len(self.inputs)

    @property
    def channel_mask(self) -> int:
        """The inputs' channels together (bit ``channel`` each)."""
        m = 0
        for i in self.inputs:
            m |= 1 << int(i.channel)
        return m

    @property
    def shape(self) -> list[int]:
        """``[records_per_block, samples_per_record, channels_per_sample]``; the
        board's layout is vortex's: one plane of records per input (the
        channels are not interleaved)."""
        return [self.records_per_block, self.samples_per_record, self.channels_per_sample]

    @property
    def samples_per_second(self) -> int:
        """The clock's sampling frequency."""
        return self.clock.sampling_frequency

    @samples_per_second.setter
    def samples_per_second(self, v: int) -> None:
        self.clock.sampling_frequency = v

    def validate(self) -> None:
        """vortex's checks, against the board (opening it): RuntimeError or ValueError with vortex's messages."""
        if not self.inputs:
            raise RuntimeError("no inputs are configured")
        chans = [int(i.channel) for i in self.inputs]
        for i in range(len(chans)):
            for j in range(i):
                if chans[i] == chans[j]:
                    raise RuntimeError(f"cannot configure the same channel as two different inputs: "
                                       f"inputs[{i}] = Channel #{chans[i]} and inputs[{j}] = Channel #{chans[j]}")
        if self.sample_skip_factor < 1:
            raise RuntimeError("sample skip factor must be positive")
        if self.trigger_skip_factor < 1:
            raise RuntimeError("trigger skip factor must be positive")
        board = Teledyne(self.device)
        try:
            f = board.info.fwoct
        finally:
            board.close()
        n = self.samples_per_record
        if f.detected:
            if n % f.alignment_divisor != 0:
                raise ValueError(f"record length of {n} is not a multiple of {f.alignment_divisor} (FWOCT requirement)")
            if self.enable_fwoct:
                filt = _complex_array("TeledyneConfig.spectral_filter", self.spectral_filter)
                bg = np.asarray(self.background if self.background is not None else []).reshape(-1)
                if self.fft_mode != FFTMode.Disabled and n > f.fft_capacity:
                    raise RuntimeError(f"required FFT size of {n} exceeds capacity of {f.fft_capacity}")
                if filt.size and filt.size != n:
                    raise ValueError(f"spectral filter and record length mismatch: {filt.size} vs {n}")
                if bg.size and bg.size != n:
                    raise ValueError(f"background and record length mismatch: {bg.size} vs {n}")
        elif self.enable_fwoct:
            raise ValueError("FWOCT is requested but not detected")

    def _record(self) -> dict:
        """The Go acquire.TeledyneConfig's fields (pyapi's teledyneRecord), checked."""
        o = "TeledyneConfig"
        k = self.clock
        if not isinstance(k, Clock):
            raise TypeError(f"{o}.clock={k!r}, expected a teledyne.Clock")
        inputs = []
        for n, i in builtins.enumerate(self.inputs):
            if not isinstance(i, Input):
                raise TypeError(f"{o}.inputs[{n}]={i!r}, expected a teledyne.Input")
            inputs.append(check_int(f"{o}.inputs[{n}].channel", i.channel, 0, 31))
        timeout = self.acquire_timeout
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        timeout = check_float(f"{o}.acquire_timeout", timeout, 0.0)
        rf = check_float(f"{o}.resampling_factor", self.resampling_factor)
        if rf <= 0:
            raise ValueError(f"{o}.resampling_factor={rf}, expected a number > 0 (1: no resampling)")
        filt = _complex_array(f"{o}.spectral_filter", self.spectral_filter)
        bg = _int16_array(f"{o}.background", self.background)
        return {"Device": check_int(f"{o}.device", self.device, 0, 2**31 - 2),
                "SamplesPerRecord": check_int(f"{o}.samples_per_record", self.samples_per_record, 1, 1 << 30),
                "RecordsPerBlock": check_int(f"{o}.records_per_block", self.records_per_block, 1, 1 << 30),
                "Clock": {"SamplingFrequency": check_int(f"{o}.clock.sampling_frequency", k.sampling_frequency, 0),
                          "ReferenceFrequency": check_int(f"{o}.clock.reference_frequency", k.reference_frequency, 0),
                          "ClockGenerator": int(_enum(o, "clock.clock_generator", k.clock_generator, ClockGenerator)),
                          "ReferenceSource": int(_enum(o, "clock.reference_source", k.reference_source,
                                                       ClockReferenceSource)),
                          "DelayAdjustment": check_int(f"{o}.clock.delay_adjustment", k.delay_adjustment, 0),
                          "LowJitterModeEnabled": bool(k.low_jitter_mode_enabled)},
                "Inputs": inputs,
                "TriggerSource": int(_enum(o, "trigger_source", self.trigger_source, TriggerSource)),
                "TriggerSkipFactor": check_int(f"{o}.trigger_skip_factor", self.trigger_skip_factor, *_INT32),
                "TriggerOffsetSamples": check_int(f"{o}.trigger_offset_samples", self.trigger_offset_samples),
                "TriggerSyncPassthrough": bool(self.trigger_sync_passthrough),
                "SampleSkipFactor": check_int(f"{o}.sample_skip_factor", self.sample_skip_factor),
                "EnableFWOCT": bool(self.enable_fwoct), "ResamplingFactor": rf,
                "ClockDelaySamples": check_float(f"{o}.clock_delay_samples", self.clock_delay_samples),
                "ClockEdges": int(_enum(o, "clock_edges", self.clock_edges, ClockEdges)),
                "Background": bg.tolist(),
                "SpectralFilterReal": filt.real.astype(np.float32).tolist(),
                "SpectralFilterImag": filt.imag.astype(np.float32).tolist(),
                "FFTMode": int(_enum(o, "fft_mode", self.fft_mode, FFTMode)),
                "AcquireTimeout": int(round(timeout * 1e9)), "EnableHugepages": bool(self.enable_hugepages),
                "StopOnError": bool(self.stop_on_error),
                "PeriodicTriggerFrequency": check_float(f"{o}.periodic_trigger_frequency",
                                                        self.periodic_trigger_frequency),
                "TestPatternSignal": bool(self.test_pattern_signal)}


class TeledyneAcquisition(_Standalone):
    """Acquires from a Teledyne SP Devices ADQ digitizer (vortex's ``TeledyneAcquisition``).

    :meth:`initialize` opens the board, checks the configuration against it
    (vortex's messages, as :class:`~vortexgo.VortexError`, a RuntimeError)
    and configures its clock, trigger, capture and FWOCT firmware. The
    board DMAs into ADQAPI's own transfer buffers; each block waits for its
    buffer, copies the records into the engine's pinned block and hands the
    buffer back to the board. A buffer overflow (the host fell behind), a
    timeout (``acquire_timeout``) or a board error ends the run with
    vortex's error; ``stop`` leaves the board ready for the next run.

    A block is ``config.shape``, ``(records_per_block, samples_per_record,
    channels_per_sample)`` uint16 (the samples are signed, as vortex's),
    laid out as vortex's: one plane of records per input. Outside an engine
    it is driven as vortex's: :meth:`start`, :meth:`next` (or
    :meth:`next_async`) into the caller's arrays, :meth:`stop`.
    """

    _config_type = TeledyneConfig
    _constructor = "NewTeledyneAcquisition"

    @native
    def prepare(self) -> None:
        """Nothing for a Teledyne board (vortex's ``prepare``); checks the acquisition is open."""
        self._handle().Prepare()

    @property
    def running(self) -> bool:
        """Whether the board captures (started and not stopped since)."""
        if self._h is None or self._closed:
            return False
        return bool(native(self._h.TeledyneBoard)().Running())

    @property
    def board_handle(self) -> int:
        """ADQAPI's handle of the board (0 before :meth:`initialize` and after :meth:`close`)."""
        if self._h is None or self._closed:
            return 0
        return int(native(self._h.TeledyneBoard)().Handle())

    @property
    def board(self) -> Teledyne:
        """The acquisition's board (vortexgo's; vortex gives :attr:`board_handle`)."""
        return Teledyne._borrow(native(self._handle().TeledyneBoard)())

    def _describe(self) -> str:
        c = self._config
        return f"board {c.device}, {c.records_per_block} x {c.samples_per_record} x {c.channels_per_sample} uint16"


