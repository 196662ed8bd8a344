"""AlazarTech digitizers (vortex's ``vortex.acquire.alazar`` module).

The driver's names (:class:`Board`, :func:`enumerate`, :class:`Info` and
its parts, :class:`Channel`, :class:`Coupling` ...) and the configuration
of an :class:`AlazarAcquisition` (:class:`InternalClock`,
:class:`ExternalClock`, :class:`SingleExternalTrigger`,
:class:`DualExternalTrigger`, :class:`Input`, and the options
:class:`AuxIOTriggerOut`, :class:`AuxIOClockOut`, :class:`AuxIOPacerOut`,
:class:`OCTIgnoreBadClock`), with vortex's fields and defaults.
:class:`AlazarConfig` and :class:`AlazarAcquisition` are
``vortexgo.acquire``'s too (vortex's ``vortex.acquire``).

The ATS-SDK library (``libATSApi.so``) is loaded when a board is first
opened: without it, :class:`Board` and :class:`AlazarAcquisition` raise a
:class:`~vortexgo.VortexError` naming ``VORTEXGO_ATSAPI_LIBRARY``, the
environment variable that points at it; importing this module needs
nothing. vortexgo's virtual digitizer (``make virtual``, then
``VORTEXGO_ATSAPI_LIBRARY=build/virtual/libATSApi.so``) stands in for a
board: see ``instruments/virtual/README.md``.

The on-board FFT: :class:`AlazarFFTConfig` and
:class:`AlazarFFTAcquisition` (vortex's ``vortex.acquire`` names too). Both
acquisitions also run outside an engine, as vortex's (``prepare``,
``next``/``next_async`` into the caller's arrays, ``start``, ``stop``).
"""

from __future__ import annotations

import builtins
import datetime
import enum
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from . import _instruments  # noqa: F401 - VORTEXGO_INSTRUMENTS=virtual: the default VORTEXGO_VIRTUAL_DIR
from ._attrs import Config, StrictAttributes, ValueList
from ._core import api
from ._errors import native
from ._alazar_dac import AnalogChannel  # vortex.io.alazar.AnalogChannel (io.AlazarIOConfig's outputs)
from ._alazar_standalone import _AlazarStandalone
from ._validate import check_float, check_int

__all__ = [
    "AnalogChannel",
    "Channel", "Coupling", "ClockEdge", "TriggerSlope", "InfiniteAcquisition", "TriggerRangeTTL",
    "InfoType", "InfoPCIe", "InfoInputCombination", "InfoFeatures", "InfoDspVersion", "InfoDsp", "InfoDac", "Info",
    "Board", "enumerate", "sdk_version",
    "InternalClock", "ExternalClock", "SingleExternalTrigger", "DualExternalTrigger", "Input",
    "AuxIOTriggerOut", "AuxIOClockOut", "AuxIOPacerOut", "OCTIgnoreBadClock", "VectorInput", "VectorOption",
    "AlazarDevice", "AlazarConfig", "AlazarAcquisition", "AlazarFFTConfig", "AlazarFFTAcquisition",
    "acquire_alazar_clock",
]


class Channel(StrictAttributes, enum.IntEnum):
    """An input channel (the SDK's ``CHANNEL_A`` ... ``CHANNEL_P`` bits)."""

    A = 1 << 0
    B = 1 << 1
    C = 1 << 2
    D = 1 << 3
    E = 1 << 4
    F = 1 << 5
    G = 1 << 6
    H = 1 << 7
    I = 1 << 8  # noqa: E741 - the SDK's channel name
    J = 1 << 9
    K = 1 << 10
    L = 1 << 11
    M = 1 << 12
    N = 1 << 13
    O = 1 << 14  # noqa: E741 - the SDK's channel name
    P = 1 << 15


class Coupling(StrictAttributes, enum.IntEnum):
    """Input, clock or trigger coupling."""

    DC = 2
    AC = 1


class ClockEdge(StrictAttributes, enum.IntEnum):
    """The edge an external clock samples on."""

    Rising = 0
    Falling = 1


class TriggerSlope(StrictAttributes, enum.IntEnum):
    """The slope a trigger fires on."""

    Positive = 1
    Negative = 2


for _e in (Channel, Coupling, ClockEdge, TriggerSlope):
    _e.__str__ = enum.Enum.__str__  # type: ignore[method-assign] # "Channel.B", as vortex's enums print

#: Records per acquisition of a capture that runs until stopped.
InfiniteAcquisition = 0x7FFFFFFF
#: The external trigger range that selects TTL.
TriggerRangeTTL = 0


