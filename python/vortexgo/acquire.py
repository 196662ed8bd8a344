"""Acquisitions: sources of raw spectra (vortex's ``vortex.acquire``).

- :class:`SimulatedAcquisition`: spectral-domain OCT interferograms (uint16)
  of a layered 3D phantom, through a Gaussian source spectrum, a
  spectrometer even in wavelength (so resampling matters), dispersion and
  shot noise. Synthesised once at ``prepare`` and replayed at full speed, or
  at ``rate`` A-scans per second like a real scanner.
- :class:`FileAcquisition`: replays raw uint16 spectra from a raw file or a
  ``.npy`` file (vortex's config fields, defaults and standalone
  ``prepare/start/next/stop``).
- :class:`NullAcquisition`: no acquisition (vortex's): zeros in an engine,
  to measure the pipeline alone.
- An AlazarTech digitizer: :mod:`vortexgo.alazar` (``AlazarAcquisition``,
  ``AlazarConfig``; ``vortex.acquire.AlazarAcquisition`` under
  :func:`vortexgo.compat.install`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._attrs import Config, NoCopy, StrictAttributes
from ._core import api
from ._errors import ClosedError, native, release_on_collect
from ._validate import check_callable, check_float, check_int
from .log import is_logger

__all__ = [
    "SimulatedAcquisitionConfig", "SimulatedAcquisition",
    "FileAcquisitionConfig", "FileAcquisition",
    "NullAcquisitionConfig", "NullAcquisition", "record_raster",
]

def record_raster(ascans: int, bscans: int, *, loop: bool = False, bidirectional: bool = False) -> Any:
    """vortex's raster scan with every record active and in acquisition order:
    ``bscans`` segments of ``ascans`` records, the first starting at the origin
    (no lead-in sample) and every inactive path 0 samples long, so record ``r``
    of a run is A-scan ``r % ascans`` of B-scan ``r // ascans`` (of the volume
    ``r // (ascans * bscans)``): the layout :class:`SimulatedAcquisition` and a
    replayed :class:`FileAcquisition` deliver. vortex's default inactive policy
    adds flyback records, which would shear such a phantom's volumes; a real
    scanner samples the flyback instead. The 0-sample paths jump, so the limits
    check is bypassed (no scanner is driven).
    """
    from .scan import RasterScan, RasterScanConfig, inactive_policy  # scan imports nothing from here

    c = RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume = ascans, bscans
    c.bidirectional_segments, c.loop = bidirectional, loop
    c.inactive_policy = inactive_policy.FixedLinear(0, 0)
    c.bypass_limits_check = True
    scan = RasterScan()
    scan.initialize(c)
    first = scan.scan_buffer()[0]
    c.offset = (c.offset[0] - first[0], c.offset[1] - first[1])
    scan.initialize(c)
    return scan


def _int(owner: str, name: str, v: Any, lo: int) -> int:
    return check_int(f"{owner}.{name}", v, lo)


def _float(owner: str, name: str, v: Any, lo: Optional[float] = 0.0) -> float:
    return check_float(f"{owner}.{name}", v, lo)


def _new(new: Any, config: dict) -> Any:
    """The Go acquisition that ``new`` (one of pyapi's constructors) builds
    from its config's fields, as one JSON record."""
    return new(json.dumps(config))


class _Acquisition(NoCopy, StrictAttributes):
    """Common base: a native handle made by :meth:`initialize`.

    A subclass names its config type (``_config_type``) and either pyapi's constructor that takes
    the config's JSON record (``_constructor``: the drivers') or a ``_create`` of its own; its
    ``__repr__`` is ``<Name ...>`` with :meth:`_describe`'s words once initialized."""

    _config_type: type = object
    #: The name of pyapi's constructor taking ``json.dumps(config._record())``.
    _constructor: str = ""

    def __init__(self, config: Any = None, logger: Optional[logging.Logger] = None, **fields: Any) -> None:
        self._h = None
        self._closed = False
        # vortex passes a logger first: SimulatedAcquisition(get_logger(...)).
        if is_logger(config):
            config, logger = None, config
        self.logger = logger
        self._config = self._config_type()
        if config is not None or fields:
            self.initialize(config, **fields)

    @property
    def config(self) -> Any:
        """The configuration, as a copy (read-only as vortex's, each read a new copy).

        Change it with :meth:`initialize`, e.g. ``c = acq.config; c.loop = False; acq.initialize(c)``.
        """
        return self._config.copy()

    @config.setter
    def config(self, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__}.config is read-only: "
                             "initialize(config) adopts a configuration")

    def initialize(self, config: Any = None, **fields: Any) -> None:
        """Validate and adopt ``config`` (copied); ``fields`` override its attributes."""
        if config is not None and not isinstance(config, self._config_type):
            raise TypeError(f"config={config!r}, expected a {self._config_type.__name__}")
        cfg = dataclasses.replace(config) if config is not None else self._config_type()
        for k, v in fields.items():
            if not hasattr(cfg, k):
                raise TypeError(f"{type(self).__name__}: unknown field {k!r}")
            setattr(cfg, k, v)
        h = native(self._create)(cfg)
        if self._h is not None:
            try:
                native(self._h.Close)()
            except BaseException:
                h.Close()  # InUseError while an engine uses it: nothing changes
                raise
            self._fin.detach()
        self._h = h
        # Frees the pinned replay ring an engine may have asked for.
        self._fin = release_on_collect(self, self._h.Close, "an acquisition")
        self._config = cfg
        self._closed = False  # initialize() after close() makes a new source

    def _create(self, cfg: Any):
        """The native acquisition of ``cfg``: ``_constructor``'s, unless a subclass builds it."""
        if not self._constructor:  # pragma: no cover - abstract
            raise NotImplementedError
        return getattr(api, self._constructor)(json.dumps(cfg._record()))

    def _describe(self) -> str:  # pragma: no cover - abstract
        """What ``repr`` says of an initialized acquisition after its class's name."""
        raise NotImplementedError

    def __repr__(self) -> str:
        name = type(self).__name__
        if self._h is None or self._closed:
            return f"<{name} {'closed' if self._closed else '(not initialized)'}>"
        return f"<{name} {self._describe()}>"

    def _handle(self):
        if self._closed:
            raise ClosedError(f"{type(self).__name__} is closed, expected an open acquisition "
                              "(initialize(config) makes a new one)")
        if self._h is None:
            raise ValueError(f"{type(self).__name__} is not initialized, expected initialize(config) first")
        return self._h

    @property
    def samples_per_record(self) -> int:
        """The raw spectrum length (for a ``.npy`` FileAcquisition: known after :meth:`prepare`)."""
        return self._handle().SamplesPerRecord()

    @native
    def prepare(self) -> None:
        """Ready the source now (the engine's ``prepare`` does it too)."""
        self._handle().Prepare()

    @native
    def close(self) -> None:
        """Free the source's pinned memory.

        Raises :class:`~vortexgo.InUseError` while an engine that prepared the
        source has not finished its run (the engine uploads from that memory):
        stop the engine first, then close. Afterwards every method raises
        :class:`~vortexgo.ClosedError`; closing again does nothing.
        """
        if self._h is not None and not self._closed:
            self._h.Close()  # InUseError leaves the source open and usable
            self._fin.detach()
            self._closed = True


