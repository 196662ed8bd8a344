"""MachDSP digital galvo servos (vortex's ``vortex.io.machdsp``).

A MachDSP servo controller takes the galvo waveforms as 16-bit codes over a
serial port (USB CDC; ``/dev/ttyACM0`` on Linux), with no vendor library:
vortexgo speaks vortex's protocol through the operating system's termios API
(raw, 8N1, vortex's 12 Mbaud by default). :class:`~vortexgo.io.MachDSPIO`
streams an engine's waveforms to it, configured by a
:class:`~vortexgo.io.MachDSPIOConfig` whose two outputs are :class:`Channel`
(x, y); :class:`MachDSP` drives the servo call by call.

The enumerations' members are module names too, as vortex exports them
(``machdsp.StreamContinue``, ``machdsp.Loop``, ``machdsp.Blocks`` ...). vortex's
exports also rebind ``Error``, ``Ignore``, ``Underflow`` and ``Overflow``, whose
members several enumerations share: here ``Error`` and ``Ignore`` are
:class:`Overflow`'s (the last exported, as in vortex), while ``Underflow`` and
``Overflow`` stay the enumerations (in vortex they end up as
``SettingsEntry.Underflow`` and ``SettingsEntry.Overflow``).
"""

from __future__ import annotations

import datetime
import enum
import threading
from typing import Any, Callable, TypeVar, Union

from ._attrs import Config, NoCopy, StrictAttributes
from ._core import api, forked
from ._errors import native, release_on_collect
from ._layouts import MACHDSP_INFO, MACHDSP_SETTINGS, MACHDSP_STATUS
from ._validate import check_bool, check_float, check_int

__all__ = ["StreamState", "Underflow", "Overflow", "SettingsEntry", "StreamStatus", "Settings", "Info", "Version",
           "Channel", "MachDSP",
           "StreamContinue", "StreamExit", "StreamAbort", "Error", "Loop", "Hold", "Ignore", "Blocks",
           "EnableReceive", "TriggerEdge", "TriggerInternal", "SampleDivisor", "AuxDivisor"]


class StreamState(StrictAttributes, enum.IntEnum):
    """The stream's state in a :class:`StreamStatus`."""

    StreamContinue = 0
    StreamExit = 1
    StreamAbort = 2


class Underflow(StrictAttributes, enum.IntEnum):
    """What the servo does when its output buffer runs dry (MachDSPIO: ``Error``)."""

    Error = 1
    Loop = 2
    Hold = 3
    Ignore = 4


class Overflow(StrictAttributes, enum.IntEnum):
    """What the servo does when its input buffer fills (MachDSPIO: ``Error``)."""

    Error = 1
    Ignore = 2


class SettingsEntry(StrictAttributes, enum.IntEnum):
    """A setting :meth:`MachDSP.write_setting` changes."""

    Underflow = 1
    Overflow = 2
    Blocks = 3
    EnableReceive = 4
    TriggerEdge = 5
    TriggerInternal = 6
    SampleDivisor = 7
    AuxDivisor = 8


StreamContinue, StreamExit, StreamAbort = StreamState
Loop, Hold = Underflow.Loop, Underflow.Hold
Error, Ignore = Overflow.Error, Overflow.Ignore
Blocks, EnableReceive, TriggerEdge = SettingsEntry.Blocks, SettingsEntry.EnableReceive, SettingsEntry.TriggerEdge
TriggerInternal, SampleDivisor = SettingsEntry.TriggerInternal, SettingsEntry.SampleDivisor
AuxDivisor = SettingsEntry.AuxDivisor


class _Record(StrictAttributes):
    """A value record (vortex's plain structs): its fields are read-write attributes."""

    __slots__ = ()
    _fields: tuple = ()

    def __init__(self, **kw: Any) -> None:
        for f in self._fields:
            setattr(self, f, kw.pop(f, 0))
        if kw:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(kw)}")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self._fields)})"