# --- Board information (vortex's Board.info) -----------------------------

@dataclass
class InfoType(Config):
    """A board's model: the SDK's board type ``id`` and its ``model`` name."""

    id: int = 0
    model: str = ""


@dataclass
class InfoPCIe(Config):
    """A board's PCIe link: ``speed`` in units of 2.5 Gb/s, ``width`` in lanes."""

    speed: int = 0
    width: int = 0
    speed_gbps: float = 0.0


@dataclass
class InfoInputCombination(Config):
    """An impedance and input range the board supports."""

    impedance_ohms: int = 0
    input_range_millivolts: int = 0


@dataclass
class InfoFeatures(Config):
    """What a board can do beyond the basics."""

    set_external_clock_level: bool = False
    adc_calibration_sampling_rate: Optional[int] = None
    dual_edge_sampling: bool = False
    sample_skipping: bool = False
    dual_port_memory: bool = False


@dataclass
class InfoDspVersion(Config):
    """An on-board DSP module's version."""

    major: int = 0
    minor: int = 0


@dataclass
class InfoDsp(Config):
    """An on-board DSP module (:class:`AlazarFFTAcquisition`'s FFT when ``type`` is the SDK's DSP_MODULE_FFT)."""

    type: int = 0
    version: InfoDspVersion = field(default_factory=InfoDspVersion)
    max_record_length: int = 0
    supported_channels: int = 0
    fft_time_domain_supported: bool = False
    fft_subtractor_supported: bool = False

    _board: Any = field(default=None, repr=False, compare=False)
    _index: int = field(default=0, repr=False, compare=False)

    def __deepcopy__(self, memo: dict) -> "InfoDsp":
        # The board handle is shared, not copied (it is the board's).
        import copy as _copy

        return InfoDsp(self.type, _copy.deepcopy(self.version, memo), self.max_record_length, self.supported_channels,
                       self.fft_time_domain_supported, self.fft_subtractor_supported, self._board, self._index)

    def max_trigger_rate_per_fft_length(self, fft_length: int) -> float:
        """The highest trigger rate (Hz) the FFT module sustains at ``fft_length`` (the SDK's answer)."""
        if self._board is None:
            raise RuntimeError("InfoDsp.max_trigger_rate_per_fft_length: this module is not a board's (read it from Board.info.dsp)")
        return float(native(self._board.MaxTriggerRatePerFFTLength)(self._index, check_int(
            "InfoDsp.max_trigger_rate_per_fft_length: fft_length", fft_length, 0)))


@dataclass
class InfoDac(Config):
    """The board's galvo DAC (vortex's ``AlazarIO`` drives it): slot sizes in words by slot (from 1)."""

    sequence_count: int = 0
    slot_sizes: dict = field(default_factory=dict)
    volts_per_lsb: float = 5.0 / 32767


@dataclass
class Info(Config):
    """What a :class:`Board` is (vortex's ``Board.info``)."""

    system_index: int = 0
    board_index: int = 0
    serial_number: int = 0
    calibration_date: int = 0
    onboard_memory_size: int = 0
    bits_per_sample: int = 0
    type: InfoType = field(default_factory=InfoType)
    pcie: InfoPCIe = field(default_factory=InfoPCIe)
    supported_sampling_rates: list = field(default_factory=list)
    supported_input_combinations: list = field(default_factory=list)
    max_pretrigger_samples: int = 0
    min_samples_per_record: int = 0
    sample_alignment_divisor: int = 1
    features: InfoFeatures = field(default_factory=InfoFeatures)
    dsp: list = field(default_factory=list)
    dac: InfoDac = field(default_factory=InfoDac)
    _supported_channels: list = field(default_factory=list, repr=False)

    @property
    def supported_channels(self) -> list:
        """The board's channels (read-only)."""
        return list(self._supported_channels)

    @property
    def max_sampling_rate(self) -> int:
        """The highest supported sampling rate."""
        return max(self.supported_sampling_rates)

    def nearest_aligned_samples_per_record(self, target_samples_per_record: float) -> int:
        """``target_samples_per_record`` rounded to the nearest multiple of the alignment."""
        d = self.sample_alignment_divisor
        return int(round(target_samples_per_record / d) * d)

    def smallest_aligned_samples_per_record(self, target_samples_per_record: float) -> int:
        """``target_samples_per_record`` rounded up to a multiple of the alignment."""
        d = self.sample_alignment_divisor
        return int(math.ceil(target_samples_per_record / d) * d)


