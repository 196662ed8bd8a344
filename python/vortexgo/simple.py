"""vortex's ``vortex.simple``: a whole OCT engine in two calls (``SimpleEngine``).

vortex's SimpleEngine wires an AlazarTech digitizer, a CUDA processor, two NI
DAQmx IOs (galvo output and measured input), a stack and a radial format into
one int8 volume, and optionally a BROCT file and sample-position dumps.
vortexgo's has the same configuration fields, defaults and methods, built
from vortexgo's parts, with the hardware swapped for simulations:

==========================  ==========================================================
vortex                      vortexgo
==========================  ==========================================================
Alazar digitizer            :class:`~vortexgo.acquire.SimulatedAcquisition` (a phantom
                            of ``bscans_per_volume`` x ``ascans_per_bscan`` A-scans
                            of ``samples_per_ascan`` samples, at the swept source's
                            trigger rate unless ``simulated_rate`` says otherwise)
internal clock resampling   the simulated spectrometer's own k-linear positions
                            (:meth:`~vortexgo.acquire.SimulatedAcquisition.resampling_positions`)
DAQmx galvo output / input  one :class:`~vortexgo.io.SimulatedIO` that records the
                            output and feeds it back as the measured position
CUDA processor              CUDAProcessor on a GPU, CPUProcessor on the CPU backend
                            (``device``)
one shared volume           a stack volume ``(bscans, ascans, samples / 2)`` and a
                            radial volume ``(ascans, ascans, samples / 2)``;
                            :meth:`SimpleEngine.volume` is the one last written
==========================  ==========================================================

``input_channel``, ``clock_channel`` and ``internal_clock`` are kept so vortex
scripts set them, and have no effect.
"""

from __future__ import annotations

import copy as _copy
import logging
import math
import threading
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ._attrs import NoCopy, StrictAttributes
from ._device import DeviceLike, get_device
from ._validate import check_callable, check_float, check_int, check_timeout
from .acquire import SimulatedAcquisition, SimulatedAcquisitionConfig
from .engine import (
    BroctStorageEndpoint,
    Engine,
    EngineConfig,
    RadialDeviceTensorEndpointInt8,
    StackDeviceTensorEndpointInt8,
    StreamDumpStorage,
)
from .format import (
    FormatPlanner,
    FormatPlannerConfig,
    RadialFormatExecutor,
    RadialFormatExecutorConfig,
    SimpleSlice,
    StackFormatExecutor,
    StackFormatExecutorConfig,
)
from .io import SimulatedIO
from .marker import Flags
from .process import CPUProcessor, CUDAProcessor, ProcessorConfig
from .source import Source, dispersion_phasor
from .storage import BroctStorage, BroctStorageConfig, StreamDump, StreamDumpConfig

__all__ = ["SimpleEngine", "SimpleEngineConfig"]

#: vortex's stream indices of the sample positions (Block.StreamIndex).
_SAMPLE_TARGET, _SAMPLE_ACTUAL = 2, 4
#: The galvo scale vortex's SimpleEngine configures (volts per unit; kept for the record).
_RADIAL_EXTENT = (-5.0, 5.0)


