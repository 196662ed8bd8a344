"""NI-DAQmx channels and enumerations (vortex's ``vortex.io.daqmx``).

A :class:`~vortexgo.io.DAQmxConfig` lists the channels of one NI-DAQmx task:
:class:`AnalogVoltageOutput` (a galvo, from the block's ``GalvoTarget``
stream), :class:`DigitalOutput` (strobes, from ``Strobes``) and the input
channels :class:`AnalogVoltageInput` and :class:`DigitalInput`. Each names
the block stream (``stream``, vortex's ``Block.StreamIndex``) and the column
of it (``channel``) it carries.

The values of :class:`Edge`, :class:`Terminal` and :class:`SampleMode` are
NI-DAQmx's (``DAQmx_Val_Rising`` ...), and their members are module names too
(``daqmx.Rising``), as vortex exports them.
"""

from __future__ import annotations

import datetime
import enum
from typing import Any, Union

import numpy as np

from ._attrs import Config, NoCopy, StrictAttributes, ValueList
from ._core import api
from ._errors import native, release_on_collect
from ._validate import check_bool, check_float, check_int
from .scan import Range

__all__ = [
    "Edge", "Terminal", "SampleMode", "AnalogVoltageOutput", "AnalogVoltageInput", "DigitalOutput",
    "DigitalInput", "VectorChannel", "DAQmx", "driver_version",
    "Rising", "Falling", "Referenced", "Unreferenced", "Differential", "Pseudodifferential",
    "Finite", "Continuous", "Hardware",
]


def driver_version() -> tuple[str, str]:
    """Load NI-DAQmx if it is not loaded yet; return its version (``""`` when
    the library does not report one) and the library's path. vortexgo's, not
    vortex's: ``python -m vortexgo hardware-check`` prints it.

    Raises :class:`~vortexgo.VortexError` naming ``VORTEXGO_NIDAQMX_LIBRARY``
    without the library, or the function it lacks when it is not NI-DAQmx or
    too old."""
    v = native(api.DAQmxLoad)()
    return v, api.DAQmxLibrary()


class Edge(StrictAttributes, enum.IntEnum):
    """A clock or trigger edge (NI's ``DAQmx_Val_Rising``, ``DAQmx_Val_Falling``)."""

    Rising = 10280
    Falling = 10171


class Terminal(StrictAttributes, enum.IntEnum):
    """An analog input's terminal configuration (NI's ``DAQmx_Val_RSE``, ``NRSE``, ``Diff``, ``PseudoDiff``)."""

    Referenced = 10083
    Unreferenced = 10078
    Differential = 10106
    Pseudodifferential = 12529


class SampleMode(StrictAttributes, enum.IntEnum):
    """A sample clock's mode (NI's ``DAQmx_Val_FiniteSamps``, ``ContSamps``, ``HWTimedSinglePoint``)."""

    Finite = 10178
    Continuous = 10123
    Hardware = 12522


Rising, Falling = Edge.Rising, Edge.Falling
Referenced, Unreferenced = Terminal.Referenced, Terminal.Unreferenced
Differential, Pseudodifferential = Terminal.Differential, Terminal.Pseudodifferential
Finite, Continuous, Hardware = SampleMode.Finite, SampleMode.Continuous, SampleMode.Hardware

#: The kinds of channel as the Go core numbers them (io.DAQmxChannelKind).
_KIND_AO, _KIND_AI, _KIND_DO, _KIND_DI = 0, 1, 2, 3


class _Channel(Config):
    """The fields every channel has: the block stream and its column."""

    __slots__ = ("_stream", "_channel")
    _kind = -1

    @property
    def stream(self) -> int:
        """The block stream carried (vortex's ``Block.StreamIndex``)."""
        return self._stream

    @stream.setter
    def stream(self, v: Any) -> None:
        self._stream = check_int(f"{type(self).__name__}.stream", v, 0)

    @property
    def channel(self) -> int:
        """The column of the stream carried."""
        return self._channel

    @channel.setter
    def channel(self, v: Any) -> None:
        self._channel = check_int(f"{type(self).__name__}.channel", v, 0)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._record() == other._record()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment] - mutable, like vortex's

    def _record(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


class _Digital(_Channel):
    __slots__ = ("_line_name",)

    #: Lines a digital channel may hold (vortex's ``max_bits``).
    max_bits = 32

    def __init__(self, line_name: str = "", stream: int = 0, channel: int = 0) -> None:
        self.line_name = line_name
        self.stream = stream
        self.channel = channel

    @property
    def line_name(self) -> str:
        """The lines, NI-DAQmx's name (``"Dev1/port0"``, ``"Dev1/port0/line0:3"``)."""
        return self._line_name

    @line_name.setter
    def line_name(self, v: Any) -> None:
        if not isinstance(v, str):
            raise TypeError(f"{type(self).__name__}.line_name={v!r}, expected a str")
        self._line_name = v

    def _record(self) -> dict:
        return {"Kind": self._kind, "Name": self.line_name, "Stream": self.stream, "Channel": self.channel,
                "LogicalUnitsPerPhysicalUnit": 1.0, "Min": 0.0, "Max": 0.0, "Terminal": 0}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.line_name!r}, stream={self.stream}, channel={self.channel})"