@dataclass
class SimulatedAcquisitionConfig(Config):
    """Configuration of a :class:`SimulatedAcquisition` (an 840 nm spectrometer by default).

    Attributes:
        samples_per_record: spectrometer pixels per A-scan (>= 16).
        ascans_per_bscan: the phantom's A-scans per B-scan; match it to
            the :class:`~vortexgo.scan.RasterScan`.
        bscans_per_volume: the phantom's B-scans per volume, likewise.
        volumes: distinct volumes synthesised once and replayed in a ring.
        total_volumes: volumes delivered before the end; 0 replays forever.
        rate: A-scans per second; 0 delivers as fast as the engine asks.
        seed: makes the phantom and the noise reproducible.
        noise_level: shot noise scale (0 = noiseless).
        reference_level: reference arm level, in counts.
        dark_level: detector offset, in counts.
        center_wavelength: in metres.
        wavelength_span: of the spectrometer, in metres.
        source_bandwidth: of the Gaussian source, in metres.
        dispersion: quadratic phase mismatch at the band edges, radians.
    """

    samples_per_record: int = 1024
    ascans_per_bscan: int = 256
    bscans_per_volume: int = 256
    volumes: int = 2
    total_volumes: int = 0
    rate: float = 0.0
    seed: int = 1
    noise_level: float = 1.0
    reference_level: float = 20000.0
    dark_level: float = 500.0
    center_wavelength: float = 840e-9
    wavelength_span: float = 100e-9
    source_bandwidth: float = 50e-9
    dispersion: float = 30.0

    @property
    def records_per_volume(self) -> int:
        """A-scans per volume."""
        return self.ascans_per_bscan * self.bscans_per_volume