def _info(record: str, h: Any = None) -> Info:
    """Info from gosrc/driver/alazar's Info as pyapi encodes it (``h``: the pyapi board, for the DSP's queries)."""
    g = json.loads(record)
    f = g["Features"]
    dsp = [InfoDsp(d["Type"], InfoDspVersion(d["Version"]["Major"], d["Version"]["Minor"]), d["MaxRecordLength"],
                   d["SupportedChannels"], d["FFTTimeDomainSupported"], d["FFTSubtractorSupported"], h, k)
           for k, d in builtins.enumerate(g.get("DSP") or [])]
    a = g.get("DAC") or {}
    dac = InfoDac(a.get("SequenceCount", 0), {int(k): v for k, v in (a.get("SlotSizes") or {}).items()},
                  a.get("VoltsPerLSB", 5.0 / 32767))
    return Info(
        system_index=g["SystemIndex"], board_index=g["BoardIndex"], serial_number=g["SerialNumber"],
        calibration_date=g["CalibrationDate"], onboard_memory_size=g["OnboardMemorySize"],
        bits_per_sample=g["BitsPerSample"], type=InfoType(g["Type"]["ID"], g["Type"]["Model"]),
        pcie=InfoPCIe(g["PCIe"]["Speed"], g["PCIe"]["Width"], g["PCIe"]["SpeedGbps"]),
        supported_sampling_rates=list(g["SupportedSamplingRates"] or []),
        supported_input_combinations=[InfoInputCombination(c["ImpedanceOhms"], c["InputRangeMillivolts"])
                                      for c in g["SupportedInputCombinations"] or []],
        max_pretrigger_samples=g["MaxPretriggerSamples"], min_samples_per_record=g["MinSamplesPerRecord"],
        sample_alignment_divisor=g["SampleAlignmentDivisor"],
        features=InfoFeatures(f["SetExternalClockLevel"], f["ADCCalibrationSamplingRate"] or None,
                              f["DualEdgeSampling"], f["SampleSkipping"], f["DualPortMemory"]),
        dsp=dsp, dac=dac, _supported_channels=[Channel(c) for c in g["SupportedChannels"] or []])


class Board(StrictAttributes):
    """An AlazarTech digitizer (vortex's ``alazar.Board``): ``Board()`` is an
    unopened board, ``Board(system_index, board_index)`` opens one (both from 1).

    Raises :class:`~vortexgo.VortexError` when the board is not found, or
    when the ATS-SDK library is missing (the message names
    ``VORTEXGO_ATSAPI_LIBRARY``).
    """

    def __init__(self, system_index: Optional[int] = None, board_index: Optional[int] = None) -> None:
        self._h = None
        self._info = Info()
        if system_index is None and board_index is None:
            return
        if system_index is None or board_index is None:
            raise TypeError("Board(system_index, board_index): give both indices, or none for an unopened board")
        s, b = check_int("Board: system_index", system_index, 0), check_int("Board: board_index", board_index, 0)
        self._adopt(native(api.OpenAlazarBoard)(s, b))

    def _adopt(self, h: Any) -> None:
        self._h = h
        self._info = _info(h.Info(), h)

    @property
    def handle(self) -> int:
        """The SDK's handle of the board (0 when not opened)."""
        return int(self._h.Handle()) if self._h is not None else 0

    @property
    def valid(self) -> bool:
        """Whether the board is open."""
        return self._h is not None and bool(self._h.Valid())

    @property
    def info(self) -> Info:
        """What the board is."""
        return self._info

    def __repr__(self) -> str:
        if self._h is None:
            return "<alazar.Board (not opened)>"
        i = self._info
        return f"<alazar.Board {i.system_index}-{i.board_index} {i.type.model} ({i.serial_number})>"


def sdk_version() -> tuple[str, str]:
    """Load the ATS-SDK if it is not loaded yet; return its version and the
    library's path (``("7.5.0", "/usr/lib/libATSApi.so")``). vortexgo's, not
    vortex's: ``python -m vortexgo hardware-check`` prints it.

    Raises :class:`~vortexgo.VortexError` naming ``VORTEXGO_ATSAPI_LIBRARY``
    without the library, or the version found when it is older than 7.0."""
    v = native(api.AlazarLoad)()
    return v, api.AlazarLibrary()


def enumerate() -> list[Board]:  # noqa: A001 - vortex's name
    """Every board of every system, opened (vortex's ``alazar.enumerate``)."""
    out = []
    for s, b in json.loads(native(api.AlazarBoardIDs)()):
        out.append(Board(s, b))
    return out


# --- Acquisition configuration (vortex's AlazarConfig parts) -------------