class _Analog(_Channel):
    __slots__ = ("_port_name", "_scale", "_limits")

    def __init__(self, port_name: str = "", logical_units_per_physical_unit: float = 1.0, stream: int = 0,
                 channel: int = 0) -> None:
        self.port_name = port_name
        self.logical_units_per_physical_unit = logical_units_per_physical_unit
        self.stream = stream
        self.channel = channel
        self._limits = Range(-10.0, 10.0)

    @property
    def port_name(self) -> str:
        """The physical channel, NI-DAQmx's name (``"Dev1/ao0"``); one channel only."""
        return self._port_name

    @port_name.setter
    def port_name(self, v: Any) -> None:
        if not isinstance(v, str):
            raise TypeError(f"{type(self).__name__}.port_name={v!r}, expected a str")
        self._port_name = v

    @property
    def logical_units_per_physical_unit(self) -> float:
        """How many stream units make one volt (a stream value divided by this is the voltage)."""
        return self._scale

    @logical_units_per_physical_unit.setter
    def logical_units_per_physical_unit(self, v: Any) -> None:
        f = check_float(f"{type(self).__name__}.logical_units_per_physical_unit", v)
        if f == 0:
            raise ValueError(f"{type(self).__name__}.logical_units_per_physical_unit=0, expected a non-zero number")
        self._scale = f

    @property
    def limits(self) -> Range:
        """The channel's range in volts (default ``Range(-10, 10)``); outputs are clipped to it."""
        return self._limits

    @limits.setter
    def limits(self, v: Any) -> None:
        if not isinstance(v, Range):
            if isinstance(v, (tuple, list)) and len(v) == 2:
                v = Range(*v)
            else:
                raise TypeError(f"{type(self).__name__}.limits={v!r}, expected a Range")
        self._limits = Range(v.min, v.max)

    def _record(self) -> dict:
        return {"Kind": self._kind, "Name": self.port_name, "Stream": self.stream, "Channel": self.channel,
                "LogicalUnitsPerPhysicalUnit": self.logical_units_per_physical_unit,
                "Min": self.limits.min, "Max": self.limits.max, "Terminal": int(getattr(self, "terminal", 0))}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.port_name!r}, {self.logical_units_per_physical_unit}, "
                f"stream={self.stream}, channel={self.channel})")


class AnalogVoltageOutput(_Analog):
    """An analog voltage output (a galvo): ``AnalogVoltageOutput(port_name,
    logical_units_per_physical_unit=1.0, stream=0, channel=0)``."""

    __slots__ = ()
    _kind = _KIND_AO


class AnalogVoltageInput(_Analog):
    """An analog voltage input with its :class:`~vortexgo.daqmx.Terminal` configuration (default ``Referenced``)."""

    __slots__ = ("_terminal",)
    _kind = _KIND_AI

    def __init__(self, port_name: str = "", logical_units_per_physical_unit: float = 1.0, stream: int = 0,
                 channel: int = 0) -> None:
        super().__init__(port_name, logical_units_per_physical_unit, stream, channel)
        self._terminal = Terminal.Referenced

    @property
    def terminal(self) -> Terminal:
        """The terminal configuration."""
        return self._terminal

    @terminal.setter
    def terminal(self, v: Any) -> None:
        self._terminal = Terminal(v)


class DigitalOutput(_Digital):
    """A digital output (strobes): ``DigitalOutput(line_name, stream=0, channel=0)``."""

    __slots__ = ()
    _kind = _KIND_DO


