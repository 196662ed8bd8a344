"""IO: where the generated waveforms and strobes go (vortex's ``vortex.io``), wired with
``EngineConfig.add_io(io, preload=True, master=False, lead_samples=0)``.

:class:`NullIO` accepts the waveforms and drops them. :class:`SimulatedIO`
is a simulated galvo IO: it records every sample it would output, the galvo
waveform and the digital strobe word (the latest ``record_samples`` of them,
in a bounded ring) and, with ``feedback``, writes
a copy delayed by ``feedback_delay`` samples as the measured position (for
:class:`~vortexgo.format.PositionFormatExecutor` with
``use_target_position=False``).

:class:`DAQmxIO` drives an NI-DAQmx card (vortex's ``DAQmxIO``): it writes the
galvo waveforms and strobes block by block to one NI-DAQmx task configured by a
:class:`DAQmxConfig`, whose channels come from :mod:`vortexgo.daqmx` (vortex's
``vortex.io.daqmx``, also reachable as ``vortexgo.io.daqmx``). The NI-DAQmx
library (``libnidaqmx.so``) is loaded when the first :class:`DAQmxIO` is
initialized: set ``VORTEXGO_NIDAQMX_LIBRARY`` to its path for an unusual install
(or to the virtual instrument's ``build/virtual/libnidaqmx.so``).

:class:`AlazarIO` drives the galvo DAC of an AlazarTech digitizer (vortex's
``AlazarIO``, the ATS9360's galvo option), so a system without an NI-DAQmx card
can scan: configured by an :class:`AlazarIOConfig` whose two outputs are
:class:`~vortexgo.alazar.AnalogChannel` (vortex's ``vortex.io.alazar.AnalogChannel``).
It loads the ATS-SDK (``libATSApi.so``, or ``VORTEXGO_ATSAPI_LIBRARY``) when
initialized, and may use the board an :class:`~vortexgo.alazar.AlazarAcquisition`
acquires with.

:class:`MachDSPIO` streams the galvo waveforms to a MachDSP digital servo over a serial
port (vortex's ``MachDSPIO``), configured by a :class:`MachDSPIOConfig` whose two outputs
are :class:`~vortexgo.machdsp.Channel` (vortex's ``vortex.io.machdsp``, also reachable as
``vortexgo.io.machdsp``); no vendor library is involved.
"""

from __future__ import annotations


import datetime
import json
import logging
from typing import Any, Optional

import numpy as np

from . import _instruments  # noqa: F401 - VORTEXGO_INSTRUMENTS=virtual: the default VORTEXGO_VIRTUAL_DIR
from . import daqmx
from ._attrs import Config, NoCopy, StrictAttributes
from ._core import api
from ._errors import ClosedError, InUseError, native, release_on_collect
from ._layouts import MACHDSP_INFO, SIM_IO_STATE, SIM_IO_WINDOW
from ._standalone import BlockCall as _BlockCall, Worker as _Worker, call_back as _call_back  # private: not io's names
from ._validate import check_bool, check_callable, check_float, check_int
from .daqmx import AnalogVoltageInput, AnalogVoltageOutput, DigitalInput, DigitalOutput
from . import alazar
from ._alazar_dac import AnalogChannel
from .alazar import AlazarDevice
from . import machdsp

# The channel classes and the daqmx module are attributes too (vortex.io's names), documented
# in vortexgo.daqmx.
__all__ = ["NullConfig", "NullIO", "SimulatedIO", "DAQmxIO", "DAQmxConfig", "DAQmxConfigClock", "AlazarIO", "AlazarIOConfig",
           "MachDSPIO", "MachDSPIOConfig"]


class _IO(NoCopy, StrictAttributes):
    def _handle(self):
        return self._h

    def close(self) -> None:
        """Release the IO (refused with InUseError while an engine uses it)."""
        native(self._h.Close)()