class SimpleEngineConfig(StrictAttributes):
    """vortex's ``SimpleEngineConfig``: the same fields and defaults, plus vortexgo's
    ``device`` and ``simulated_rate`` (what stands in for the hardware's pace).

    Attributes:
        input_channel: the digitizer's input channel; no effect here.
        clock_channel: the digitizer's clock channel; no effect here.
        internal_clock: measure the source's k-clock; here the simulated spectrometer's
            k-linear positions stand in for it either way.
        broct_save_path: when set, every volume of the stack format goes to this BROCT file.
        sample_target_save_path: when set, the sample target positions of every block are dumped there.
        sample_actual_save_path: when set, the measured sample positions of every block are dumped there.
        swept_source: a :class:`~vortexgo.source.Source` (its ``triggers_per_second``
            sets the scan rate and the simulated rate).
        galvo_delay: seconds the galvo output leads the acquisition.
        dispersion: second- and third-order dispersion coefficients.
        samples_per_ascan: samples of each spectrum (half are kept after the FFT).
        ascans_per_bscan: A-scans of each B-scan.
        bscans_per_volume: B-scans of each volume.
        blocks_to_acquire: 0 runs until :meth:`SimpleEngine.stop`.
        blocks_to_allocate: blocks in the engine's pool.
        ascans_per_block: A-scans of each block.
        preload_count: blocks acquired ahead of processing.
        process_slots: concurrent processing streams.
        device: None picks the default device (a GPU if there is one, else the CPU).
        simulated_rate: A-scans per second the simulated acquisition delivers;
            None (default) paces it at ``swept_source.triggers_per_second``, 0 as fast as
            the engine takes them.
    """

    def __init__(self) -> None:
        self.input_channel: Any = "B"
        self.clock_channel: Any = "A"
        self.internal_clock = False
        self.broct_save_path = ""
        self.sample_target_save_path = ""
        self.sample_actual_save_path = ""
        self.swept_source = Source(100_000, 1376, 0.50)
        self.galvo_delay = 0.0
        self.dispersion = (0.0, 0.0)
        self.samples_per_ascan = 2752
        self.ascans_per_bscan = 500
        self.bscans_per_volume = 500
        self.blocks_to_acquire = 0
        self.blocks_to_allocate = 128
        self.ascans_per_block = 500
        self.preload_count = 4
        self.process_slots = 2
        self.device: DeviceLike = None
        self.simulated_rate: Optional[float] = None

    def copy(self) -> "SimpleEngineConfig":
        """A shallow copy (vortex's ``copy``)."""
        return _copy.copy(self)

    __copy__ = None  # type: ignore[assignment] - copy.copy's default does the shallow copy
    del __copy__

    def _validated(self) -> "SimpleEngineConfig":
        c = self.copy()
        o = "SimpleEngineConfig"
        if not isinstance(c.swept_source, Source):
            raise TypeError(f"{o}.swept_source={c.swept_source!r}, expected a Source (vortex.engine.source.Axsun100k)")
        c.galvo_delay = check_float(f"{o}.galvo_delay", c.galvo_delay, 0.0)
        try:
            c.dispersion = tuple(float(d) for d in c.dispersion)
        except (TypeError, ValueError):
            raise TypeError(f"{o}.dispersion={c.dispersion!r}, expected two numbers") from None
        if len(c.dispersion) != 2:
            raise ValueError(f"{o}.dispersion={c.dispersion!r}, expected two numbers (2nd and 3rd order)")
        c.samples_per_ascan = check_int(f"{o}.samples_per_ascan", c.samples_per_ascan, 16, 1 << 20)
        c.ascans_per_bscan = check_int(f"{o}.ascans_per_bscan", c.ascans_per_bscan, 1, 1 << 20)
        c.bscans_per_volume = check_int(f"{o}.bscans_per_volume", c.bscans_per_volume, 1, 1 << 20)
        c.blocks_to_acquire = check_int(f"{o}.blocks_to_acquire", c.blocks_to_acquire, 0)
        c.blocks_to_allocate = check_int(f"{o}.blocks_to_allocate", c.blocks_to_allocate, 1, 1 << 16)
        c.ascans_per_block = check_int(f"{o}.ascans_per_block", c.ascans_per_block, 1, 1 << 20)
        c.preload_count = check_int(f"{o}.preload_count", c.preload_count, 0, c.blocks_to_allocate)
        c.process_slots = check_int(f"{o}.process_slots", c.process_slots, 1, 64)
        if c.simulated_rate is not None:
            c.simulated_rate = check_float(f"{o}.simulated_rate", c.simulated_rate, 0.0)
        for name in ("broct_save_path", "sample_target_save_path", "sample_actual_save_path"):
            v = getattr(c, name)
            if not isinstance(v, str):
                raise TypeError(f"{o}.{name}={v!r}, expected a str ('' for none)")
        return c

    def __repr__(self) -> str:
        return (f"SimpleEngineConfig({self.bscans_per_volume} x {self.ascans_per_bscan} x {self.samples_per_ascan}, "
                f"{self.ascans_per_block} A-scans per block, blocks_to_acquire={self.blocks_to_acquire})")


def _logger(scope: Optional[str], part: str) -> Optional[logging.Logger]:
    # vortex looks its parts' loggers up by name (spdlog::get(scope + part)); Python's
    # logging registry is ours. No scope: the parts' own defaults.
    return logging.getLogger(f"{scope}{part}") if scope else None