class DigitalInput(_Digital):
    """A digital input: ``DigitalInput(line_name, stream=0, channel=0)``."""

    __slots__ = ()
    _kind = _KIND_DI


_CHANNELS = (AnalogVoltageOutput, AnalogVoltageInput, DigitalOutput, DigitalInput)


class VectorChannel(ValueList):
    """vortex's ``VectorChannel``: the channels of a :class:`~vortexgo.io.DAQmxConfig`."""

    __slots__ = ()

    @staticmethod
    def _check(v: Any) -> Any:
        if not isinstance(v, _CHANNELS):
            raise TypeError(f"DAQmxConfig.channels: {v!r}, expected an AnalogVoltageOutput, AnalogVoltageInput, "
                            "DigitalOutput or DigitalInput")
        return v

    def __init__(self, items: Any = ()) -> None:
        super().__init__(self._check(v) for v in items)

    def append(self, v: Any) -> None:
        """Add a channel."""
        super().append(self._check(v))

    def extend(self, vs: Any) -> None:
        """Add channels."""
        super().extend(self._check(v) for v in vs)

    def insert(self, i: Any, v: Any) -> None:
        """Insert a channel."""
        super().insert(i, self._check(v))

    def __setitem__(self, i: Any, v: Any) -> None:
        if isinstance(i, slice):
            v = [self._check(x) for x in v]
        else:
            v = self._check(v)
        super().__setitem__(i, v)


def _timeout(owner: str, v: Union[datetime.timedelta, float]) -> float:
    """Seconds (a ``datetime.timedelta`` or a number; negative waits forever, NI's -1)."""
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    return check_float(f"{owner}: timeout", v, None)


def _rows(owner: str, buffer: Any, dtype: type, samples_per_channel: int) -> "np.ndarray":
    """``buffer`` as a C-contiguous (samples, channels) array of ``dtype`` holding at least
    ``samples_per_channel`` rows (a 1-D buffer is one channel)."""
    a = np.asarray(buffer)
    if a.dtype != dtype:
        raise TypeError(f"{owner}: buffer of {a.dtype}, expected {np.dtype(dtype).name}")
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError(f"{owner}: buffer of shape {a.shape}, expected (samples, channels)")
    if a.shape[0] < samples_per_channel:
        raise ValueError(f"{owner}: buffer of {a.shape[0]} samples, expected at least {samples_per_channel}")
    return np.ascontiguousarray(a)