class NullConfig(Config):
    """vortex's ``NullConfig``: the configuration of a :class:`NullIO`, which has nothing to set."""

    def validate(self) -> None:
        """Nothing to check (vortex's)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NullConfig)

    __hash__ = None  # type: ignore[assignment] - a mutable config, as vortex's

    def __repr__(self) -> str:
        return "NullConfig()"


class NullIO(_IO):
    """vortex's ``NullIO``: accepts every block, outputs nothing. Its lifecycle is vortex's:
    ``initialize(NullConfig())``, ``prepare()``, ``start()``, ``stop()`` (each a no-op here, as
    there); the engine drives it through ``EngineConfig.add_io``."""

    def __init__(self) -> None:
        self._h = native(api.NewNullIO)()
        self._config = NullConfig()

    @property
    def config(self) -> NullConfig:
        """A copy of the adopted :class:`NullConfig` (vortex's read-only ``config``)."""
        return self._config.copy()

    def initialize(self, config: NullConfig) -> None:
        """Adopt ``config`` (TypeError unless a :class:`NullConfig`)."""
        if not isinstance(config, NullConfig):
            raise TypeError(f"NullIO.initialize: config={config!r:.60}, expected a NullConfig")
        config.validate()
        self._config = config.copy()

    def prepare(self) -> None:
        """Nothing to prepare (vortex's)."""

    def start(self) -> None:
        """Nothing to start (vortex's)."""

    def stop(self) -> None:
        """Nothing to stop (vortex's)."""

    def __repr__(self) -> str:
        return "<NullIO>"


class SimulatedIO(_IO):
    """A simulated galvo IO recording what it would output: the galvo waveform
    (:meth:`recorded`) and the digital strobe words (:meth:`recorded_strobes`).

    Args:
        record_samples: how many of the latest output samples are kept (default 65,536).
        feedback: write the output, delayed, as the measured position.
        feedback_delay: the delay of the measured position, in samples.
    """

    def __init__(self, record_samples: int = 1 << 16, feedback: bool = False, feedback_delay: int = 0) -> None:
        record_samples = check_int("SimulatedIO.record_samples", record_samples, 1, 1 << 24)
        self._h = native(api.NewSimIO)(record_samples, check_bool("SimulatedIO.feedback", feedback),
                                       check_int("SimulatedIO.feedback_delay", feedback_delay, 0, 1 << 24))
        self.record_samples = record_samples

    def _state(self):
        return native(SIM_IO_STATE.read)(self._h.State)

    @property
    def samples(self) -> int:
        """Samples output so far (including those the ring no longer holds)."""
        return self._state().samples

    @property
    def started(self) -> bool:
        return bool(self._state().started)

    @property
    def stopped(self) -> bool:
        return bool(self._state().stopped)

    def recorded(self, channels: int = 2) -> tuple[int, np.ndarray]:
        """The latest recorded samples as ``(first_sample, array (rows, channels))``, oldest first."""
        channels = check_int("channels", channels, 1, 64)
        buf = np.zeros((self.record_samples, channels), np.float64)
        w = native(SIM_IO_WINDOW.read)(self._h.Recorded, buf.ctypes.data, buf.size)
        if w.rows and w.channels != channels:
            raise ValueError(f"channels={channels}, expected {w.channels} (EngineConfig.galvo_output_channels)")
        return w.first, buf[: w.rows].copy()

    def recorded_strobes(self) -> tuple[int, np.ndarray]:
        """The latest recorded strobe words as ``(first_sample, uint32 array (rows,))``, oldest
        first: bit ``line`` of each word is that line's level (``EngineConfig.strobes``)."""
        buf = np.zeros(self.record_samples, np.uint32)
        w = native(SIM_IO_WINDOW.read)(self._h.RecordedStrobes, buf.ctypes.data, buf.size)
        return w.first, buf[: w.rows].copy()

    def __repr__(self) -> str:
        return f"<SimulatedIO {self.samples} samples output>"


class DAQmxConfigClock(Config):
    """The clock of a :class:`DAQmxConfig` (vortex's ``DAQmxConfigClock``): the terminal
    that clocks the task and starts it (``source``, default ``"pfi0"``: the swept
    source's A-line trigger), its ``edge`` and a ``divisor`` (above 1, ``source`` is
    the timebase the card divides down)."""

    __slots__ = ("_source", "_edge", "_divisor")

    def __init__(self) -> None:
        self.source = "pfi0"
        self.edge = daqmx.Edge.Rising
        self.divisor = 1

    @property
    def source(self) -> str:
        """The clock's terminal (``"pfi0"``, ``"/Dev1/PFI12"``)."""
        return self._source

    @source.setter
    def source(self, v: Any) -> None:
        if not isinstance(v, str):
            raise TypeError(f"DAQmxConfigClock.source={v!r}, expected a str")
        self._source = v

    @property
    def edge(self) -> daqmx.Edge:
        """The active edge."""
        return self._edge

    @edge.setter
    def edge(self, v: Any) -> None:
        self._edge = daqmx.Edge(v)

    @property
    def divisor(self) -> int:
        """Samples of the block per sample of the card."""
        return self._divisor

    @divisor.setter
    def divisor(self, v: Any) -> None:
        self._divisor = check_int("DAQmxConfigClock.divisor", v, 0)

    def __repr__(self) -> str:
        return f"<DAQmxConfigClock {self.source!r} {self.edge.name} /{self.divisor}>"


def _seconds(v: Any) -> datetime.timedelta:
    if isinstance(v, datetime.timedelta):
        return v
    return datetime.timedelta(seconds=check_float("DAQmxConfig.readwrite_timeout", v))


class DAQmxConfig(Config):
    """Configuration of a :class:`DAQmxIO`: one NI-DAQmx task (vortex's ``DAQmxConfig``).

    Attributes:
        name: the task's name (``"unknown"``).
        samples_per_second: the clock's rate (100,000).
        samples_per_block: the largest block (100; at least ``EngineConfig.records_per_block``).
        clock: a :class:`DAQmxConfigClock`.
        blocks_to_buffer: the card's buffer, in blocks (1; vortex's demos use ``preload_count``).
        readwrite_timeout: how long a write waits for buffer space (1 s; a ``timedelta``).
        channels: the task's channels (:mod:`vortexgo.daqmx`), all of one kind.
        persistent_task: keep the task between runs (stopped), or clear it at each stop.
        stop_on_error: stop the task when a block fails.
    """

    __slots__ = ("_name", "_sps", "_spb", "_clock", "_blocks", "_timeout", "_channels", "persistent_task",
                 "stop_on_error")

    def __init__(self) -> None:
        self.name = "unknown"
        self.samples_per_second = 100_000
        self.samples_per_block = 100
        self.clock = DAQmxConfigClock()
        self.blocks_to_buffer = 1
        self.readwrite_timeout = datetime.timedelta(seconds=1)
        self.channels = daqmx.VectorChannel()
        self.persistent_task = True
        self.stop_on_error = True

    @property
    def name(self) -> str:
        """The task's name."""
        return self._name

    @name.setter
    def name(self, v: Any) -> None:
        if not isinstance(v, str):
            raise TypeError(f"DAQmxConfig.name={v!r}, expected a str")
        self._name = v

    @property
    def samples_per_second(self) -> int:
        """The clock's rate."""
        return self._sps

    @samples_per_second.setter
    def samples_per_second(self, v: Any) -> None:
        self._sps = check_int("DAQmxConfig.samples_per_second", v, 0)

    @property
    def samples_per_block(self) -> int:
        """The largest block, in samples."""
        return self._spb

    @samples_per_block.setter
    def samples_per_block(self, v: Any) -> None:
        self._spb = check_int("DAQmxConfig.samples_per_block", v, 0)

    @property
    def clock(self) -> DAQmxConfigClock:
        """The clock."""
        return self._clock

    @clock.setter
    def clock(self, v: Any) -> None:
        if not isinstance(v, DAQmxConfigClock):
            raise TypeError(f"DAQmxConfig.clock={v!r}, expected a DAQmxConfigClock")
        self._clock = v

    @property
    def blocks_to_buffer(self) -> int:
        """The card's buffer, in blocks."""
        return self._blocks

    @blocks_to_buffer.setter
    def blocks_to_buffer(self, v: Any) -> None:
        self._blocks = check_int("DAQmxConfig.blocks_to_buffer", v, 0)

    @property
    def readwrite_timeout(self) -> datetime.timedelta:
        """How long a write waits for buffer space (set seconds or a ``timedelta``)."""
        return self._timeout

    @readwrite_timeout.setter
    def readwrite_timeout(self, v: Any) -> None:
        self._timeout = _seconds(v)

    @property
    def channels(self) -> daqmx.VectorChannel:
        """The task's channels."""
        return self._channels

    @channels.setter
    def channels(self, v: Any) -> None:
        self._channels = daqmx.VectorChannel(v)

    def _record(self) -> str:
        return json.dumps({
            "Name": self.name, "SamplesPerSecond": self.samples_per_second, "SamplesPerBlock": self.samples_per_block,
            "ClockSource": self.clock.source, "ClockEdge": int(self.clock.edge), "ClockDivisor": self.clock.divisor,
            "BlocksToBuffer": self.blocks_to_buffer, "ReadWriteTimeout": self.readwrite_timeout.total_seconds(),
            "Channels": [ch._record() for ch in self.channels],
            "PersistentTask": check_bool("DAQmxConfig.persistent_task", self.persistent_task),
            "StopOnError": check_bool("DAQmxConfig.stop_on_error", self.stop_on_error)})

    def validate(self) -> None:
        """Raise ValueError with vortex's message when the configuration is inconsistent."""
        native(api.ValidateDAQmxConfig)(self._record())

    def __repr__(self) -> str:
        return (f"<DAQmxConfig {self.name!r} {len(self.channels)} channels, {self.samples_per_second} samples/s, "
                f"{self.samples_per_block} samples/block>")


class _DeviceIO(_IO):
    """An IO over a driver, with vortex's standalone calls: the native IO that
    :meth:`initialize` makes (closing the one before), released by :meth:`close` or when the
    IO is dropped, the calls of its ``prepare``, ``start`` and ``stop``, and the worker thread
    of ``next_async``."""

    #: what initialize does again after close (the ClosedError's hint)
    _REOPEN = "initialize(config) makes a new one"
    #: the configuration class initialize takes
    _config_type: type = Config

    def __init__(self, logger: Optional[logging.Logger], config: Config) -> None:
        self._h = None
        self._closed = False
        self._worker: Optional[_Worker] = None
        self.logger = logger
        self._config = config

    def _adopt(self, h: Any, config: Config, what: str, worker: str, at_exit: Any) -> None:
        """Make ``h``, the new native IO of ``config``, this IO's, closing the one before:
        ``what`` names it to the finaliser that releases it when the IO is dropped unclosed,
        ``worker`` names next_async's thread, which calls ``at_exit`` (a method of ``h``) at
        interpreter exit while calls are pending. The thread holds ``h``, never the IO: an IO
        dropped with calls pending is collected, and its finaliser's close ends them."""
        if self._h is not None:
            try:
                native(self._h.Close)()
            except BaseException:
                h.Close()
                raise
            self._fin.detach()
        self._h = h
        self._fin = release_on_collect(self, h.Close, what)
        self._worker = _Worker(worker, at_exit)
        self._config = config
        self._closed = False

    def _handle(self):
        name = type(self).__name__
        if self._closed:
            raise ClosedError(f"{name} is closed, expected an open one ({self._REOPEN})")
        if self._h is None:
            raise ValueError(f"{name} is not initialized, expected initialize(config) first")
        return self._h

    def _checked(self, config: Any) -> Any:
        """A copy of ``config``, which initialize takes (TypeError for another type)."""
        t = self._config_type.__name__
        if not isinstance(config, self._config_type):
            raise TypeError(f"config={config!r}, expected {'an' if t[0] in 'AEIOU' else 'a'} {t}")
        return config.copy()

    def _native_call(self, method: str) -> Any:
        """The native IO's ``method`` (``Prepare``, ``Start``, ``Stop``), called: what the
        IOs' ``prepare``, ``start`` and ``stop`` do."""
        return native(getattr(self._handle(), method))()

    def _queue(self, call: _BlockCall, callback: Any) -> None:
        """``call`` on the IO's worker thread, then ``callback(count, exception)`` there: what
        ``next_async`` does for an IO whose block waits on the device."""
        logger, worker = self.logger, self._worker
        assert worker is not None

        def job() -> None:  # the call holds the caller's arrays until it returns
            n, exc = call.outcome(logger)
            _call_back(logger, callback, n, exc, call.id)

        worker.push(job)

    def _release(self) -> None:
        if self._h is not None:
            native(self._h.Close)()
            self._fin.detach()
            self._h = None
            self._closed = True


class DAQmxIO(_DeviceIO):
    """vortex's ``DAQmxIO``: one NI-DAQmx task whose output channels
    (:class:`~vortexgo.daqmx.AnalogVoltageOutput`, :class:`~vortexgo.daqmx.DigitalOutput`)
    write a block's streams and whose input channels fill them, with regeneration off: a host
    that falls behind the card gets NI's underflow error (vortex's
    ``analog write failed: (-200290) buffer underflow``).

    In an engine (``EngineConfig.add_io``) it writes the galvo waveforms (``GalvoTarget``)
    and strobes (``Strobes``) of each block; input channels are not streamed there yet.
    While an engine that prepared it has not finished its run, :meth:`close`,
    :meth:`prepare`, :meth:`next` and :meth:`next_async` raise
    :class:`~vortexgo.InUseError`.

    Outside an engine, vortex's standalone calls drive it by hand: :meth:`prepare`,
    :meth:`start`, :meth:`stop`, :meth:`next` and :meth:`next_async`, each block given as
    vortex's six streams (see :meth:`next`).

    Args:
        logger: a :class:`logging.Logger` (vortex's first argument), kept as ``logger``.
    """

    _REOPEN = "initialize(config) makes a new task"
    _config_type = DAQmxConfig

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger, DAQmxConfig())

    @property
    def config(self) -> DAQmxConfig:
        """The configuration :meth:`initialize` adopted (a copy)."""
        return self._config.copy()

    def initialize(self, config: DAQmxConfig) -> None:
        """Validate ``config`` and create its task (loading NI-DAQmx): bad channels and
        clock settings are refused here, with NI-DAQmx's codes."""
        config = self._checked(config)
        h = native(api.NewDAQmxIO)(config._record())
        # The finaliser clears the task: NI-DAQmx task names are unique. At exit with calls
        # pending the task is cleared: a stop does not end a write into a task not started.
        self._adopt(h, config, "a DAQmx task", f"vortexgo-DAQmxIO-{config.name}", h.Close)

    def prepare(self) -> None:
        """vortex's ``prepare``: with ``persistent_task`` false, create and configure the task
        (:meth:`stop` clears it); a persistent task exists since :meth:`initialize`. The engine
        calls it for the IOs it runs."""
        self._native_call("Prepare")

    def start(self) -> None:
        """Start the task (the engine does it). An output task starts from the samples
        written before: write at least one block first."""
        self._native_call("Start")

    def stop(self) -> None:
        """Stop the task (the engine does it); a non-persistent task is cleared. A
        :meth:`next` waiting in NI-DAQmx returns NI's abort error."""
        self._native_call("Stop")

    def _call(self, count: Any, streams: Any, id: Any) -> _BlockCall:
        filled = frozenset(ch.stream for ch in self._config.channels
                           if isinstance(ch, (AnalogVoltageInput, DigitalInput)))
        return _BlockCall(self._handle(), count, streams, id, filled)

    def next(self, count: int, streams: Any, id: int = 0) -> int:
        """Move one block of ``count`` samples through the task and wait for it (vortex's
        ``next``): every ``clock.divisor``-th sample of each output channel's column of its
        stream is written (analog values divided by ``logical_units_per_physical_unit`` and
        clipped to ``limits``), then each input channel's samples are read into its column,
        each repeated ``clock.divisor`` times. Before :meth:`start`, writes fill the task's
        buffer (``blocks_to_buffer`` + 1 blocks; a full buffer waits up to
        ``readwrite_timeout``); reads need the task started.

        ``streams`` is vortex's tuple of six host arrays (NumPy, or memory exporting the array
        interface or buffer protocol; never copied, and CUDA arrays are refused), in
        ``Block.StreamIndex`` order and of exactly these dtypes: counter ``uint64``, galvo
        target, sample target, galvo actual, sample actual ``float64``, strobes ``uint32``. A
        channel's ``stream`` picks one and its ``channel`` a column: that stream must be 2-D
        with at least ``count`` rows. Returns ``count`` (vortex's binding returns None).

        Raises, with vortex's messages: ValueError for a ``count`` above ``samples_per_block``
        (``block is larger than maximum configured size``) or not a multiple of the divisor,
        a channel's stream of the wrong rank (``stream of dimension 2 is required``) or size
        (``stream is incorrectly sized``), or of the wrong type (``tuple condition failed to
        match at target index``: analog channels read streams 1-4, digital ones 5);
        TypeError for a tuple of other than six arrays or a dtype other than the stream's;
        :class:`~vortexgo.VortexError` for NI-DAQmx's errors (``analog write failed: (-200290)
        buffer underflow``, a write or read timeout), which stop the task when
        ``stop_on_error``, and for a non-persistent task not prepared;
        :class:`~vortexgo.ClosedError` after :meth:`close`; :class:`~vortexgo.InUseError`
        while an engine uses the IO. ``id`` is for logging."""
        return self._call(count, streams, id).run(self.logger)

    def next_async(self, count: int, streams: Any, callback: Any, id: int = 0) -> None:
        """:meth:`next` on the IO's worker thread, then ``callback(count, exception)`` there,
        with no lock of vortexgo's held (vortex's ``next_async``): ``count`` and None once
        the block moved, 0 and the exception :meth:`next` would raise otherwise (the checks
        made in Go, NI-DAQmx's errors, :class:`~vortexgo.ClosedError` when the IO was closed
        first or under the call). Calls run in the order they were made, after each other
        and any :meth:`next`; the arrays are held until the callback returns. The tuple and
        dtypes are checked here (TypeError), and so are :class:`~vortexgo.ClosedError` and
        a missing initialize. :meth:`close` does not wait for pending calls: it ends the one
        in NI-DAQmx, and each reports ClosedError. An exception from ``callback`` is
        logged, as vortex's."""
        check_callable("callback", callback, allow_none=False)
        self._queue(self._call(count, streams, id), callback)

    @property
    def running(self) -> bool:
        """Whether the task runs."""
        return self._h is not None and bool(self._h.Running())

    def close(self) -> None:
        """Clear the task (refused with InUseError while an engine uses it). A
        :meth:`next_async` in NI-DAQmx ends, and those pending report
        :class:`~vortexgo.ClosedError`; afterwards the calls raise it."""
        self._release()

    def __repr__(self) -> str:
        if self._closed:
            return f"<DAQmxIO {self._config.name!r} closed>"
        return f"<DAQmxIO {self._config.name!r}{' running' if self.running else ''}>"