def _enum(owner: str, name: str, v: Any, cls: type) -> Any:
    try:
        return cls(v)
    except ValueError:
        raise ValueError(f"{owner}.{name}={v!r}, expected a {cls.__name__}") from None


@dataclass
class InternalClock(Config):
    """The board's internal sample clock at ``samples_per_second``."""

    samples_per_second: int = 800_000_000

    def __repr__(self) -> str:
        return f"InternalClock(samples_per_second={self.samples_per_second})"


@dataclass
class ExternalClock(Config):
    """An external sample clock (a swept source's k-clock): ``level_ratio`` in
    [0, 1], ``dual`` for dual-edge sampling on boards that have it."""

    level_ratio: float = 0.5
    coupling: Coupling = Coupling.AC
    edge: ClockEdge = ClockEdge.Rising
    dual: bool = False

    def __repr__(self) -> str:
        return (f"ExternalClock(coupling={self.coupling!r}, dual={self.dual!r}, edge={self.edge!r}, "
                f"level_ratio={self.level_ratio:0.2f})")


@dataclass
class SingleExternalTrigger(Config):
    """Trigger on one edge of the external trigger input (``range_millivolts``
    0 is TTL; ``level_ratio`` in [-1, 1])."""

    range_millivolts: int = 2500
    level_ratio: float = 0.09
    delay_samples: int = 80
    slope: TriggerSlope = TriggerSlope.Positive
    coupling: Coupling = Coupling.DC

    def __repr__(self) -> str:
        return (f"SingleExternalTrigger(range_millivolts={self.range_millivolts}, level_ratio={self.level_ratio:0.2f}, "
                f"delay_samples={self.delay_samples}, slope={self.slope!r}, coupling={self.coupling!r})")


@dataclass
class DualExternalTrigger(Config):
    """Trigger on both edges of the external trigger input (a bidirectional
    swept source): ``initial_slope`` first, then the other."""

    range_millivolts: int = 2500
    level_ratios: list = field(default_factory=lambda: [0.09, 0.09])
    delay_samples: int = 80
    initial_slope: TriggerSlope = TriggerSlope.Positive
    coupling: Coupling = Coupling.DC

    def __repr__(self) -> str:
        return (f"DualExternalTrigger(range_millivolts={self.range_millivolts}, level_ratios={list(self.level_ratios)!r}, "
                f"delay_samples={self.delay_samples}, initial_slope={self.initial_slope!r}, coupling={self.coupling!r})")


@dataclass
class Input(Config):
    """One input channel: its range, impedance and coupling."""

    channel: Channel = Channel.B
    range_millivolts: int = 400
    impedance_ohms: int = 50
    coupling: Coupling = Coupling.DC

    @property
    def bytes_per_sample(self) -> int:
        """Bytes of one sample in a buffer, 2 (16-bit words)."""
        return 2

    def __repr__(self) -> str:
        return (f"Input(channel={self.channel!r}, range_millivolts={self.range_millivolts}, "
                f"impedance_ohms={self.impedance_ohms}, coupling={self.coupling!r}, bytes_per_samples=2)")


@dataclass
class AuxIOTriggerOut(Config):
    """Option: the AUX connector outputs the trigger."""

    def __repr__(self) -> str:
        return "AuxIOTriggerOut"


@dataclass
class AuxIOClockOut(Config):
    """Option: the AUX connector outputs the sample clock."""

    def __repr__(self) -> str:
        return "AuxIOClockOut"


@dataclass
class AuxIOPacerOut(Config):
    """Option: the AUX connector outputs the sample clock divided by ``divider``."""

    divider: int = 2

    def __repr__(self) -> str:
        return f"AuxIOPacerOut(divider={self.divider})"


@dataclass
class OCTIgnoreBadClock(Config):
    """Option: the SDK's OCT ignore-bad-clock, with its good and bad intervals."""

    good_seconds: float = 4.95e-6
    bad_seconds: float = 4.95e-6

    def __repr__(self) -> str:
        return f"OCTIgnoreBadClock(good_seconds={self.good_seconds}, bad_seconds={self.bad_seconds})"


class VectorInput(ValueList):
    """vortex's list of :class:`Input` (``AlazarConfig.inputs``)."""

    __slots__ = ()


class VectorOption(ValueList):
    """vortex's list of options (``AlazarConfig.options``)."""

    __slots__ = ()


@dataclass
class AlazarDevice(Config):
    """Which board an :class:`AlazarConfig` opens (both from 1)."""

    system_index: int = 1
    board_index: int = 1

    def __repr__(self) -> str:
        return f"AlazarDevice(system_index={self.system_index}, board_index={self.board_index})"