class DAQmx(NoCopy, StrictAttributes):
    """One NI-DAQmx task, call by call (vortex's ``vortex.io.daqmx.DAQmx``, its ``daqmx_t``):
    what :class:`~vortexgo.io.DAQmxIO` does for a block, by hand.

    ``DAQmx(task_name)`` loads NI-DAQmx (``VORTEXGO_NIDAQMX_LIBRARY`` points at it) and
    creates the task; NI-DAQmx's failures raise :class:`~vortexgo.VortexError` with vortex's
    text (the operation, NI's code in parentheses, NI's description). The task is cleared by
    :meth:`clear_task`, or when the object is collected.
    """

    _copy_hint = "an NI-DAQmx task is one per name; make another DAQmx"

    def __init__(self, task_name: str) -> None:
        if not isinstance(task_name, str):
            raise TypeError(f"DAQmx(task_name={task_name!r}), expected a str")
        self._h = native(api.NewDAQmxTask)(task_name)
        self._fin = release_on_collect(self, self._h.Close, "a DAQmx task")

    def create_digital_output(self, line_name: str) -> None:
        """Add a digital output channel of the lines ``line_name`` (``"Dev1/port0/line0:7"``)."""
        native(self._h.CreateDigitalOutput)(_str("DAQmx.create_digital_output: line_name", line_name))

    def create_analog_voltage_output(self, port_name: str, min: float, max: float) -> None:  # noqa: A002
        """Add an analog voltage output channel (``"Dev1/ao0"``) spanning ``[min, max]`` volts."""
        o = "DAQmx.create_analog_voltage_output"
        native(self._h.CreateAnalogVoltageOutput)(_str(f"{o}: port_name", port_name), check_float(f"{o}: min", min),
                                                  check_float(f"{o}: max", max))

    def create_analog_voltage_input(self, port_name: str, min: float, max: float,  # noqa: A002
                                    terminal: Terminal = Terminal.Referenced) -> None:
        """Add an analog voltage input channel spanning ``[min, max]`` volts, with its terminal configuration."""
        o = "DAQmx.create_analog_voltage_input"
        native(self._h.CreateAnalogVoltageInput)(_str(f"{o}: port_name", port_name), check_float(f"{o}: min", min),
                                                 check_float(f"{o}: max", max), int(_member(o, terminal, Terminal)))

    def configure_sample_clock(self, source: str, sample_mode: SampleMode, samples_per_second: int,
                               samples_per_channel: int, divisor: int = 1, edge: Edge = Edge.Rising) -> None:
        """Clock the task from ``source`` at ``samples_per_second`` (with ``divisor`` > 1 the source is the
        timebase, divided down) and trigger its start on ``source`` too, as vortex does."""
        o = "DAQmx.configure_sample_clock"
        native(self._h.ConfigureSampleClock)(
            _str(f"{o}: source", source), int(_member(o, sample_mode, SampleMode)),
            check_int(f"{o}: samples_per_second", samples_per_second, 0),
            check_int(f"{o}: samples_per_channel", samples_per_channel, 0), check_int(f"{o}: divisor", divisor, 1),
            int(_member(o, edge, Edge)))

    def set_output_buffer_size(self, samples_per_channel: int) -> None:
        """Size the output buffer, in samples per channel."""
        native(self._h.SetOutputBufferSize)(check_int("DAQmx.set_output_buffer_size: samples_per_channel",
                                                      samples_per_channel, 0, 2**32 - 1))

    def set_input_buffer_size(self, samples_per_channel: int) -> None:
        """Size the input buffer, in samples per channel."""
        native(self._h.SetInputBufferSize)(check_int("DAQmx.set_input_buffer_size: samples_per_channel",
                                                     samples_per_channel, 0, 2**32 - 1))

    def set_regeneration(self, enable: bool) -> None:
        """Allow or forbid regenerating old samples (vortex streams with it off)."""
        native(self._h.SetRegeneration)(check_bool("DAQmx.set_regeneration: enable", enable))

    def write_analog(self, samples_per_channel: int, buffer: Any, timeout: Union[datetime.timedelta, float]) -> None:
        """Write ``samples_per_channel`` rows of ``buffer`` (float64, (samples, channels), volts), waiting up
        to ``timeout`` for room; a partial write raises, as vortex's."""
        o = "DAQmx.write_analog"
        n = check_int(f"{o}: samples_per_channel", samples_per_channel, 0, 2**31 - 1)
        a = _rows(o, buffer, np.float64, n)
        native(self._h.WriteAnalog)(n, a.shape[1], a.ctypes.data, a.size, _timeout(o, timeout))

    def write_digital(self, samples_per_channel: int, buffer: Any, timeout: Union[datetime.timedelta, float]) -> None:
        """Write ``samples_per_channel`` rows of ``buffer`` (uint32, (samples, channels)), as :meth:`write_analog`."""
        o = "DAQmx.write_digital"
        n = check_int(f"{o}: samples_per_channel", samples_per_channel, 0, 2**31 - 1)
        a = _rows(o, buffer, np.uint32, n)
        native(self._h.WriteDigital)(n, a.shape[1], a.ctypes.data, a.size, _timeout(o, timeout))

    def start_task(self) -> None:
        """Start the task (nothing when it runs)."""
        native(self._h.StartTask)()

    def stop_task(self) -> None:
        """Stop the task (nothing when it is stopped)."""
        native(self._h.StopTask)()

    def clear_task(self) -> None:
        """Release the task (nothing when released): ``valid`` is False and ``name`` empty after."""
        native(self._h.ClearTask)()

    @property
    def valid(self) -> bool:
        """Whether the task exists (not cleared)."""
        return bool(self._h.Valid())

    @property
    def name(self) -> str:
        """The task's name (empty once cleared)."""
        return str(self._h.Name())

    @property
    def running(self) -> bool:
        """Whether the task was started and not stopped since."""
        return bool(self._h.Running())

    def __repr__(self) -> str:
        return f"<daqmx.DAQmx {self.name!r}{' running' if self.running else ''}{'' if self.valid else ' (cleared)'}>"


def _str(name: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{name}={v!r}, expected a str")
    return v


def _member(owner: str, v: Any, enum_type: type) -> Any:
    try:
        return enum_type(v)
    except ValueError:
        raise ValueError(f"{owner}: {v!r}, expected a {enum_type.__name__}") from None