def _analog_channels(v: Any) -> list:
    items = list(v) if isinstance(v, (list, tuple)) else None
    if items is None or len(items) != 2 or not all(isinstance(ch, AnalogChannel) for ch in items):
        raise TypeError(f"AlazarIOConfig.analog_output_channels={v!r}, expected 2 AnalogChannel (x, y)")
    return items


class AlazarIOConfig(Config):
    """Configuration of an :class:`AlazarIO` (vortex's ``AlazarIOConfig``).

    Attributes:
        analog_output_channels: the DAC's two outputs, x then y: a list of two
            :class:`~vortexgo.alazar.AnalogChannel` (vortex's defaults: stream 0, which
            :class:`AlazarIO` refuses; set ``stream=Block.StreamIndex.GalvoTarget``).
        samples_per_block: the largest block (100; at least ``EngineConfig.records_per_block``).
        blocks_to_buffer: the DAC's ring, in blocks (1; vortex's demos use ``preload_count``;
            vortexgo's ring holds one block more, as :class:`DAQmxIO`'s buffer does).
        divisor: keep every ``divisor``-th sample of a block (1).
        stop_on_error: stop the DAC when a block fails (True).
        device: the board (:class:`~vortexgo.alazar.AlazarDevice`, 1-1); vortexgo's
            addition (vortex's Python binding keeps its default board).
    """

    __slots__ = ("_channels", "_spb", "_blocks", "_divisor", "stop_on_error", "_device")

    def __init__(self) -> None:
        self.analog_output_channels = [AnalogChannel(), AnalogChannel()]
        self.samples_per_block = 100
        self.blocks_to_buffer = 1
        self.divisor = 1
        self.stop_on_error = True
        self.device = AlazarDevice()

    @property
    def analog_output_channels(self) -> list:
        """The DAC's two outputs, x (the low half of each DAC word) then y."""
        return self._channels

    @analog_output_channels.setter
    def analog_output_channels(self, v: Any) -> None:
        self._channels = _analog_channels(v)

    @property
    def samples_per_block(self) -> int:
        """The largest block, in samples."""
        return self._spb

    @samples_per_block.setter
    def samples_per_block(self, v: Any) -> None:
        self._spb = check_int("AlazarIOConfig.samples_per_block", v, 0)

    @property
    def blocks_to_buffer(self) -> int:
        """The DAC's ring, in blocks."""
        return self._blocks

    @blocks_to_buffer.setter
    def blocks_to_buffer(self, v: Any) -> None:
        self._blocks = check_int("AlazarIOConfig.blocks_to_buffer", v, 0)

    @property
    def divisor(self) -> int:
        """Every ``divisor``-th sample of a block is played."""
        return self._divisor

    @divisor.setter
    def divisor(self, v: Any) -> None:
        self._divisor = check_int("AlazarIOConfig.divisor", v, 0)

    @property
    def device(self) -> AlazarDevice:
        """The board whose DAC plays (system and board index, both from 1)."""
        return self._device

    @device.setter
    def device(self, v: Any) -> None:
        if not isinstance(v, AlazarDevice):
            raise TypeError(f"AlazarIOConfig.device={v!r}, expected an AlazarDevice")
        self._device = v

    def _record(self) -> str:
        chans = _analog_channels(self.analog_output_channels)
        return json.dumps({
            "SystemIndex": check_int("AlazarDevice.system_index", self.device.system_index, 0, 2**32 - 1),
            "BoardIndex": check_int("AlazarDevice.board_index", self.device.board_index, 0, 2**32 - 1),
            "AnalogOutputChannels": [ch._record() for ch in chans],
            "SamplesPerBlock": self.samples_per_block, "BlocksToBuffer": self.blocks_to_buffer,
            "Divisor": self.divisor, "StopOnError": check_bool("AlazarIOConfig.stop_on_error", self.stop_on_error)})

    def validate(self) -> None:
        """Raise ValueError with vortex's message when the configuration is inconsistent
        (``must buffer at least 1 block: 0``)."""
        native(api.ValidateAlazarIOConfig)(self._record())

    def __repr__(self) -> str:
        return (f"<AlazarIOConfig board {self.device.system_index}-{self.device.board_index}, "
                f"{self.samples_per_block} samples/block x {self.blocks_to_buffer}, divisor {self.divisor}>")