class SimulatedAcquisition(_Acquisition):
    """Simulated spectral-domain OCT: a layered 3D phantom whose layers vary across
    the volume (so projections show structure), seen through a Gaussian source,
    a k-space nonlinearity, dispersion and noise; uint16 spectra.

    Use :meth:`resampling_positions` and :meth:`dispersion_compensation` to
    configure a processor for it.
    """

    _config_type = SimulatedAcquisitionConfig

    def _create(self, c: SimulatedAcquisitionConfig):
        o = "SimulatedAcquisitionConfig"
        return _new(api.NewSimulatedAcquisition, {
            "SamplesPerRecord": _int(o, "samples_per_record", c.samples_per_record, 16),
            "AscansPerBscan": _int(o, "ascans_per_bscan", c.ascans_per_bscan, 1),
            "BscansPerVolume": _int(o, "bscans_per_volume", c.bscans_per_volume, 1),
            "Volumes": _int(o, "volumes", c.volumes, 1), "TotalVolumes": _int(o, "total_volumes", c.total_volumes, 0),
            "Rate": _float(o, "rate", c.rate), "Seed": _int(o, "seed", c.seed, 0),
            "NoiseLevel": _float(o, "noise_level", c.noise_level),
            "ReferenceLevel": _float(o, "reference_level", c.reference_level),
            "DarkLevel": _float(o, "dark_level", c.dark_level),
            "CenterWavelength": _float(o, "center_wavelength", c.center_wavelength),
            "WavelengthSpan": _float(o, "wavelength_span", c.wavelength_span),
            "SourceBandwidth": _float(o, "source_bandwidth", c.source_bandwidth),
            "Dispersion": _float(o, "dispersion", c.dispersion, None)})

    @staticmethod
    def _phantom(get: Any, *ascan: int, size: int) -> np.ndarray:
        """One of the phantom's arrays as float64s: ``get`` (a method of the
        Go handle) writes it into a buffer and returns its length."""
        buf = np.empty(size, np.float64)  # the size it has, or a guess; a second call when short
        n = get(*ascan, buf.ctypes.data, size)
        if n > size:
            buf = np.empty(n, np.float64)
            n = get(*ascan, buf.ctypes.data, n)
        return buf[:n]

    @native
    def resampling_positions(self) -> np.ndarray:
        """Fractional raw-pixel positions of samples even in wavenumber (float32):
        ``resampling_samples`` of :class:`~vortexgo.process.ProcessorConfig` for this spectrometer."""
        return self._phantom(self._handle().ResamplingPositions, size=self._config.samples_per_record).astype(np.float32)

    @native
    def dispersion_compensation(self) -> np.ndarray:
        """The complex64 phasor that undoes the simulated dispersion; multiply a
        window into it for ``spectral_filter`` of :class:`~vortexgo.process.ProcessorConfig`."""
        v = self._phantom(self._handle().DispersionCompensation, size=2 * self._config.samples_per_record)
        return v.view(np.complex128).astype(np.complex64)

    @native
    def reflectors(self, volume: int, bscan: int, ascan: int) -> list[tuple[float, float]]:
        """The phantom's interfaces seen by one A-scan: ``(depth_bin, reflectivity)`` pairs."""
        args = (check_int("volume", volume, 0), check_int("bscan", bscan, 0), check_int("ascan", ascan, 0))
        v = self._phantom(self._handle().Reflectors, *args, size=16).tolist()  # most A-scans see fewer than 8
        return list(zip(v[0::2], v[1::2]))

    def _describe(self) -> str:
        c = self._config
        rate = f"{c.rate:.3g} A-scans/s" if c.rate else "unthrottled"
        total = "forever" if c.total_volumes == 0 else f"{c.total_volumes} volumes"
        return f"{c.bscans_per_volume} x {c.ascans_per_bscan} x {c.samples_per_record} uint16, {total}, {rate}"