class StreamStatus(_Record):
    """The stream's progress (:meth:`MachDSP.stream_status`)."""

    _fields = ("tx_block_idx", "rx_block_idx", "tx_block_valid", "rx_block_valid", "state")
    __slots__ = _fields


class Settings(_Record):
    """The servo's settings (:meth:`MachDSP.read_settings`)."""

    _fields = ("underflow_behavior", "overflow_behavior", "block_count", "block_samples", "max_buffer_samples",
               "enable_receive", "trigger_edge", "internal_trigger", "sample_divisor", "max_sample_divisor",
               "aux_divisor", "max_aux_divisor")
    __slots__ = _fields


class Version(_Record):
    """The firmware's version."""

    _fields = ("major", "minor", "features")
    __slots__ = _fields


class Info(_Record):
    """What opening the servo learned: its version, the codes' scale (``zero_point`` 32768,
    ``per_lsb`` 1/32767) and the settings' limits."""

    _fields = ("version", "zero_point", "per_lsb", "max_buffer_samples", "max_sample_divisor", "max_aux_divisor")
    __slots__ = _fields


def _info(r: Any) -> Info:
    return Info(version=Version(major=r.major, minor=r.minor, features=r.features), zero_point=r.zero_point,
                per_lsb=r.per_lsb, max_buffer_samples=r.max_buffer_samples,
                max_sample_divisor=r.max_sample_divisor, max_aux_divisor=r.max_aux_divisor)


class Channel(Config):
    """One galvo of a :class:`~vortexgo.io.MachDSPIOConfig` (vortex's ``machdsp.Channel``):
    ``Channel(logical_units_per_physical_unit=1.0, stream=0, channel=0, degree_scale=15)``.
    A stream value ``v`` becomes the code ``clip(v / logical_units_per_physical_unit,
    -degree_scale, degree_scale) / degree_scale * 32767 + 32768``. ``stream`` must be
    ``Block.StreamIndex.GalvoTarget`` in an engine (vortex's default, 0, is the counter)."""

    __slots__ = ("_scale", "_stream", "_channel", "_degrees")

    def __init__(self, logical_units_per_physical_unit: float = 1.0, stream: int = 0, channel: int = 0,
                 degree_scale: float = 15) -> None:
        self.logical_units_per_physical_unit = logical_units_per_physical_unit
        self.stream = stream
        self.channel = channel
        self.degree_scale = degree_scale

    @property
    def stream(self) -> int:
        """The block stream carried (vortex's ``Block.StreamIndex``)."""
        return self._stream

    @stream.setter
    def stream(self, v: Any) -> None:
        self._stream = check_int("Channel.stream", v, 0)

    @property
    def channel(self) -> int:
        """The column of the stream carried."""
        return self._channel

    @channel.setter
    def channel(self, v: Any) -> None:
        self._channel = check_int("Channel.channel", v, 0)

    @property
    def logical_units_per_physical_unit(self) -> float:
        """Stream units per servo unit (a stream value divided by this is in servo units)."""
        return self._scale

    @logical_units_per_physical_unit.setter
    def logical_units_per_physical_unit(self, v: Any) -> None:
        f = check_float("Channel.logical_units_per_physical_unit", v)
        if f == 0:
            raise ValueError("Channel.logical_units_per_physical_unit=0, expected a non-zero number")
        self._scale = f

    @property
    def degree_scale(self) -> float:
        """The servo units of the full-scale code (15)."""
        return self._degrees

    @degree_scale.setter
    def degree_scale(self, v: Any) -> None:
        f = check_float("Channel.degree_scale", v)
        if not f > 0:
            raise ValueError(f"Channel.degree_scale={f}, expected a positive number")
        self._degrees = f

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._record() == other._record()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def _record(self) -> dict:
        return {"Stream": self.stream, "Channel": self.channel,
                "LogicalUnitsPerPhysicalUnit": self.logical_units_per_physical_unit, "DegreeScale": self.degree_scale}

    def __repr__(self) -> str:
        return (f"Channel({self.logical_units_per_physical_unit}, stream={self.stream}, channel={self.channel}, "
                f"degree_scale={self.degree_scale})")