class AlazarIO(_DeviceIO):
    """vortex's ``AlazarIO``: the galvo waveforms of each block played through an
    AlazarTech digitizer's galvo DAC. Wire it with ``EngineConfig.add_io``.

    :meth:`initialize` opens the board and readies the DAC: custom pattern mode, the first
    pattern slot that holds the ring (``(blocks_to_buffer + 1) * samples_per_block`` words),
    sequence 0 repeating it forever, the park position. Each block is then written at the
    ring's write position as DAC codes (x in the low half of a word, y in the high); the DAC
    plays one word per A-line trigger from :meth:`start` and parks at :meth:`stop`. The DAC
    has no underflow: a host that falls behind makes it replay the last lap.

    The board may be the one an :class:`~vortexgo.alazar.AlazarAcquisition` acquires with
    (the same ``device``), as in vortex: the acquisition owns the capture (starts and aborts
    it) and the IO only the DAC, so closing either leaves the other working.

    Outside an engine, vortex's standalone calls drive it by hand: :meth:`prepare`,
    :meth:`start`, :meth:`stop`, :meth:`next` and :meth:`next_async`, each block given as
    vortex's six streams (see :meth:`next`). While an engine that prepared it has not
    finished its run, :meth:`close`, :meth:`prepare`, :meth:`next` and :meth:`next_async`
    raise :class:`~vortexgo.InUseError`.

    Args:
        logger: a :class:`logging.Logger` (vortex's first argument), kept as ``logger``.
    """

    _config_type = AlazarIOConfig

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger, AlazarIOConfig())

    @property
    def config(self) -> AlazarIOConfig:
        """The configuration :meth:`initialize` adopted (a copy)."""
        return self._config.copy()

    def initialize(self, config: AlazarIOConfig) -> None:
        """Validate ``config``, open its board (loading the ATS-SDK) and configure the DAC:
        a ring no pattern slot holds is refused here (``could not find DAC slot with
        capacity for N samples``)."""
        config = self._checked(config)
        h = native(api.NewAlazarIO)(config._record())
        # The finaliser stops the DAC; at exit with callbacks pending the DAC is stopped
        # (vortex's destructor) and they are let run.
        d = config.device
        self._adopt(h, config, "an Alazar DAC", f"vortexgo-AlazarIO-{d.system_index}-{d.board_index}", h.Stop)

    def prepare(self) -> None:
        """vortex's ``prepare``: the next block is written at the ring's start, where the DAC
        starts playing. :meth:`next` needs it once (the engine's prepare does it too)."""
        self._native_call("Prepare")

    def start(self) -> None:
        """Start playback (the engine does it): the DAC plays the ring from its start, one
        word per A-line trigger of the board's capture."""
        self._native_call("Start")

    def stop(self, force: bool = False) -> None:
        """Stop playback; the outputs park (the engine does it). ``force`` is vortex's
        argument and changes nothing: the IO never stops the board's capture."""
        self._native_call("Stop")

    def next(self, count: int, streams: Any, id: int = 0) -> int:
        """Write one block of ``count`` samples into the DAC's ring (vortex's ``next``):
        every ``divisor``-th sample of each output's column (``channel``) of its stream
        (``stream``), divided by ``logical_units_per_physical_unit``, clipped to ``limits``
        and made a DAC code, at the ring's write position, wrapping at its end. Before
        :meth:`start` the writes fill the ring the DAC will play; writing more than
        ``blocks_to_buffer + 1`` blocks ahead of playback overwrites samples not played yet
        (the DAC has no underflow).

        ``streams`` is vortex's tuple of six host arrays (NumPy, or memory exporting the array
        interface or buffer protocol; never copied, and CUDA arrays are refused), in
        ``Block.StreamIndex`` order and of exactly these dtypes: counter ``uint64``, galvo
        target, sample target, galvo actual, sample actual ``float64``, strobes ``uint32``. An
        output's stream must be one of the four ``float64`` ones, 2-D with at least ``count``
        rows and its ``channel`` as a column. Returns ``count`` (vortex's binding returns None).

        Raises, with vortex's messages: ValueError for a ``count`` above ``samples_per_block``
        (``block is larger than maximum configured size``) or not a multiple of ``divisor``,
        an output's stream of the wrong rank (``stream of dimension 2 is required``), size
        (``stream is incorrectly sized``) or type (``tuple condition failed to match at target
        index``); :class:`~vortexgo.VortexError` for the ATS-SDK's errors. Each of these
        stops the DAC when ``stop_on_error``, as vortex's. TypeError for a tuple of other than
        six arrays or a dtype other than the stream's; :class:`~vortexgo.VortexError` before
        the first :meth:`prepare`; :class:`~vortexgo.ClosedError` after :meth:`close`;
        :class:`~vortexgo.InUseError` while an engine uses the IO. ``id`` is for logging."""
        return _BlockCall(self._handle(), count, streams, id).run(self.logger)

    def next_async(self, count: int, streams: Any, callback: Any, id: int = 0) -> None:
        """:meth:`next`, then ``callback(count, exception)`` on the IO's worker thread, with no
        lock of vortexgo's held (vortex's ``next_async``). As vortex's, the block is written
        before this returns (writing into the ring does not wait for the DAC), so the arrays
        are not held after it; the callback gets ``count`` and None, or 0 and the exception
        :meth:`next` would raise for a bad count or stream, or the ATS-SDK's error. Callbacks
        run in the order of the calls. TypeError (the tuple, dtypes),
        :class:`~vortexgo.ClosedError`, :class:`~vortexgo.InUseError` and a missing initialize
        raise here. Callbacks pending at :meth:`close` (or when the IO is dropped, or at
        exit) still run, with their results. An exception from ``callback`` is logged, as
        vortex's."""
        check_callable("callback", callback, allow_none=False)
        call, logger, worker = _BlockCall(self._handle(), count, streams, id), self.logger, self._worker
        assert worker is not None
        n, exc = call.outcome(logger)
        if isinstance(exc, (ClosedError, InUseError)):
            raise exc  # misuse (closed or taken by an engine meanwhile), raised as by the other calls
        worker.push(lambda: _call_back(logger, callback, n, exc, call.id))

    @property
    def running(self) -> bool:
        """Whether the DAC plays."""
        return self._h is not None and bool(self._h.Running())

    @property
    def slot(self) -> int:
        """The DAC pattern slot the ring lives in (vortexgo's addition)."""
        return int(self._handle().Slot())

    @property
    def ring_samples(self) -> int:
        """The ring's length in DAC words (vortexgo's addition)."""
        return int(self._handle().RingSamples())

    def close(self) -> None:
        """Stop the DAC and release the IO (refused with InUseError while an engine uses it);
        afterwards the calls raise :class:`~vortexgo.ClosedError`."""
        self._release()

    def __repr__(self) -> str:
        if self._closed:
            return "<AlazarIO closed>"
        return f"<AlazarIO{' running' if self.running else ''}>"