@dataclass
class _BlockShape(Config):
    """vortex's acquisition config fields (its ``NullAcquisitionConfig``)."""

    samples_per_record: int = 1024
    records_per_block: int = 1000
    channels_per_sample: int = 1

    _min_samples = 1

    @property
    def shape(self) -> list[int]:
        """The shape of the buffers :meth:`NullAcquisition.next` fills,
        ``[records_per_block, samples_per_record, channels_per_sample]``."""
        return [self.records_per_block, self.samples_per_record, self.channels_per_sample]

    def validate(self) -> None:
        """Raise ValueError or TypeError naming the first bad field."""
        o = type(self).__name__
        _int(o, "samples_per_record", self.samples_per_record, self._min_samples)
        _int(o, "records_per_block", self.records_per_block, 1)
        _int(o, "channels_per_sample", self.channels_per_sample, 1)

    def copy(self):
        """A copy of this configuration."""
        return dataclasses.replace(self)


@dataclass
class FileAcquisitionConfig(_BlockShape):
    """Configuration of a :class:`FileAcquisition` (vortex's fields and defaults).

    Attributes:
        path: a raw file of uint16 values, record after record (vortex's
            format), or a ``.npy`` file (detected by content) of uint16 whose
            last axis is the record (or last two: samples, channels).
        samples_per_record: samples per record (default 1024, vortex's);
            for a ``.npy`` file 0 takes it from the header.
        records_per_block: records of the buffers :meth:`FileAcquisition.next`
            fills (:attr:`shape`); the engine's blocks follow
            ``EngineConfig.records_per_block``.
        channels_per_sample: interleaved channels per sample.
        loop: replay from the start instead of ending (vortex's default: True).
        rate: A-scans per second; 0 is unthrottled (ours).
        pin: whether an engine on a GPU uploads straight from the file's pages
            in the page cache, mapped read-only and pinned in place, with no host
            copy (ours): ``None`` (default) pins little-endian files up to a quarter
            of the host's memory, ``True`` pins whatever the size and makes
            ``prepare`` fail where it cannot (the CPU backend, a big-endian file),
            ``False`` reads every block. Pinning reads the whole file in at the
            engine's ``prepare`` and keeps it in memory until the source is closed;
            a file changed while pinned stops the engine with an error (prepare
            it again). :attr:`FileAcquisition.pinned` tells which path an engine
            took.
        offset: with ``length``, the records replayed: bytes ``[offset,
            offset + length)`` of the file, whole records (ours). 0 and 0
            replay all the data; ``length`` 0 replays from ``offset`` to the
            end. In a ``.npy`` file the range lies in the data after the header
            (which still gives the spectrum length and byte order); any other
            file is read as raw records from ``offset`` (so the data of a
            MATLAB, NRRD or NIfTI stack replay too). Only the range is read;
            :meth:`FileAcquisition.prepare` refuses one past the file's end,
            naming the file, the range and where the file ends.
            :mod:`vortexgo.distributed` gives each task one such range.
        length: the range's length in bytes (see ``offset``).
    """

    path: str = ""
    loop: bool = True
    rate: float = 0.0
    pin: Optional[bool] = None
    offset: int = 0
    length: int = 0

    _min_samples = 0