class SimpleEngine(NoCopy, StrictAttributes):
    """vortex's ``SimpleEngine(log_scope="")`` over simulated hardware (see the module).

    ``initialize(config)`` builds and prepares everything; then ``append_scan`` /
    ``interrupt_scan`` (raster, radial, spiral, repeated or freeform scans; flags
    0x1 go to the stack volume, 0x2 to the radial one), ``start(callback)`` with
    ``callback(radial: bool, bscans: list[int])``, ``wait``, ``wait_for``, ``stop``
    and ``volume()`` (``with engine.volume() as vol:`` locks it).
    """

    def __init__(self, log_scope: str = "") -> None:
        if not isinstance(log_scope, str):
            raise TypeError(f"log_scope={log_scope!r}, expected a str")
        self._scope = log_scope
        self._config: Optional[SimpleEngineConfig] = None
        self._engine: Optional[Engine] = None
        self._lock = threading.Lock()
        self._last = None  # the endpoint last written: volume() gives its tensor
        self._storages: List[Any] = []
        self._started = False

    @property
    def config(self) -> Optional[SimpleEngineConfig]:
        """The configuration :meth:`initialize` adopted (a copy), or None."""
        return self._config

    @property
    def engine(self) -> Engine:
        """The :class:`~vortexgo.engine.Engine` underneath (vortexgo's: status, timings)."""
        if self._engine is None:
            raise RuntimeError("SimpleEngine is not initialized, expected initialize(config) first")
        return self._engine

    @property
    def acquisition(self) -> SimulatedAcquisition:
        """The simulated acquisition standing in for the digitizer."""
        self.engine
        return self._acquire

    @property
    def io(self) -> SimulatedIO:
        """The simulated galvo IO standing in for the DAQmx cards."""
        self.engine
        return self._io

    def initialize(self, config: SimpleEngineConfig) -> None:
        """Build the acquisition, processor, IO, formats, endpoints and the engine, and prepare it."""
        if not isinstance(config, SimpleEngineConfig):
            raise TypeError(f"config={config!r}, expected a SimpleEngineConfig")
        if self._engine is not None:
            raise RuntimeError("SimpleEngine is already initialized, expected one initialize() per SimpleEngine")
        c = config._validated()
        dev = get_device(c.device)
        s = self._scope

        rate = c.swept_source.triggers_per_second if c.simulated_rate is None else c.simulated_rate
        self._acquire = SimulatedAcquisition(SimulatedAcquisitionConfig(
            samples_per_record=c.samples_per_ascan, ascans_per_bscan=c.ascans_per_bscan,
            bscans_per_volume=c.bscans_per_volume, rate=float(rate)), _logger(s, "acquire"))

        # vortex: a Hann window times the dispersion phasor; the simulated spectrometer's
        # k-nonlinearity and dispersion stand in for the measured clock and the sample's.
        pc = ProcessorConfig()
        pc.samples_per_record = c.samples_per_ascan
        pc.ascans_per_block = c.ascans_per_block
        pc.slots = c.process_slots
        pc.resampling_samples = self._acquire.resampling_positions()
        n = c.samples_per_ascan
        window = 0.5 - 0.5 * np.cos(2 * math.pi * np.arange(n) / (n - 1))
        pc.spectral_filter = (window * dispersion_phasor(n, c.dispersion)
                              * self._acquire.dispersion_compensation()).astype(np.complex64)
        pc.average_window = 2 * c.ascans_per_block
        proc_cls = CUDAProcessor if dev.is_cuda else CPUProcessor
        self._process = proc_cls(pc, _logger(s, "process"), device=dev)

        self._io = SimulatedIO(feedback=True)

        fc = FormatPlannerConfig()
        fc.segments_per_volume = c.bscans_per_volume
        fc.records_per_segment = c.ascans_per_bscan
        fc.adapt_shape = False
        fc.mask = Flags(0x01)
        self._stack_format = FormatPlanner(fc, _logger(s, "format"))
        fc.mask = Flags(0x02)
        self._radial_format = FormatPlanner(fc, _logger(s, "format"))

        keep = n // 2
        cfec = StackFormatExecutorConfig()
        cfec.sample_slice = SimpleSlice(keep)
        self._stack = StackDeviceTensorEndpointInt8(StackFormatExecutor(cfec), (c.bscans_per_volume, c.ascans_per_bscan, keep),
                                                     _logger(s, "endpoint"))
        rfec = RadialFormatExecutorConfig()
        rfec.sample_slice = SimpleSlice(keep)
        rfec.x_extent = rfec.y_extent = rfec.radial_extent = _RADIAL_EXTENT
        rfec.angular_extent = (0.0, math.pi)
        rfec.radial_segments_per_volume = c.bscans_per_volume
        rfec.radial_records_per_segment = c.ascans_per_bscan
        self._radial = RadialDeviceTensorEndpointInt8(RadialFormatExecutor(rfec),
                                                      (c.ascans_per_bscan, c.ascans_per_bscan, keep),
                                                      _logger(s, "endpoint"))

        stack_endpoints: list = [self._stack]
        storages: list = []
        try:
            if c.broct_save_path:
                st = BroctStorage(_logger(s, "storage"))
                bc = BroctStorageConfig()
                bc.path = c.broct_save_path
                bc.shape = (c.bscans_per_volume, c.ascans_per_bscan, keep)
                st.open(bc)
                storages.append(st)
                stack_endpoints.append(BroctStorageEndpoint(StackFormatExecutor(cfec), st))
            for path, stream in ((c.sample_target_save_path, _SAMPLE_TARGET), (c.sample_actual_save_path, _SAMPLE_ACTUAL)):
                if path:
                    d = StreamDump(_logger(s, "dump"))
                    d.open(StreamDumpConfig(path=path, stream=stream))
                    storages.append(d)
                    stack_endpoints.append(StreamDumpStorage(d))

            ec = EngineConfig()
            ec.add_acquisition(self._acquire, [self._process])
            ec.add_processor(self._process, [self._stack_format, self._radial_format])
            ec.add_io(self._io, lead_samples=round(c.galvo_delay * c.swept_source.triggers_per_second))
            ec.add_formatter(self._stack_format, stack_endpoints)
            ec.add_formatter(self._radial_format, [self._radial])
            ec.preload_count = c.preload_count
            ec.records_per_block = c.ascans_per_block
            ec.blocks_to_allocate = c.blocks_to_allocate
            ec.blocks_to_acquire = c.blocks_to_acquire
            ec.galvo_output_channels = 2
            ec.galvo_input_channels = 2

            eng = Engine(ec, device=dev, logger=_logger(s, "engine"))
            eng.prepare()
        except BaseException:
            for st in storages:
                st.close()
            raise
        self._storages = storages
        self._engine = eng
        self._config = c
        self._last = self._stack

    def append_scan(self, scan: Any) -> None:
        """Queue ``scan`` after the scans already queued."""
        self.engine.scan_queue.append(scan)

    def interrupt_scan(self, scan: Any) -> None:
        """Replace the queued scans with ``scan``, switching at the next segment boundary."""
        self.engine.scan_queue.interrupt(scan)

    def start(self, callback: Optional[Callable[[bool, List[int]], Any]] = None) -> None:
        """Start acquiring. ``callback(radial, bscans)`` gets the B-scans each block
        finished (``radial`` says which volume), after they are in :meth:`volume`."""
        check_callable("callback", callback)
        eng = self.engine
        for ep, radial in ((self._stack, False), (self._radial, True)):
            ep.aggregate_segment_callback = self._forward(ep, radial, callback)
        eng.start()
        self._started = True

    def _forward(self, ep: Any, radial: bool, callback: Optional[Callable]) -> Callable:
        def cb(bscans: Sequence[int]) -> None:
            with self._lock:
                self._last = ep
            if callback is not None:
                # vortex synchronises the endpoint's stream before calling back, so the
                # callback reads finished data.
                ep.stream.synchronize()
                callback(radial, list(bscans))
        return cb

    def wait(self) -> None:
        """Block until the engine finishes (``blocks_to_acquire``, or the scans end); raises its error."""
        self.engine.wait()

    def wait_for(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True once the engine has finished."""
        return self.engine.wait_for(check_timeout("timeout", timeout))

    def stop(self) -> None:
        """Stop the engine, wait for it, and close the storage files."""
        eng = self.engine
        try:
            if self._started:  # a SimpleEngine never started has nothing to stop
                eng.stop()
                eng.wait()
        finally:
            for st in self._storages:
                st.close()

    def volume(self) -> Any:
        """The volume last written (stack or radial), locked with ``with engine.volume() as vol:``
        (a CuPy array on a GPU, NumPy on the CPU backend)."""
        self.engine
        with self._lock:
            return self._last.tensor

    def close(self) -> None:
        """Stop if running and release everything (the engine, storages)."""
        if self._engine is None:
            return
        try:
            if self._started and not self._engine.done:
                self.stop()
        finally:
            for st in self._storages:
                st.close()
            self._engine.close()

    def __enter__(self) -> "SimpleEngine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._engine is None:
            return "<SimpleEngine (not initialized)>"
        return f"<SimpleEngine {self._config!r} on {self._engine!r}>"