def _machdsp_channels(name: str, v: Any) -> list:
    items = list(v) if isinstance(v, (list, tuple)) else None
    if items is None or len(items) != 2 or not all(isinstance(ch, machdsp.Channel) for ch in items):
        raise TypeError(f"MachDSPIOConfig.{name}={v!r}, expected 2 machdsp.Channel (x, y)")
    return items


class MachDSPIOConfig(Config):
    """Configuration of a :class:`MachDSPIO` (vortex's ``MachDSPIOConfig``).

    Attributes:
        port: the serial port (``"COM1"``, vortex's default; ``"/dev/ttyACM0"`` on Linux).
        baud_rate: the line's rate (12,000,000).
        output_channels: the servo's two galvo inputs, x then y: a list of two
            :class:`~vortexgo.machdsp.Channel` (vortex's defaults: stream 0, which
            :class:`MachDSPIO` refuses in an engine; set ``stream=Block.StreamIndex.GalvoTarget``).
        input_channels: two :class:`~vortexgo.machdsp.Channel`, kept as vortex keeps them
            (vortex's IO turns the servo's receive off: nothing is read).
        samples_per_block: the block size, exactly ``EngineConfig.records_per_block`` (100).
        blocks_to_buffer: the servo's buffer, in blocks (1; vortex's demos use
            ``preload_count``; vortexgo asks for one block more, as :class:`DAQmxIO`'s buffer).
        readwrite_timeout: how long a serial read or write waits (1 s; vortex's driver keeps
            its own 1 s whatever this says).
        sample_divisor: one servo sample per ``sample_divisor`` triggers, every
            ``sample_divisor``-th sample of a block sent (1).
        aux_divisor: the auxiliary I/O's divisor (1).
        trigger_rising_edge: trigger on the rising edge (True).
        stop_on_error: stop the stream when a block fails (True).
    """

    __slots__ = ("_port", "_baud", "_outs", "_ins", "_spb", "_blocks", "_timeout", "_sdiv", "_adiv",
                 "trigger_rising_edge", "stop_on_error")

    def __init__(self) -> None:
        self.port = "COM1"
        self.baud_rate = 12_000_000
        self.output_channels = [machdsp.Channel(), machdsp.Channel()]
        self.input_channels = [machdsp.Channel(), machdsp.Channel()]
        self.samples_per_block = 100
        self.blocks_to_buffer = 1
        self.readwrite_timeout = datetime.timedelta(seconds=1)
        self.sample_divisor = 1
        self.aux_divisor = 1
        self.trigger_rising_edge = True
        self.stop_on_error = True

    @property
    def port(self) -> str:
        """The serial port."""
        return self._port

    @port.setter
    def port(self, v: Any) -> None:
        if not isinstance(v, str):
            raise TypeError(f"MachDSPIOConfig.port={v!r}, expected a str")
        self._port = v

    @property
    def baud_rate(self) -> int:
        """The line's rate."""
        return self._baud

    @baud_rate.setter
    def baud_rate(self, v: Any) -> None:
        self._baud = check_int("MachDSPIOConfig.baud_rate", v, 1, 2**31 - 1)

    @property
    def output_channels(self) -> list:
        """The two outputs, x then y."""
        return self._outs

    @output_channels.setter
    def output_channels(self, v: Any) -> None:
        self._outs = _machdsp_channels("output_channels", v)

    @property
    def input_channels(self) -> list:
        """The two inputs (not streamed, as in vortex)."""
        return self._ins

    @input_channels.setter
    def input_channels(self, v: Any) -> None:
        self._ins = _machdsp_channels("input_channels", v)

    @property
    def samples_per_block(self) -> int:
        """The block size, in samples."""
        return self._spb

    @samples_per_block.setter
    def samples_per_block(self, v: Any) -> None:
        self._spb = check_int("MachDSPIOConfig.samples_per_block", v, 0)

    @property
    def blocks_to_buffer(self) -> int:
        """The servo's buffer, in blocks."""
        return self._blocks

    @blocks_to_buffer.setter
    def blocks_to_buffer(self, v: Any) -> None:
        self._blocks = check_int("MachDSPIOConfig.blocks_to_buffer", v, 0)

    @property
    def readwrite_timeout(self) -> datetime.timedelta:
        """How long a serial read or write waits (set seconds or a ``timedelta``)."""
        return self._timeout

    @readwrite_timeout.setter
    def readwrite_timeout(self, v: Any) -> None:
        if not isinstance(v, datetime.timedelta):
            v = datetime.timedelta(seconds=check_float("MachDSPIOConfig.readwrite_timeout", v))
        if v.total_seconds() <= 0:
            raise ValueError(f"MachDSPIOConfig.readwrite_timeout={v}, expected a positive duration")
        self._timeout = v

    @property
    def sample_divisor(self) -> int:
        """One servo sample per ``sample_divisor`` triggers."""
        return self._sdiv

    @sample_divisor.setter
    def sample_divisor(self, v: Any) -> None:
        self._sdiv = check_int("MachDSPIOConfig.sample_divisor", v, 0)

    @property
    def aux_divisor(self) -> int:
        """The auxiliary I/O's divisor."""
        return self._adiv

    @aux_divisor.setter
    def aux_divisor(self, v: Any) -> None:
        self._adiv = check_int("MachDSPIOConfig.aux_divisor", v, 0)

    def _record(self) -> str:
        return json.dumps({
            "Port": self.port, "BaudRate": self.baud_rate,
            "OutputChannels": [ch._record() for ch in _machdsp_channels("output_channels", self.output_channels)],
            "InputChannels": [ch._record() for ch in _machdsp_channels("input_channels", self.input_channels)],
            "SamplesPerBlock": self.samples_per_block, "BlocksToBuffer": self.blocks_to_buffer,
            "ReadWriteTimeout": self.readwrite_timeout.total_seconds(), "SampleDivisor": self.sample_divisor,
            "AuxDivisor": self.aux_divisor,
            "TriggerRisingEdge": check_bool("MachDSPIOConfig.trigger_rising_edge", self.trigger_rising_edge),
            "StopOnError": check_bool("MachDSPIOConfig.stop_on_error", self.stop_on_error)})

    def validate(self) -> None:
        """Raise ValueError with vortex's message when the configuration is inconsistent
        (``must buffer at least 1 block: 0``)."""
        native(api.ValidateMachDSPIOConfig)(self._record())

    def __repr__(self) -> str:
        return (f"<MachDSPIOConfig {self.port!r} @ {self.baud_rate} baud, {self.samples_per_block} samples/block "
                f"x {self.blocks_to_buffer}>")