T = TypeVar("T")


def _interruptible(cancel: Callable[[], Any], fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, a call that may wait on the serial port (up to the timeout, per read
    and write), made interruptible by Ctrl-C: on the main thread the call runs on a helper
    thread while this one waits, so a KeyboardInterrupt is raised within a fraction of a
    second; ``cancel`` (the driver's Cancel) then ends the call's wait on the port, the
    helper is joined (the port is never left to a call still running) and the
    KeyboardInterrupt propagates. Signals reach only the main thread: elsewhere, and in a
    child of ``fork()`` (where ``fn`` raises ForkError at once), ``fn`` runs here."""
    if threading.current_thread() is not threading.main_thread() or forked():
        return fn(*args)
    out: list = []

    def run() -> None:
        try:
            out.append((True, fn(*args)))
        except BaseException as e:  # handed to the caller
            out.append((False, e))

    t = threading.Thread(target=run, name="vortexgo-machdsp-call", daemon=True)
    t.start()
    try:
        t.join()  # a lock wait: a signal interrupts it on POSIX
    except KeyboardInterrupt:
        while t.is_alive():  # cancel until the call ends (it may not have reached the port yet)
            cancel()
            try:
                t.join(0.05)
            except KeyboardInterrupt:
                pass
        raise
    ok, v = out[0]
    if ok:
        return v
    raise v


def _u16(owner: str, v: Any) -> int:
    return check_int(owner, v, 0, 0xFFFF)


class MachDSP(NoCopy, StrictAttributes):
    """One servo, call by call (vortex's ``vortex.io.machdsp.MachDSP``): ``MachDSP(port,
    baud_rate)`` opens the serial port (refused with :class:`~vortexgo.InUseError` while
    another MachDSP, here or in another process, has it open), greets the servo and reads its
    limits. The servo's errors raise :class:`~vortexgo.VortexError` with vortex's text
    (``protocol error: SAI Tx (3): underflow (1)``), and so do the line's (``serial read:
    timeout``, ``serial read: End of file``). The port is closed by :meth:`close` or when the
    object is collected."""

    _copy_hint = "a serial port is opened once; make another MachDSP"

    def __init__(self, port: str, baud_rate: int) -> None:
        if not isinstance(port, str):
            raise TypeError(f"MachDSP(port={port!r}), expected a str")
        self._h = native(api.OpenMachDSP)(port, check_int("MachDSP.baud_rate", baud_rate, 1, 2**31 - 1))
        self._fin = release_on_collect(self, self._h.Close, "a MachDSP port")

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``native(fn)(*args)``, interruptible by Ctrl-C (the call in progress canceled)."""
        return _interruptible(self._h.Cancel, native(fn), *args)

    def ping(self, index: int = 0) -> int:
        """Ping the servo with ``index``; returns its answer (the index)."""
        return int(self._call(self._h.Ping, _u16("MachDSP.ping: index", index)))

    def stream_start(self) -> None:
        """Start streaming."""
        self._call(self._h.StreamStart)

    def stream_stop(self) -> None:
        """Stop streaming."""
        self._call(self._h.StreamStop)

    def stream_reset(self) -> None:
        """Reset the stream (its buffer and positions)."""
        self._call(self._h.StreamReset)

    def stream_status(self) -> StreamStatus:
        """The stream's progress and state."""
        r = self._call(MACHDSP_STATUS.read, self._h.StreamStatus)
        return StreamStatus(tx_block_idx=r.tx_block_idx, rx_block_idx=r.rx_block_idx,
                            tx_block_valid=r.tx_block_valid, rx_block_valid=r.rx_block_valid,
                            state=StreamState(r.state))

    def write_setting(self, setting: SettingsEntry, value0: int, value1: int = 0, value2: int = 0) -> None:
        """Write one setting with up to three values."""
        o = "MachDSP.write_setting"
        self._call(self._h.WriteSetting, int(SettingsEntry(setting)), _u16(f"{o}: value0", value0),
                                     _u16(f"{o}: value1", value1), _u16(f"{o}: value2", value2))

    def read_settings(self) -> Settings:
        """The servo's settings."""
        r = self._call(MACHDSP_SETTINGS.read, self._h.ReadSettings)
        d = r._asdict()
        d["underflow_behavior"] = Underflow(d["underflow_behavior"])
        d["overflow_behavior"] = Overflow(d["overflow_behavior"])
        return Settings(**d)

    def reset_settings(self) -> None:
        """Restore the servo's default settings."""
        self._call(self._h.ResetSettings)

    def set_trigger_edge_rising(self, rising: bool = True) -> None:
        """Trigger on the rising (or falling) edge."""
        self._call(self._h.SetTriggerEdgeRising, check_bool("MachDSP.set_trigger_edge_rising: rising", rising))

    def set_internal_trigger(self, divisor: int) -> None:
        """The internal trigger's divisor (0: the external trigger)."""
        self._call(self._h.SetInternalTrigger, _u16("MachDSP.set_internal_trigger: divisor", divisor))

    def set_sample_divisor(self, divisor: int) -> None:
        """One sample per ``divisor`` triggers."""
        self._call(self._h.SetSampleDivisor, _u16("MachDSP.set_sample_divisor: divisor", divisor))

    def set_aux_divisor(self, divisor: int) -> None:
        """The auxiliary I/O's divisor."""
        self._call(self._h.SetAuxDivisor, _u16("MachDSP.set_aux_divisor: divisor", divisor))

    def set_blocks(self, block_count: int, block_samples: int) -> None:
        """The stream's buffer: ``block_count`` blocks of ``block_samples``."""
        self._call(self._h.SetBlocks, _u16("MachDSP.set_blocks: block_count", block_count),
                                  _u16("MachDSP.set_blocks: block_samples", block_samples))

    def set_enable_receive(self, enable: bool) -> None:
        """Turn the input stream on or off."""
        self._call(self._h.SetEnableReceive, check_bool("MachDSP.set_enable_receive: enable", enable))

    def set_overflow_behavior(self, behavior: Overflow) -> None:
        """What an input overflow does."""
        self._call(self._h.SetOverflowBehavior, int(Overflow(behavior)))

    def set_underflow_behavior(self, behavior: Underflow) -> None:
        """What an output underflow does."""
        self._call(self._h.SetUnderflowBehavior, int(Underflow(behavior)))

    def check_error(self) -> None:
        """Raise the servo's latched error, if any (reading it clears it)."""
        self._call(self._h.CheckError)

    def clear_error(self) -> None:
        """Read and drop the servo's error."""
        self._call(self._h.ClearError)

    def hard_reset(self) -> None:
        """Reboot the servo (it does not reply)."""
        self._call(self._h.HardReset)

    @property
    def timeout(self) -> datetime.timedelta:
        """How long a read or write waits (1 s; set a ``timedelta`` or seconds)."""
        return datetime.timedelta(seconds=float(self._h.Timeout()))

    @timeout.setter
    def timeout(self, v: Union[datetime.timedelta, float]) -> None:
        if isinstance(v, datetime.timedelta):
            v = v.total_seconds()
        f = check_float("MachDSP.timeout", v)
        if f <= 0:
            raise ValueError(f"MachDSP.timeout={f}, expected a positive duration")
        self._h.SetTimeout(f)

    @property
    def valid(self) -> bool:
        """Whether the port is open."""
        return bool(self._h.Valid())

    @property
    def info(self) -> Info:
        """What opening the servo learned."""
        return _info(native(MACHDSP_INFO.read)(self._h.Info))

    def close(self) -> None:
        """Close the port (vortexgo's; vortex's closes when dropped)."""
        native(self._h.Close)()

    def __repr__(self) -> str:
        return f"<machdsp.MachDSP{'' if self.valid else ' (closed)'}>"