_Clock = Union[InternalClock, ExternalClock]
_Trigger = Union[SingleExternalTrigger, DualExternalTrigger]
_Option = Union[AuxIOTriggerOut, AuxIOClockOut, AuxIOPacerOut, OCTIgnoreBadClock]


@dataclass
class AlazarConfig(Config):
    """Configuration of an :class:`AlazarAcquisition` (vortex's fields and defaults).

    Attributes:
        samples_per_record: samples of one record (a multiple of the board's
            ``info.sample_alignment_divisor``, at least its ``min_samples_per_record``).
        records_per_block: records of each block; the engine's
            ``EngineConfig.records_per_block`` must equal it.
        device: the board.
        clock: :class:`InternalClock` or :class:`ExternalClock`.
        trigger: :class:`SingleExternalTrigger` or :class:`DualExternalTrigger`.
        inputs: the :class:`Input` channels, at least one.
        options: AUX I/O and OCT options.
        resampling: the sample indices the board keeps (sample skipping), or empty.
        acquire_timeout: the longest wait for one block (a ``datetime.timedelta``, or seconds).
        stop_on_error: stop the board at the first error.
    """

    samples_per_record: int = 1024
    records_per_block: int = 1000
    device: AlazarDevice = field(default_factory=AlazarDevice)
    clock: Any = field(default_factory=InternalClock)
    trigger: Any = field(default_factory=SingleExternalTrigger)
    inputs: VectorInput = field(default_factory=VectorInput)
    options: VectorOption = field(default_factory=VectorOption)
    resampling: list = field(default_factory=list)
    acquire_timeout: datetime.timedelta = datetime.timedelta(seconds=1)
    stop_on_error: bool = True

    @property
    def channels_per_sample(self) -> int:
        """Interleaved channels per sample, one per input."""
        return len(self.inputs)

    @property
    def shape(self) -> list[int]:
        """``[records_per_block, samples_per_record, channels_per_sample]``."""
        return [self.records_per_block, self.samples_per_record, self.channels_per_sample]

    @property
    def bytes_per_multisample(self) -> int:
        """Bytes of one sample of every channel."""
        return sum(i.bytes_per_sample for i in self.inputs)

    @property
    def channel_mask(self) -> int:
        """The inputs' channels together."""
        m = 0
        for i in self.inputs:
            m |= int(i.channel)
        return m

    @property
    def samples_per_second_is_known(self) -> bool:
        """Whether the clock says the rate (an internal clock)."""
        return isinstance(self.clock, InternalClock)

    @property
    def samples_per_second(self) -> int:
        """The internal clock's rate; an external clock's is not known (RuntimeError)."""
        if not self.samples_per_second_is_known:
            raise RuntimeError("samples per second is not defined with current clock setting")
        return self.clock.samples_per_second

    @samples_per_second.setter
    def samples_per_second(self, v: int) -> None:
        if not self.samples_per_second_is_known:
            raise RuntimeError("samples per second is not defined with current clock setting")
        self.clock.samples_per_second = v

    @property
    def recommended_minimum_records_per_block(self) -> int:
        """Records that make a buffer of at least 1 MiB (the SDK's advice for DMA throughput)."""
        per_record = self.bytes_per_multisample * self.samples_per_record
        return max(1, math.ceil((1 << 20) / per_record)) if per_record else 1

    def validate(self) -> None:
        """Check the configuration against its board (opening it): vortex's messages, as RuntimeError."""
        if not self.inputs:
            raise RuntimeError("no inputs are configured")
        chans = [i.channel for i in self.inputs]
        for i in range(len(chans)):
            for j in range(i):
                if chans[i] == chans[j]:
                    raise RuntimeError(f"cannot configure the same channel as two different inputs: "
                                       f"input {i} = {Channel(chans[i]).name} and input {j} = {Channel(chans[j]).name}")
        info = Board(self.device.system_index, self.device.board_index).info
        if self.samples_per_record % info.sample_alignment_divisor != 0:
            raise RuntimeError(f"samples per record must be evenly divisible by {info.sample_alignment_divisor}: "
                               f"{self.samples_per_record}")
        if self.samples_per_record < info.min_samples_per_record:
            raise RuntimeError(f"samples per record must equal or exceed {info.min_samples_per_record}: "
                               f"{self.samples_per_record}")
        if self.resampling and len(self.resampling) != self.samples_per_record:
            raise RuntimeError(f"samples per record does not match number of resampled samples: "
                               f"{self.samples_per_record} vs {len(self.resampling)}")

    def _record(self) -> dict:
        """The Go acquire.AlazarConfig's fields, checked."""
        o = "AlazarConfig"
        c = self.clock
        if isinstance(c, InternalClock):
            clock = {"Kind": 0, "SamplesPerSecond": check_int(f"{o}.clock.samples_per_second", c.samples_per_second, 1)}
        elif isinstance(c, ExternalClock):
            clock = {"Kind": 1, "LevelRatio": check_float(f"{o}.clock.level_ratio", c.level_ratio, None),
                     "Coupling": int(_enum(o, "clock.coupling", c.coupling, Coupling)),
                     "Edge": int(_enum(o, "clock.edge", c.edge, ClockEdge)), "Dual": bool(c.dual)}
        else:
            raise TypeError(f"{o}.clock={c!r}, expected an alazar.InternalClock or alazar.ExternalClock")
        t = self.trigger
        if isinstance(t, SingleExternalTrigger):
            levels, slope, kind = [t.level_ratio, t.level_ratio], t.slope, 0
        elif isinstance(t, DualExternalTrigger):
            levels, slope, kind = list(t.level_ratios), t.initial_slope, 1
            if len(levels) != 2:
                raise ValueError(f"{o}.trigger.level_ratios={t.level_ratios!r}, expected 2 levels")
        else:
            raise TypeError(f"{o}.trigger={t!r}, expected an alazar.SingleExternalTrigger or alazar.DualExternalTrigger")
        trigger = {"Kind": kind, "RangeMillivolts": check_int(f"{o}.trigger.range_millivolts", t.range_millivolts, 0),
                   "LevelRatios": [check_float(f"{o}.trigger.level_ratios", x, None) for x in levels],
                   "DelaySamples": check_int(f"{o}.trigger.delay_samples", t.delay_samples, 0),
                   "Slope": int(_enum(o, "trigger.slope", slope, TriggerSlope)),
                   "Coupling": int(_enum(o, "trigger.coupling", t.coupling, Coupling))}
        inputs = []
        for k, i in builtins.enumerate(self.inputs):
            if not isinstance(i, Input):
                raise TypeError(f"{o}.inputs[{k}]={i!r}, expected an alazar.Input")
            inputs.append({"Channel": int(_enum(o, f"inputs[{k}].channel", i.channel, Channel)),
                           "RangeMillivolts": check_int(f"{o}.inputs[{k}].range_millivolts", i.range_millivolts, 0),
                           "ImpedanceOhms": check_int(f"{o}.inputs[{k}].impedance_ohms", i.impedance_ohms, 0),
                           "Coupling": int(_enum(o, f"inputs[{k}].coupling", i.coupling, Coupling))})
        options = []
        for k, p in builtins.enumerate(self.options):
            if isinstance(p, AuxIOTriggerOut):
                options.append({"Kind": 0})
            elif isinstance(p, AuxIOClockOut):
                options.append({"Kind": 1})
            elif isinstance(p, AuxIOPacerOut):
                options.append({"Kind": 2, "Divider": check_int(f"{o}.options[{k}].divider", p.divider, 0, 2**32 - 1)})
            elif isinstance(p, OCTIgnoreBadClock):
                options.append({"Kind": 3, "GoodSeconds": check_float(f"{o}.options[{k}].good_seconds", p.good_seconds),
                                "BadSeconds": check_float(f"{o}.options[{k}].bad_seconds", p.bad_seconds)})
            else:
                raise TypeError(f"{o}.options[{k}]={p!r}, expected an alazar.AuxIOTriggerOut, AuxIOClockOut, "
                                "AuxIOPacerOut or OCTIgnoreBadClock")
        timeout = self.acquire_timeout
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        timeout = check_float(f"{o}.acquire_timeout", timeout, 0.0)
        return {"SystemIndex": check_int(f"{o}.device.system_index", self.device.system_index, 0, 2**32 - 1),
                "BoardIndex": check_int(f"{o}.device.board_index", self.device.board_index, 0, 2**32 - 1),
                "SamplesPerRecord": check_int(f"{o}.samples_per_record", self.samples_per_record, 1, 2**32 - 1),
                "RecordsPerBlock": check_int(f"{o}.records_per_block", self.records_per_block, 1, 2**32 - 1),
                "Clock": clock, "Trigger": trigger, "Inputs": inputs, "Options": options,
                "Resampling": [check_int(f"{o}.resampling", r, 0) for r in self.resampling],
                "AcquireTimeout": int(round(timeout * 1e9)), "StopOnError": bool(self.stop_on_error)}