@dataclass
class NullAcquisitionConfig(_BlockShape):
    """Configuration of a :class:`NullAcquisition` (vortex's fields and defaults).

    Attributes:
        samples_per_record: samples per record of the buffers (:attr:`shape`).
        records_per_block: records of the buffers.
        channels_per_sample: channels per sample of the buffers.
        records: records delivered before the end; 0 is endless (ours).
        rate: A-scans per second in an engine; 0 is unthrottled (ours).
    """

    records: int = 0
    rate: float = 0.0


def _host_uint16(buffer: Any) -> np.ndarray:
    """``buffer`` (a NumPy uint16 array, or host memory exporting the array
    interface: vortexgo's host tensors, a memoryview) as a writable C-ordered
    NumPy view of the caller's memory, never a copy; CUDA arrays are refused."""
    if isinstance(buffer, np.ndarray):
        a = buffer
    elif hasattr(buffer, "__array_interface__") or isinstance(buffer, memoryview):
        a = np.asarray(buffer)  # zero-copy: the caller's memory
    elif hasattr(buffer, "__cuda_array_interface__"):
        raise TypeError(f"buffer: a CUDA array ({type(buffer).__name__}), expected host memory "
                        "(a NumPy uint16 array)")
    else:
        raise TypeError(f"buffer={type(buffer).__name__}, expected a NumPy uint16 array "
                        "(written in place, so never a copy)")
    if a.dtype != np.uint16 or not a.dtype.isnative:
        raise TypeError(f"buffer: dtype {a.dtype.str}, expected uint16 in native byte order")
    if a.ndim == 0:
        raise ValueError("buffer: a 0-d array, expected (records, samples_per_record, channels_per_sample)")
    if not a.flags.c_contiguous:
        raise ValueError(f"buffer: strides {a.strides}, expected a C-contiguous array")
    if not a.flags.writeable:
        raise ValueError("buffer: read-only, expected a writable array")
    return a


class _Standalone(_Acquisition):
    """vortex's standalone calls: ``start``, ``stop``, ``next``, ``next_async``."""

    @property
    def samples_per_record(self) -> int:
        """The samples of one record (for a ``.npy`` FileAcquisition with
        ``samples_per_record=0``: known after :meth:`prepare`)."""
        return self._handle().SamplesPerRecord() // self._config.channels_per_sample

    @native
    def start(self) -> None:
        """Start the acquisition (a FileAcquisition opens its file, and replays it
        from the first record). Raises :class:`~vortexgo.InUseError` while an
        engine that prepared the source has not finished."""
        self._handle().Start()

    @native
    def stop(self) -> None:
        """Stop the acquisition (a FileAcquisition closes its file)."""
        self._handle().Stop()

    @native
    def _debug_panic(self, lend: bool = False) -> None:
        """A test hook (NullAcquisition only, with ``VORTEXGO_TEST_PANICS=1``;
        otherwise a ValueError): a Go panic in this call, or with ``lend`` in
        the engine's next Lend of a block."""
        self._handle().DebugPanic(lend)

    def _buffer(self, buffer: Any) -> np.ndarray:
        """``buffer`` as a writable C-ordered uint16 NumPy view of shape
        (records, samples_per_record, channels_per_sample), as vortex's
        ``morph_right(3)`` reads it: missing axes are 1, axes after the
        third are folded into the channels."""
        a = _host_uint16(buffer)
        samples = a.shape[1] if a.ndim >= 2 else 1
        channels = int(np.prod(a.shape[2:])) if a.ndim >= 3 else 1
        want_s, want_c = self.samples_per_record, self._config.channels_per_sample
        if samples != want_s or channels != want_c:
            raise ValueError(f"buffer: shape {a.shape}, expected (records, {want_s}, {want_c}) "
                             f"(records, samples_per_record, channels_per_sample)")
        return a

    def next(self, buffer: Any, id: int = 0) -> int:
        """Acquire into ``buffer`` (NumPy uint16, shape ``(records,
        samples_per_record, channels_per_sample)``; see ``config.shape``)
        and return the number of records acquired: fewer at the end of the
        data, then 0. ``id`` is for logging only."""
        id = check_int("id", id, 0)
        a = self._buffer(buffer)
        if self.logger is not None:
            self.logger.debug("acquiring block %d", id)
        return int(native(self._handle().Next)(a.shape[0], a.ctypes.data, a.size))

    def next_async(self, buffer: Any, callback: Any, id: int = 0) -> None:
        """:meth:`next`, then ``callback(records, exception)`` (exception None on
        success). As vortex allows, the callback runs in the calling thread
        before this returns; an error is passed to it, not raised."""
        check_callable("callback", callback, allow_none=False)
        try:
            n, exc = self.next(buffer, id), None
        except Exception as e:  # vortex reports every failure to the callback
            n, exc = 0, e
        callback(n, exc)