class MachDSPIO(_DeviceIO):
    """vortex's ``MachDSPIO``: each block's galvo waveforms (``GalvoTarget``) sent to a MachDSP
    digital servo over its serial port, as 16-bit codes (:class:`~vortexgo.machdsp.Channel`
    says how a value becomes one). The servo plays one sample per ``sample_divisor`` external
    triggers (the A-line trigger), with underflow as an error: a host that falls behind stops
    the engine with the servo's ``protocol error: SAI Tx (3): underflow (1)``; a silent servo
    with ``serial read: timeout``, a disconnected one with ``serial read: End of file`` (or
    ``Input/output error``). No strobes are sent, as in vortex.

    While an engine that prepared it has not finished its run, :meth:`close`, :meth:`prepare`,
    :meth:`next` and :meth:`next_async` raise :class:`~vortexgo.InUseError`.

    Args:
        logger: a :class:`logging.Logger` (vortex's first argument), kept as ``logger``.
    """

    _REOPEN = "initialize(config) opens the port again"
    _config_type = MachDSPIOConfig

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger, MachDSPIOConfig())

    @property
    def config(self) -> MachDSPIOConfig:
        """The configuration :meth:`initialize` adopted (a copy)."""
        return self._config.copy()

    def initialize(self, config: MachDSPIOConfig) -> None:
        """Validate ``config``, open its port and configure the servo as vortex does (stream
        stopped and reset, default settings, external trigger, divisors, blocks, errors on
        underflow and overflow). A missing port raises :class:`~vortexgo.VortexError`
        (``open /dev/ttyACM0: No such file or directory``), a busy one
        :class:`~vortexgo.InUseError`, a silent servo ``serial read: timeout``."""
        config = self._checked(config)
        h = native(api.OpenMachDSPIO)(config._record())
        try:
            # the settings wait up to readwrite_timeout each: interruptible by Ctrl-C
            machdsp._interruptible(h.Cancel, native(h.Configure))
        except BaseException:
            native(h.Close)()
            raise
        self._adopt(h, config, "a MachDSP port", f"vortexgo-MachDSPIO-{config.port}", h.Close)

    # The calls that wait on the servo's port are interruptible by Ctrl-C (the call in
    # progress canceled: machdsp._interruptible).

    def _native_call(self, method: str) -> Any:
        h = self._handle()
        return machdsp._interruptible(h.Cancel, native(getattr(h, method)))

    def prepare(self) -> None:
        """vortex's ``prepare``: reset the stream (the engine does it)."""
        self._native_call("Prepare")

    def start(self) -> None:
        """Start the stream (the engine does it)."""
        self._native_call("Start")

    def stop(self) -> None:
        """Stop the stream (the engine does it); the servo's errors while stopping are logged
        by vortex, ignored here."""
        self._native_call("Stop")

    def next(self, count: int, streams: Any, id: int = 0) -> int:
        """Send one block of exactly ``samples_per_block`` samples (vortex's ``next``):
        ``streams`` is vortex's tuple of six host arrays (see :meth:`DAQmxIO.next`); each
        output's column of its stream, every ``sample_divisor``-th sample, becomes codes.
        Returns ``count``. Raises ValueError with vortex's messages (``block is not exactly
        equal to the configured size``, ``stream of dimension 2 is required``, ``stream is
        incorrectly sized``), :class:`~vortexgo.VortexError` for the servo's and the line's
        errors (which stop the stream when ``stop_on_error``), :class:`~vortexgo.ClosedError`
        after :meth:`close`, :class:`~vortexgo.InUseError` while an engine uses the IO.
        Ctrl-C interrupts a block waiting for the servo."""
        h = self._handle()
        return machdsp._interruptible(h.Cancel, _BlockCall(h, count, streams, id).run, self.logger)

    def next_async(self, count: int, streams: Any, callback: Any, id: int = 0) -> None:
        """:meth:`next` on the IO's worker thread, then ``callback(count, exception)`` there
        (vortex's ``next_async``); calls run in order, the arrays held until the callback."""
        check_callable("callback", callback, allow_none=False)
        self._queue(_BlockCall(self._handle(), count, streams, id), callback)

    @property
    def running(self) -> bool:
        """Whether the servo streams (its stream status)."""
        h = self._h
        return h is not None and not self._closed and bool(machdsp._interruptible(h.Cancel, h.Running))

    @property
    def info(self) -> "machdsp.Info":
        """What the servo reported when opened (vortexgo's addition)."""
        return machdsp._info(native(MACHDSP_INFO.read)(self._handle().MachDSPInfo))

    def close(self) -> None:
        """Close the port (refused with InUseError while an engine uses it); afterwards the
        calls raise :class:`~vortexgo.ClosedError`."""
        self._release()

    def __repr__(self) -> str:
        if self._closed:
            return "<MachDSPIO closed>"
        return f"<MachDSPIO {self._config.port!r}{' running' if self.running else ''}>"