class AlazarAcquisition(_AlazarStandalone):
    """Acquires from an AlazarTech digitizer (vortex's ``AlazarAcquisition``).

    :meth:`initialize` opens the board, checks the configuration against it
    (vortex's messages, as :class:`~vortexgo.VortexError`, a RuntimeError)
    and configures it. In an engine, each block's pinned buffer is posted to
    the board ``preload_count`` blocks ahead and the board DMAs the records
    straight into it: no host copy. A buffer overflow (the host fell
    behind), a timeout (``acquire_timeout``) or a board error ends the run
    with the SDK's error; ``stop`` leaves the board ready for the next run.

    A block is ``config.shape``, ``(records_per_block, samples_per_record,
    channels_per_sample)`` uint16, the channels interleaved sample by sample
    in the order of ``config.inputs`` (vortex's layout); ``samples_per_record``
    counts the samples of one channel. Outside an engine it is driven as
    vortex's: :meth:`prepare`, :meth:`next_async` (or :meth:`next`) into the
    caller's arrays, :meth:`start`, :meth:`stop`.
    """

    _config_type = AlazarConfig
    _constructor = "NewAlazarAcquisition"

    @property
    def running(self) -> bool:
        """Whether the board captures (started and not stopped since)."""
        if self._h is None or self._closed:
            return False
        return bool(native(self._h.AlazarBoard)().Running())

    @property
    def board(self) -> Board:
        """The acquisition's board."""
        b = Board()
        b._adopt(native(self._handle().AlazarBoard)())
        return b

    def _describe(self) -> str:
        c = self._config
        return (f"board {c.device.system_index}-{c.device.board_index}, "
                f"{c.records_per_block} x {c.samples_per_record} x {c.channels_per_sample} uint16")