class FileAcquisition(_Standalone):
    """Replays raw spectra from a file, as vortex's: a raw uint16 file (or ``.npy``).

    :meth:`prepare` checks the file: one that ends in the middle of a record
    is refused with a ValueError naming the bytes left over (vortex reports
    it at the block that reaches the end). In an engine, blocks are read
    straight into the engine's pinned memory by several reader threads.
    """

    _config_type = FileAcquisitionConfig

    def _create(self, c: FileAcquisitionConfig):
        o = "FileAcquisitionConfig"
        c.validate()
        path = os.fspath(c.path) if isinstance(c.path, os.PathLike) else c.path
        if not isinstance(path, str) or not path:
            raise ValueError(f"{o}.path={c.path!r}, expected a file path")
        return _new(api.NewFileAcquisition, {"Path": path,
                                        "SamplesPerRecord": _int(o, "samples_per_record", c.samples_per_record, 0),
                                        "ChannelsPerSample": _int(o, "channels_per_sample", c.channels_per_sample, 1),
                                        "Loop": bool(c.loop), "Rate": _float(o, "rate", c.rate),
                                        "Pin": _pin_mode(c.pin),
                                        "Offset": _int(o, "offset", c.offset, 0),
                                        "Length": _int(o, "length", c.length, 0)})

    @property
    def pinned(self) -> bool:
        """Whether the file is pinned in place for an engine to upload from
        (``config.pin``): true after an engine on a GPU prepared with it, until
        :meth:`close`; false where blocks are read into the engine's buffers."""
        return bool(native(self._handle().Pinned)())

    def _describe(self) -> str:
        return f"{self._config.path!r}{' loop' if self._config.loop else ''}"


def _pin_mode(pin: Any) -> int:
    """FileAcquisitionConfig.pin as Go's acquire.PinMode: None auto, False never, True always."""
    if pin is None:
        return 0
    if isinstance(pin, (bool, np.bool_)):
        return 2 if pin else 1
    raise ValueError(f"FileAcquisitionConfig.pin={pin!r}, expected None (pin files up to a quarter of the "
                     "host's memory), True (always pin) or False (never: read every block)")


class NullAcquisition(_Standalone):
    """Performs no acquisition, as vortex's: :meth:`next` reports the buffer's
    records and leaves it as it is. In an engine it lends one block of zeros,
    zeroed once, so it costs the engine nothing per block."""

    _config_type = NullAcquisitionConfig

    def _create(self, c: NullAcquisitionConfig):
        o = "NullAcquisitionConfig"
        c.validate()
        return _new(api.NewNullAcquisition, {"SamplesPerRecord": _int(o, "samples_per_record", c.samples_per_record, 1),
                                        "ChannelsPerSample": _int(o, "channels_per_sample", c.channels_per_sample, 1),
                                        "Records": _int(o, "records", c.records, 0), "Rate": _float(o, "rate", c.rate)})

    def _describe(self) -> str:
        return f"{self._config.samples_per_record} samples"