def _complex_array(owner: str, v: Any) -> "np.ndarray":
    a = np.asarray(v if v is not None else [], dtype=np.complex64).reshape(-1)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{owner}: non-finite values, expected a finite complex filter")
    return a


@dataclass
class AlazarFFTConfig(AlazarConfig):
    """Configuration of an :class:`AlazarFFTAcquisition` (vortex's fields and
    defaults): an :class:`AlazarConfig` plus the on-board FFT's settings.

    Attributes:
        fft_length: the FFT's length, a power of 2 at least
            ``samples_per_record`` (the record is zero-padded to it) and at
            most the module's ``max_record_length``.
        spectral_filter: the complex window the board multiplies each
            record by (``fft_length`` values: window times dispersion
            phasor, zero past the record), or empty for a flat window.
        include_time_domain: each A-scan starts with its time-domain record
            (``fft_length`` signed samples), before the FFT's bins.
        background: subtracted from each record before the window (signed
            samples, ``fft_length`` of them), or empty.

    Each A-scan holds ``samples_per_ascan`` uint16 values: the FFT's first
    ``fft_length / 2`` bins in the SDK's U16_LOG format, 1/256 dB a count
    (``LinearTransform(1/256, ...)`` turns them into decibels).
    """

    fft_length: int = 1024
    spectral_filter: Any = field(default_factory=lambda: np.zeros(0, np.complex64))
    include_time_domain: bool = False
    background: Any = field(default_factory=lambda: np.zeros(0, np.int16))

    @property
    def samples_per_ascan(self) -> int:
        """The length of an A-scan, ``fft_length / 2`` (plus ``fft_length`` with the time domain)."""
        return self.fft_length + self.fft_length // 2 if self.include_time_domain else self.fft_length // 2

    @property
    def buffer_bytes_per_record(self) -> int:
        """The bytes one record takes in the board's buffer (``samples_per_ascan * bytes_per_multisample``)."""
        return self.samples_per_ascan * self.bytes_per_multisample

    @property
    def ascans_per_block(self) -> int:
        """vortex's other name for ``records_per_block``."""
        return self.records_per_block

    @ascans_per_block.setter
    def ascans_per_block(self, v: int) -> None:
        self.records_per_block = v

    @property
    def shape(self) -> list[int]:
        """``[ascans_per_block, samples_per_ascan, channels_per_sample]``."""
        return [self.records_per_block, self.samples_per_ascan, self.channels_per_sample]

    def validate(self) -> None:
        """vortex's checks against the board (opening it), as RuntimeError or ValueError."""
        super().validate()
        filt = _complex_array("AlazarFFTConfig.spectral_filter", self.spectral_filter)
        bg = np.asarray(self.background).reshape(-1)
        if filt.size and filt.size != self.fft_length:
            raise ValueError(f"spectral filter and FFT length mismatch: {filt.size} vs {self.fft_length}")
        if bg.size and bg.size != self.fft_length:
            raise ValueError(f"background and FFT length mismatch: {bg.size} vs {self.fft_length}")
        dsp = [d for d in Board(self.device.system_index, self.device.board_index).info.dsp if d.type == 0x10000]
        if not dsp:
            raise RuntimeError("FFT module is not available")
        if self.fft_length > dsp[0].max_record_length:
            raise ValueError(f"FFT length exceeds maximum size: {self.fft_length} > {dsp[0].max_record_length}")
        n = self.fft_length
        if n <= 0 or n & (n - 1):
            raise ValueError(f"samples/A-scan (FFT length) is not a power of 2: {n} (consider {1 << max(n - 1, 0).bit_length()})")

    def _record(self) -> dict:
        r = super()._record()
        o = "AlazarFFTConfig"
        filt = _complex_array(f"{o}.spectral_filter", self.spectral_filter)
        bg = np.asarray(self.background if self.background is not None else [])
        if bg.size and (bg.dtype.kind not in "iuf" or (bg.dtype.kind in "iu" and (bg.min() < -32768 or bg.max() > 32767))
                        or (bg.dtype.kind == "f" and not np.all(np.isfinite(bg)))):
            raise ValueError(f"{o}.background: expected int16 values (signed samples)")
        # Floats are cast as vortex's int16 tensor takes them (NumPy's unsafe cast, pybind's
        # forcecast): vortex's live_view_alazar_fft.py passes float64 (a record's mean, shifted,
        # concatenated with zeros)
        if bg.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                bg = bg.astype(np.int16)
        r.update({"FFTLength": check_int(f"{o}.fft_length", self.fft_length, 1, 1 << 30),
                  "SpectralFilterReal": filt.real.astype(np.float32).tolist(),
                  "SpectralFilterImag": filt.imag.astype(np.float32).tolist(),
                  "IncludeTimeDomain": bool(self.include_time_domain),
                  "Background": bg.reshape(-1).astype(np.int16).tolist()})
        return r


class AlazarFFTAcquisition(AlazarAcquisition):
    """Acquires through an AlazarTech digitizer's on-FPGA FFT (vortex's
    ``AlazarFFTAcquisition``): the board windows, FFTs and log-scales each
    record (channel A) and DMAs the A-scans, ``samples_per_ascan`` uint16
    values each, straight into the engine's blocks. Pair it with a
    :class:`~vortexgo.process.CopyProcessor` (vortex's demo does).
    Everything else is :class:`AlazarAcquisition`'s.
    """

    _config_type = AlazarFFTConfig
    _constructor = "NewAlazarFFTAcquisition"

    def _describe(self) -> str:
        c = self._config
        return (f"board {c.device.system_index}-{c.device.board_index}, FFT {c.fft_length}, "
                f"{c.records_per_block} x {c.samples_per_ascan} x {c.channels_per_sample} uint16")


def acquire_alazar_clock(source: Any, acquire_config: AlazarConfig, clock_channel: Channel,
                         log: Any = None) -> tuple[int, np.ndarray]:
    """Digitize one sweep of a swept source's k-clock (vortex's ``engine.acquire_alazar_clock``).

    The board of ``acquire_config`` samples ``clock_channel`` at its highest
    internal rate for one record spanning the sweep's active part
    (``source.duty_cycle`` of a trigger period at ``source.triggers_per_second``,
    rounded up to the board's alignment), with ``acquire_config``'s trigger
    and its first input's range, impedance and coupling (no options).
    Returns ``(samples_per_second, clock)``, ``clock`` a uint16 array of the
    record; :func:`~vortexgo.source.find_rising_edges` finds its edges.
    ``log`` is accepted for vortex's signature.
    """
    del log
    if not isinstance(acquire_config, AlazarConfig):
        raise TypeError(f"acquire_alazar_clock: acquire_config={acquire_config!r}, expected an AlazarConfig")
    ch = _enum("acquire_alazar_clock", "clock_channel", clock_channel, Channel)
    cfg = AlazarConfig.copy(acquire_config)
    if not cfg.inputs:
        cfg.inputs.append(Input(ch))
    rate, clock = json.loads(native(api.AcquireAlazarClock)(
        json.dumps(AlazarConfig._record(cfg)), check_float("acquire_alazar_clock: source.duty_cycle", source.duty_cycle),
        check_int("acquire_alazar_clock: source.triggers_per_second", source.triggers_per_second, 1), int(ch)))
    return int(rate), np.asarray(clock, dtype=np.uint16)
