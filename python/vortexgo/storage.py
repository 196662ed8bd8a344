"""Storage: volumes to disk (vortex's ``vortex.storage``).

A ``SimpleStack{Int8,UInt16,UInt32,UInt64,Float32,Float64}`` writes consecutive
volumes of shape ``(bscans, ascans, samples, channels)`` to one file, after one
of vortex's headers (:class:`SimpleStackHeader`: Empty, NumPy, MATLAB, NRRD,
NifTI), laid out byte for byte as vortex 0.5.1 lays them out, except where
vortex's own file cannot be read (MATLAB's data type, see gosrc/storage/headers.go).
The semantics are vortex's: ``write_volume`` / ``write_multi_bscan`` /
``write_partial_bscan`` write into the current volume, ``advance_volume`` moves
to the next (reserving the finished one on disk), ``seek`` moves anywhere and
``close`` pads an unfinished last volume with zeros and writes the final header.

Beyond vortex the header is rewritten after every ``advance_volume``, so a crash
or a stop leaves a file that numpy.load (scipy.io.loadmat, nrrd.read,
nibabel.load) opens with every volume advanced past.

Readers: ``numpy.load(path)`` has shape ``(volumes, bscans, ascans, samples,
channels)``; ``scipy.io.loadmat(path)["data"]`` and ``nrrd.read(path)`` (its
default Fortran order) give the transpose of that; ``nibabel.load(path)``'s
array holds the same bytes in Fortran order of that shape (vortex's NIfTI
layout).

Use a stack directly or hand it to an :class:`~vortexgo.engine.AscanStackEndpoint` /
:class:`~vortexgo.engine.SpectraStackEndpoint`, whose writes run off the
engine's hot path (the endpoint writes and advances per volume).

vortex's other storages are here too (docs/storage.md has the table):
``SimpleStream*`` (a flat headerless stream), ``HDF5Stack*`` (dataset ``data`` of
an HDF5 file, with ``compression_level`` and a MATLAB v7.3 header; the HDF5 C
library is loaded at run time from the system or the h5py wheel), ``StreamDump``
(one of each block's streams), ``MarkerLog`` (markers as text lines or 42-byte
records) and ``BroctStorage`` (int8 volumes in the BROCT format). Their engine
endpoints are in :mod:`vortexgo.endpoint` (re-exported by
:mod:`vortexgo.engine`).
"""

from __future__ import annotations

import enum
import os
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from ._attrs import Config, NoCopy, StrictAttributes
from ._core import api
from ._errors import ClosedError, native
from ._layouts import HDF5_STACK_STATE, STACK_STATE, STREAM_STATE
from ._validate import check_bool, check_float, check_int, check_shape

__all__ = ["SimpleStackHeader", "SimpleStackConfig", "SimpleStackInt8", "SimpleStackUInt16", "SimpleStackUInt32",
           "SimpleStackUInt64", "SimpleStackFloat32", "SimpleStackFloat64",
           "SimpleStreamHeader", "SimpleStreamConfig", "SimpleStreamInt8", "SimpleStreamUInt16", "SimpleStreamUInt32",
           "SimpleStreamUInt64", "SimpleStreamFloat32", "SimpleStreamFloat64", "StreamDumpConfig", "StreamDump",
           "MarkerLogConfig", "MarkerLog", "BroctScan", "BroctStorageConfig", "BroctStorage",
           "HDF5StackHeader", "HDF5StackConfig", "HDF5StackInt8", "HDF5StackUInt16", "HDF5StackUInt32", "HDF5StackUInt64",
           "HDF5StackFloat32", "HDF5StackFloat64", "hdf5_library"]


class SimpleStackHeader(StrictAttributes, enum.IntEnum):
    """What precedes the volumes in the file (vortex's values)."""

    #: raw bytes, nothing before them
    Empty = 0
    #: a .npy (format 2.0) header
    NumPy = 1
    #: a MATLAB v5 .mat header (one variable, ``data``)
    MATLAB = 2
    #: an NRRD0005 header (raw encoding)
    NRRD = 3
    #: a NIfTI-2 header
    NifTI = 4


@dataclass
class SimpleStackConfig(Config):
    """Where and how a ``SimpleStack`` writes (vortex's ``SimpleStackConfig``).

    Attributes:
        path: the file (created or truncated by the stack's ``open``).
        shape: one volume, ``(bscans, ascans, samples, channels)``; a 3-D
            ``(bscans, ascans, samples)`` means one channel.
        buffering: vortex's flag; vortexgo's writes are unbuffered either way.
        header: :attr:`SimpleStackHeader.NumPy` (vortex's default) or another header.
    """

    path: Union[str, os.PathLike] = ""
    shape: tuple = (0, 0, 0, 1)
    buffering: bool = False
    header: SimpleStackHeader = SimpleStackHeader.NumPy

    def _dim(self, i: int) -> int:
        return tuple(self.shape)[i]

    def _set(self, i: int, v: int) -> None:
        shape = list(self.volume_shape)
        shape[i] = v
        self.shape = tuple(shape)

    @property
    def bscans_per_volume(self) -> int:
        """shape[0]."""
        return self._dim(0)

    @bscans_per_volume.setter
    def bscans_per_volume(self, v: int) -> None:
        self._set(0, v)

    @property
    def ascans_per_bscan(self) -> int:
        """shape[1]."""
        return self._dim(1)

    @ascans_per_bscan.setter
    def ascans_per_bscan(self, v: int) -> None:
        self._set(1, v)

    @property
    def samples_per_ascan(self) -> int:
        """shape[2]."""
        return self._dim(2)

    @samples_per_ascan.setter
    def samples_per_ascan(self, v: int) -> None:
        self._set(2, v)

    @property
    def channels_per_sample(self) -> int:
        """shape[3] (1 for a 3-D shape)."""
        shape = tuple(self.shape)
        return shape[3] if len(shape) > 3 else 1

    @channels_per_sample.setter
    def channels_per_sample(self, v: int) -> None:
        self._set(3, v)

    @property
    def volume_shape(self) -> tuple:
        """``(bscans, ascans, samples, channels)``."""
        shape = tuple(self.shape)
        return shape + (1,) if len(shape) == 3 else shape

    @property
    def bscan_shape(self) -> tuple:
        """``(ascans, samples, channels)``."""
        return self.volume_shape[1:]


def _host(array: Any) -> np.ndarray:
    """A C-contiguous, native-byte-order NumPy array of ``array``: NumPy as is
    (copied only when strided or byte-swapped), CuPy or vortexgo arrays copied to
    the host (after the work queued on their stream)."""
    if isinstance(array, np.ndarray):
        if not array.dtype.isnative:
            # The files are little-endian like this machine: '>u2' data is the
            # same values, not a different type.
            array = array.astype(array.dtype.newbyteorder("="))
        return np.ascontiguousarray(array)
    from ._array import Array
    from ._tensor import DeviceTensor

    if isinstance(array, Array):
        return np.ascontiguousarray(array.numpy())
    if isinstance(array, DeviceTensor):
        with array.locked(shared=True) as v:
            return _host(v).copy()
    if hasattr(array, "__cuda_array_interface__") and hasattr(array, "get"):
        return np.ascontiguousarray(array.get())  # CuPy
    return np.ascontiguousarray(np.asarray(array))


class _SimpleStack(NoCopy, StrictAttributes):
    _dtype = np.dtype("int8")

    def __init__(self, log: Any = None, *, logger: Any = None) -> None:
        self._h = native(api.NewSimpleStack)(self._dtype.name)  # gosrc/pyapi/storage.go
        # A finaliser rather than __del__: it holds the handle, so a stack dying
        # in a reference cycle or at exit still closes (and finalises) its file.
        weakref.finalize(self, self._h.Close)
        self.logger = log if log is not None else logger
        self._config: Optional[SimpleStackConfig] = None

    @property
    def config(self) -> SimpleStackConfig:
        """The configuration of the last ``open()``; before, a default config to fill in and
        pass to ``open()`` (vortex's: ``c = stack.config; c.path = ...; stack.open(c)``)."""
        return self._config if self._config is not None else SimpleStackConfig()

    @property
    def dtype(self) -> np.dtype:
        """The element type of the volumes."""
        return self._dtype

    @property
    def ready(self) -> bool:
        """True between ``open()`` and :meth:`close` (vortex's ``ready``)."""
        return self._state().status == 1

    @property
    def is_open(self) -> bool:
        """Same as :attr:`ready`."""
        return self.ready

    def _state(self) -> Any:
        """The stack's STACK_STATE record: status (0 closed, 1 open, 2 closed because
        another storage took its file over), the volumes the header counts."""
        return STACK_STATE.read(self._h.State)

    @property
    def shape(self) -> Optional[tuple]:
        """The volume shape while open (else None), ``(bscans, ascans, samples)``
        for one channel (what the engine's stack endpoints fill), else
        ``(bscans, ascans, samples, channels)``."""
        c = self._config
        if c is None or not self.ready:
            return None
        v = c.volume_shape
        return v[:3] if v[3] == 1 else v

    @property
    def volumes_written(self) -> int:
        """Volumes advanced past so far (what the header counts before close)."""
        return self._state().volumes

    @native
    def open(self, config: SimpleStackConfig) -> None:
        """Create the file and write its provisional header, closing an open file
        first (as vortex). An unwritable path raises OSError here, so it surfaces
        before any engine starts; a FIFO, socket or block device is a ValueError
        (``/dev/null`` is taken as a sink).

        A file that another open storage writes (the same cell run twice in a
        notebook) is taken over: the older storage lets go of it without writing
        again. While an engine writes through that storage: InUseError."""
        if not isinstance(config, SimpleStackConfig):
            raise TypeError(f"config={config!r}, expected a SimpleStackConfig")
        path = _path("SimpleStackConfig", config.path)
        # Ints only: (2, 1.5, 3, 1) is a mistake, not (2, 1, 3, 1); the Go core
        # bounds the volume's bytes (MemoryError) before the file is made.
        shape = check_shape("SimpleStackConfig.shape", config.shape)
        if len(shape) not in (3, 4):
            raise ValueError(f"SimpleStackConfig.shape={config.shape!r}, expected (bscans, ascans, samples, channels)")
        if len(shape) == 3:
            shape = shape + (1,)
        for i, s in enumerate(shape):
            if s <= 0:
                raise ValueError(f"SimpleStackConfig.shape[{i}]={s}, expected > 0 "
                                 "(shape is (bscans, ascans, samples, channels))")
        header = config.header
        if isinstance(header, str):
            try:
                header = next(h for h in SimpleStackHeader if h.name.lower() == header.lower())
            except StopIteration:
                raise ValueError(f"SimpleStackConfig.header={config.header!r}, expected one of "
                                 f"{[h.name for h in SimpleStackHeader]}") from None
        if not isinstance(header, SimpleStackHeader):
            try:
                header = SimpleStackHeader(check_int("SimpleStackConfig.header", header, 0, 4))
            except TypeError:
                raise TypeError(f"SimpleStackConfig.header={config.header!r}, expected a SimpleStackHeader") from None
        buffering = check_bool("SimpleStackConfig.buffering", config.buffering)
        self._h.Open(path, *shape, int(header), buffering)
        self._config = SimpleStackConfig(path, shape, buffering, header)

    @native
    def close(self) -> None:
        """Pad an unfinished last volume with zeros, write the final header and
        close the file (vortex's ``close``; a closed stack is left as is).

        Raises :class:`~vortexgo.InUseError` while a storage endpoint of an
        engine that has not finished writes here: stop the engine first.
        """
        self._h.Close()

    def _require_open(self, what: str) -> SimpleStackConfig:
        # ClosedError (a ValueError): a stack is closed until open() and after close().
        _check_open(self, what, "stack")
        assert self._config is not None
        return self._config

    def _array(self, data: Any, what: str, tail: tuple) -> np.ndarray:
        """data as C-contiguous host items of shape (n,) + tail, n >= 1."""
        a = _host(data)
        if a.dtype != self._dtype:
            raise ValueError(f"{what}: data dtype {a.dtype.name}, expected {self._dtype.name} (this is a "
                             f"{type(self).__name__}; cast first)")
        # One channel may be implicit: (.., samples) for (.., samples, 1).
        if tail[-1] == 1 and a.shape[-1:] != (1,):
            a = a.reshape(a.shape + (1,))
        if a.ndim < len(tail) or a.shape[a.ndim - len(tail):] != tail or a.size == 0:
            raise ValueError(f"{what}: data shape {a.shape}, expected (n, {', '.join(map(str, tail))}) with n >= 1")
        return a

    @native
    def write_volume(self, data: Any) -> None:
        """Write whole B-scans ``(bscans, ascans, samples, channels)`` into the
        current volume from B-scan 0 (NumPy, CuPy, or vortexgo array). As in
        vortex it does not advance: call :meth:`advance_volume` next.

        Like every write, seek and advance, it raises :class:`~vortexgo.InUseError`
        while an engine writes to the stack (from its ``prepare()`` until its run
        ends): stop the engine first."""
        c = self._require_open("write_volume")
        a = self._array(data, "write_volume", c.bscan_shape)
        self._h.WriteVolume(a.ctypes.data, a.nbytes)

    @native
    def write_multi_bscan(self, index: int, data: Any) -> None:
        """Write whole B-scans ``(n, ascans, samples, channels)`` into the current
        volume from B-scan ``index``."""
        c = self._require_open("write_multi_bscan")
        a = self._array(data, "write_multi_bscan", c.bscan_shape)
        self._h.WriteMultiBscan(check_int("index", index, 0), a.ctypes.data, a.nbytes)

    @native
    def write_partial_bscan(self, bscan_index: int, ascan_index: int, data: Any) -> None:
        """Write whole A-scans ``(n, samples, channels)`` into B-scan
        ``bscan_index`` of the current volume from A-scan ``ascan_index``."""
        c = self._require_open("write_partial_bscan")
        a = self._array(data, "write_partial_bscan", c.volume_shape[2:])
        self._h.WritePartialBscan(check_int("bscan_index", bscan_index, 0), check_int("ascan_index", ascan_index, 0),
                                  a.ctypes.data, a.nbytes)

    @native
    def advance_volume(self, allocate: bool = True) -> None:
        """Move to the next volume; with ``allocate`` the finished volume is
        reserved on disk (zeros where nothing was written)."""
        self._h.AdvanceVolume(check_bool("allocate", allocate))

    @native
    def seek(self, volume_index: int, bscan_index: int = 0) -> None:
        """Make volume ``volume_index`` the current volume."""
        self._h.Seek(check_int("volume_index", volume_index, 0), check_int("bscan_index", bscan_index, 0))

    def __enter__(self) -> "_SimpleStack":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.ready or self._config is None:
            return f"<{type(self).__name__} closed>"
        c = self._config
        return (f"<{type(self).__name__} {os.fspath(c.path)!r} {c.volume_shape} {c.header.name}, "
                f"{self.volumes_written} volumes written>")


# ---------------------------------------------------------------------------
# The append-only storages (vortex's simple_stream_t, stream_dump_t,
# marker_log_t) and BROCT. Each is a Go storage of gosrc/storage, bound by
# gosrc/pyapi/storage.go with one method per Python method.


def _path(owner: str, path: Any) -> str:
    """``path`` as a str: TypeError for what is no path at all (None, bytes), ValueError
    for an empty one, both naming ``{owner}.path``. A FIFO, socket or block device is
    refused by ``open()`` (docs/storage.md, "Special files")."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}.path={path!r}, expected a file path (a str or os.PathLike)")
    p = os.fspath(path)
    if not isinstance(p, str):
        raise TypeError(f"{owner}.path={path!r}, expected a file path (a str or os.PathLike of str)")
    if not p:
        raise ValueError(f"{owner}.path={path!r}, expected a file path")
    return p


def _check_open(storage: Any, what: str, noun: str) -> None:
    """ClosedError unless ``storage`` is open, saying why when another storage took
    its file over (the same path opened again, as a notebook cell run twice does)."""
    state = storage._state().status
    if state == 1 and storage._config is not None:
        return
    name = type(storage).__name__
    if state == 2:
        raise ClosedError(f"{name}.{what}: another storage opened this {noun}'s file since, so this one let go of it "
                          "without touching it again (the newer one owns it now); expected open(config) first")
    raise ClosedError(f"{name}.{what}: the {noun} is not open, expected open(config) first")


def _close_quietly(h: Any) -> None:
    """A finaliser's close: an error there (an engine still writing at exit) has
    no caller to go to; the Go side keeps the file consistent either way."""
    try:
        h.Close()
    except Exception:  # noqa: BLE001 - nothing can handle it here
        pass


class _Storage(NoCopy, StrictAttributes):
    """Common base: one Go storage object, its open/close/ready and ``with``."""

    _config_type: type = object
    _state_layout = STREAM_STATE

    def __init__(self, log: Any = None, *, logger: Any = None) -> None:
        self._h = native(self._new)()
        weakref.finalize(self, _close_quietly, self._h)
        self.logger = log if log is not None else logger
        self._config: Any = None

    def _new(self) -> Any:
        """The Go storage (gosrc/pyapi/storage.go's wrapper of this kind)."""
        raise NotImplementedError

    def _state(self) -> Any:
        """The storage's state record (``_state_layout``): its status (0 closed, 1 open,
        2 closed because another storage took its file over), then its counts."""
        return self._state_layout.read(self._h.State)

    @property
    def config(self) -> Any:
        """The configuration of the last ``open()``; before, a default config to fill in and
        pass to ``open()`` (vortex's)."""
        return self._config if self._config is not None else self._config_type()

    @property
    def ready(self) -> bool:
        """True between ``open()`` and :meth:`close` (vortex's ``ready``)."""
        return self._state().status == 1

    @property
    def is_open(self) -> bool:
        """Same as :attr:`ready`."""
        return self.ready

    def _check_config(self, config: Any) -> None:
        if not isinstance(config, self._config_type):
            raise TypeError(f"config={config!r}, expected a {self._config_type.__name__}")

    @native
    def close(self) -> None:
        """Close the file (a closed storage is left as is). Raises
        :class:`~vortexgo.InUseError` while an engine's endpoint writes here:
        stop the engine first."""
        self._h.Close()

    def _require_open(self, what: str) -> None:
        _check_open(self, what, "storage")

    def __enter__(self) -> "_Storage":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.ready or self._config is None:
            return f"<{type(self).__name__} closed>"
        return f"<{type(self).__name__} {os.fspath(self._config.path)!r}>"


class SimpleStreamHeader(StrictAttributes, enum.IntEnum):
    """A stream's header: vortex has only ``Empty``."""

    #: raw bytes, nothing before them
    Empty = 0


@dataclass
class SimpleStreamConfig(Config):
    """Where a ``SimpleStream`` writes (vortex's ``SimpleStreamConfig``).

    Attributes:
        path: the file (created or truncated by ``open()``).
        buffering: vortex's flag; vortexgo's writes are unbuffered either way.
        header: :attr:`SimpleStreamHeader.Empty`, the only one.
    """

    path: Union[str, os.PathLike] = ""
    buffering: bool = False
    header: SimpleStreamHeader = SimpleStreamHeader.Empty


class _SimpleStream(_Storage):
    _dtype = np.dtype("int8")
    _config_type = SimpleStreamConfig

    def _new(self) -> Any:
        return api.NewSimpleStream(self._dtype.name)

    @property
    def dtype(self) -> np.dtype:
        """The element type of the stream."""
        return self._dtype

    @property
    def bytes_written(self) -> int:
        """Bytes appended since ``open()``."""
        return self._state().bytes

    @native
    def open(self, config: SimpleStreamConfig) -> None:
        """Create the file (closing an open one first, as vortex). An unwritable
        path raises OSError here."""
        self._check_config(config)
        path = _path("SimpleStreamConfig", config.path)
        header = config.header
        if not isinstance(header, SimpleStreamHeader):
            header = SimpleStreamHeader(check_int("SimpleStreamConfig.header", header, 0, 0))
        buffering = check_bool("SimpleStreamConfig.buffering", config.buffering)
        self._h.Open(path, buffering, int(header))
        self._config = SimpleStreamConfig(path, buffering, header)

    @native
    def write(self, data: Any) -> None:
        """Append ``data`` (any shape, this stream's dtype; NumPy, CuPy or vortexgo
        array) in C order. vortex's C++ ``write``; its Python binding leaves
        writing to the stream endpoints, vortexgo offers it from Python too."""
        self._require_open("write")
        a = _host(data)
        if a.dtype != self._dtype:
            raise ValueError(f"write: data dtype {a.dtype.name}, expected {self._dtype.name} (this is a "
                             f"{type(self).__name__}; cast first)")
        self._h.Write(a.ctypes.data, a.nbytes)


@dataclass
class StreamDumpConfig(Config):
    """What a :class:`StreamDump` writes (vortex's ``StreamDumpConfig``).

    Attributes:
        path: the file (created or truncated by :meth:`StreamDump.open`).
        stream: which of the engine block's streams: 0 counter, 1 galvo_target,
            2 sample_target, 3 galvo_actual, 4 sample_actual, 5 strobes.
        divisor: keep every ``divisor``-th row of each block.
        buffering: vortex's flag; vortexgo's writes are unbuffered either way.
    """

    path: Union[str, os.PathLike] = ""
    stream: int = 0
    divisor: int = 1
    buffering: bool = False


class StreamDump(_Storage):
    """Appends one of each block's streams to a file (vortex's ``StreamDump``),
    fed by a :class:`~vortexgo.engine.StreamDumpStorage` endpoint."""

    _config_type = StreamDumpConfig

    def _new(self) -> Any:
        return api.NewStreamDump()

    @native
    def open(self, config: StreamDumpConfig) -> None:
        """Create the file (closing an open one first, as vortex)."""
        self._check_config(config)
        path = _path("StreamDumpConfig", config.path)
        stream = check_int("StreamDumpConfig.stream", config.stream, 0, 5)
        divisor = check_int("StreamDumpConfig.divisor", config.divisor, 1)
        buffering = check_bool("StreamDumpConfig.buffering", config.buffering)
        self._h.Open(path, stream, divisor, buffering)
        self._config = StreamDumpConfig(path, stream, divisor, buffering)

    @native
    def write(self, data: Any) -> None:
        """Append one block of a stream as vortex dumps it: rows along the first
        axis (the rest flattened), every ``divisor``-th row from the first.
        (vortexgo's; vortex's endpoint does this for each block.)"""
        self._require_open("write")
        a = _host(data)
        if a.ndim == 0 or a.size == 0:
            raise ValueError(f"write: data shape {a.shape}, expected (rows, ...) with rows >= 1")
        self._h.Write(a.nbytes // a.shape[0], a.ctypes.data, a.nbytes)


@dataclass
class MarkerLogConfig(Config):
    """Where a :class:`MarkerLog` writes (vortex's ``MarkerLogConfig``).

    Attributes:
        path: the file (created or truncated by :meth:`MarkerLog.open`).
        binary: vortex's 42-byte binary records instead of text lines.
        buffering: vortex's flag; vortexgo's writes are unbuffered either way.
    """

    path: Union[str, os.PathLike] = ""
    binary: bool = False
    buffering: bool = False


class MarkerLog(_Storage):
    """Logs markers as vortex's ``MarkerLog`` does: a text line per marker
    (``"%12d C sequence 0 - volume_count_hint flags"`` and the like) or, with
    ``binary``, a 42-byte record (int64 sample, a type byte, two int64 fields,
    a direction byte, two int64 fields)."""

    _config_type = MarkerLogConfig

    def _new(self) -> Any:
        return api.NewMarkerLog()

    @native
    def open(self, config: MarkerLogConfig) -> None:
        """Create the file (closing an open one first, as vortex)."""
        self._check_config(config)
        path = _path("MarkerLogConfig", config.path)
        binary = check_bool("MarkerLogConfig.binary", config.binary)
        buffering = check_bool("MarkerLogConfig.buffering", config.buffering)
        self._h.Open(path, binary, buffering)
        self._config = MarkerLogConfig(path, binary, buffering)

    @native
    def write(self, markers: Any) -> None:
        """Append the markers (a list of :mod:`vortexgo.marker` markers) in order."""
        from .marker import _to_records

        self._require_open("write")
        rec = _to_records(markers)
        self._h.Write(rec.ctypes.data, rec.size)


class BroctScan(StrictAttributes, enum.IntEnum):
    """The scan type in a BROCT header (vortex's ``BroctScan``)."""

    rectangular = 0
    bscan = 1
    aiming = 2
    mscan = 3
    radial = 4
    ascan = 5
    speckle = 6
    mixed = 7
    xfast_yfast = 8
    xfast_yfast_speckle = 9
    spiral = 10


# vortex exports the values into the module too (vortex.storage.radial).
rectangular = BroctScan.rectangular
bscan = BroctScan.bscan
aiming = BroctScan.aiming
mscan = BroctScan.mscan
radial = BroctScan.radial
ascan = BroctScan.ascan
speckle = BroctScan.speckle
mixed = BroctScan.mixed
xfast_yfast = BroctScan.xfast_yfast
xfast_yfast_speckle = BroctScan.xfast_yfast_speckle
spiral = BroctScan.spiral


@dataclass
class BroctStorageConfig(Config):
    """Where and how a :class:`BroctStorage` writes (vortex's ``BroctStorageConfig``).

    Attributes:
        path: the file (created or truncated by :meth:`BroctStorage.open`).
        shape: one volume, ``(bscans, ascans, samples)``; B-scans are stored
            transposed, ``(samples, ascans)`` (:attr:`broct_bscan_shape`).
        dimensions: the physical lengths written to the header.
        scan_type: a :class:`BroctScan`.
        notes: free text stored in the header.
        buffering: vortex's flag; vortexgo's writes are unbuffered either way.
    """

    path: Union[str, os.PathLike] = ""
    shape: tuple = (0, 0, 0)
    dimensions: tuple = (1.0, 1.0, 1.0)
    scan_type: BroctScan = BroctScan.rectangular
    notes: str = ""
    buffering: bool = False

    def _set(self, i: int, v: int) -> None:
        shape = list(self.shape)
        shape[i] = v
        self.shape = tuple(shape)

    bscans_per_volume = property(lambda self: tuple(self.shape)[0], lambda self, v: self._set(0, v), doc="shape[0].")
    ascans_per_bscan = property(lambda self: tuple(self.shape)[1], lambda self, v: self._set(1, v), doc="shape[1].")
    samples_per_ascan = property(lambda self: tuple(self.shape)[2], lambda self, v: self._set(2, v), doc="shape[2].")

    @property
    def broct_volume_shape(self) -> tuple:
        """``(bscans, samples, ascans)``: what :meth:`BroctStorage.write_volume` takes."""
        b, a, s = self.shape
        return (b, s, a)

    @property
    def broct_bscan_shape(self) -> tuple:
        """``(samples, ascans)``: one stored B-scan."""
        return self.broct_volume_shape[1:]


class BroctStorage(_Storage):
    """int8 volumes in the BROCT format (vortex's ``BroctStorage``): a header, then
    volumes of transposed B-scans. As in vortex, :meth:`write_volume` moves to the
    next volume by itself, and :meth:`close` pads an unfinished last volume."""

    _config_type = BroctStorageConfig
    _state_layout = STACK_STATE
    dtype = np.dtype("int8")

    def _new(self) -> Any:
        return api.NewBroctStorage()

    @property
    def shape(self) -> Optional[tuple]:
        """While open, ``(bscans, ascans, samples)``: the volume a stack endpoint
        formats (stored transposed); else None."""
        c = self._config
        return tuple(c.shape) if c is not None and self.ready else None

    @property
    def volumes_written(self) -> int:
        """Whole volumes in the file so far."""
        return self._state().volumes

    @native
    def open(self, config: BroctStorageConfig) -> None:
        """Create the file and write the header (closing an open file first)."""
        self._check_config(config)
        path = _path("BroctStorageConfig", config.path)
        shape = check_shape("BroctStorageConfig.shape", config.shape)
        if len(shape) != 3:
            raise ValueError(f"BroctStorageConfig.shape={config.shape!r}, expected (bscans, ascans, samples)")
        for i, n in enumerate(shape):
            check_int(f"BroctStorageConfig.shape[{i}]", n, 1, 2**31 - 1)
        dims = tuple(config.dimensions)
        if len(dims) != 3:
            raise ValueError(f"BroctStorageConfig.dimensions={config.dimensions!r}, expected three lengths")
        dims = tuple(check_float(f"BroctStorageConfig.dimensions[{i}]", d) for i, d in enumerate(dims))
        scan = config.scan_type
        if not isinstance(scan, BroctScan):
            scan = BroctScan(check_int("BroctStorageConfig.scan_type", scan, 0, 10))
        if not isinstance(config.notes, str):
            raise TypeError(f"BroctStorageConfig.notes={config.notes!r}, expected a str")
        buffering = check_bool("BroctStorageConfig.buffering", config.buffering)
        self._h.Open(path, *shape, *dims, int(scan), config.notes, buffering)
        self._config = BroctStorageConfig(path, shape, dims, scan, config.notes, buffering)

    def _array(self, data: Any, what: str, tail: str, ndim: int) -> np.ndarray:
        self._require_open(what)
        tail = getattr(self._config, tail)
        a = _host(data)
        if a.dtype != np.int8:
            raise ValueError(f"{what}: data dtype {a.dtype.name}, expected int8 (BROCT stores int8; cast first)")
        if a.ndim != ndim or a.shape[a.ndim - len(tail):] != tail or a.size == 0:
            want = ", ".join(map(str, tail))
            raise ValueError(f"{what}: data shape {a.shape}, expected ({'n, ' if ndim > len(tail) else ''}{want}) "
                             "(were the B-scans transposed to (samples, ascans)?)")
        return a

    @native
    def write_bscan(self, index: int, data: Any) -> None:
        """Write one transposed B-scan ``(samples, ascans)`` at B-scan ``index``."""
        a = self._array(data, "write_bscan", "broct_bscan_shape", 2)
        self._h.WriteBscan(check_int("index", index, 0), a.ctypes.data, a.nbytes)

    @native
    def write_multi_bscan(self, index: int, data: Any) -> None:
        """Write transposed B-scans ``(n, samples, ascans)`` from B-scan ``index``."""
        a = self._array(data, "write_multi_bscan", "broct_bscan_shape", 3)
        self._h.WriteMultiBscan(check_int("index", index, 0), a.ctypes.data, a.nbytes)

    @native
    def write_volume(self, data: Any) -> None:
        """Write a whole volume ``(bscans, samples, ascans)`` and move to the next
        (vortex's BROCT ``write_volume`` advances by itself)."""
        a = self._array(data, "write_volume", "broct_volume_shape", 3)
        self._h.WriteVolume(a.ctypes.data, a.nbytes)

    @native
    def advance_volume(self, allocate: bool = True) -> None:
        """Move to the next volume; with ``allocate`` it is reserved on disk."""
        self._h.AdvanceVolume(check_bool("allocate", allocate))

    @native
    def seek(self, volume_index: int, bscan_index: int = 0) -> None:
        """Make volume ``volume_index`` the current volume."""
        self._h.Seek(check_int("volume_index", volume_index, 0), check_int("bscan_index", bscan_index, 0))


# ---------------------------------------------------------------------------
# HDF5 (vortex's hdf5_stack_t). The HDF5 C library is loaded at run time by
# gosrc/storage/hdf5: $VORTEXGO_HDF5_LIBRARY, the system's libhdf5, or the
# copy bundled in the h5py wheel, which this module finds without importing
# h5py.


def _h5py_libs() -> list[str]:
    """Paths of the HDF5 library bundled with an installed h5py wheel (found without
    importing h5py)."""
    import importlib.util
    import pathlib

    try:
        spec = importlib.util.find_spec("h5py")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    pkg = pathlib.Path(list(spec.submodule_search_locations)[0])
    out: list[str] = []
    for d in (pkg.parent / "h5py.libs", pkg / ".libs", pkg.parent / "h5py" / ".dylibs"):
        out += sorted(str(p) for p in d.glob("libhdf5-*.so*"))
        out += sorted(str(p) for p in d.glob("libhdf5.*.dylib"))
    return out


_PRIVATE_HDF5: dict = {}


def _private_copy(lib: str) -> str:
    """A private copy of h5py's HDF5 library (and its folder's other libraries),
    so that vortexgo's writer threads and h5py never enter one library instance
    at once: HDF5's usual builds are not thread-safe, h5py serialises only its own
    calls, and dlopen of the same file would share h5py's instance. The copy lives
    in a per-user cache folder keyed by the library's size and mtime; if it cannot
    be made, the original is used (docs/storage.md says what that risks)."""
    import hashlib
    import pathlib
    import shutil
    import tempfile

    if lib in _PRIVATE_HDF5:
        return _PRIVATE_HDF5[lib]
    src = pathlib.Path(lib)
    try:
        st = src.stat()
        key = hashlib.sha256(f"{src.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        if not os.access(os.path.dirname(base) if not os.path.isdir(base) else base, os.W_OK):
            base = tempfile.gettempdir()
        dst_dir = pathlib.Path(base) / "vortexgo" / f"hdf5-{key}"
        dst = dst_dir / src.name
        if not dst.exists():
            dst_dir.mkdir(parents=True, exist_ok=True)
            for f in src.parent.iterdir():  # its dependencies sit beside it ($ORIGIN)
                if f.is_file() and not (dst_dir / f.name).exists():
                    tmp = dst_dir / f".{f.name}.{os.getpid()}"
                    shutil.copy2(f, tmp)
                    os.replace(tmp, dst_dir / f.name)  # atomic: a racing process sees a whole file
        out = str(dst)
    except OSError:
        out = lib
    _PRIVATE_HDF5[lib] = out
    return out


def _hdf5_candidates() -> list[str]:
    """Where the Go side may find the HDF5 library after $VORTEXGO_HDF5_LIBRARY and
    the system's: private copies of h5py's bundled library."""
    return [_private_copy(lib) for lib in _h5py_libs()]


def _hdf5_libraries() -> str:
    """:func:`_hdf5_candidates` as the Go side takes them: one a line."""
    return "\n".join(_hdf5_candidates())


def hdf5_library() -> dict:
    """Load the HDF5 C library if needed and return ``{"Version", "Path"}``.

    Raises :class:`~vortexgo.VortexError` naming what to install when no library
    is found: ``pip install h5py`` (its bundled copy is used), the system's
    libhdf5, or ``VORTEXGO_HDF5_LIBRARY=/path/to/libhdf5.so``.
    """
    version = native(api.LoadHDF5)(_hdf5_libraries())
    return {"Version": version, "Path": api.HDF5LibraryPath()}


class HDF5StackHeader(StrictAttributes, enum.IntEnum):
    """What an HDF5 stack's file carries besides the data (vortex's values)."""

    #: a plain HDF5 file with the dataset ``data``
    Empty = 0
    #: a MATLAB v7.3 .mat file (a 512-byte userblock with MATLAB's preamble and
    #: the dataset's ``MATLAB_class`` attribute)
    MATLAB = 1


@dataclass
class HDF5StackConfig(Config):
    """Where and how an ``HDF5Stack`` writes (vortex's ``HDF5StackConfig``).

    Attributes:
        path: the file (created or truncated by ``open()``).
        shape: one volume, ``(bscans, ascans, samples, channels)`` (3-D: one channel).
        header: :attr:`HDF5StackHeader.Empty` (vortex's default) or ``MATLAB``.
        compression_level: deflate level, 0 (none, vortex's default) to 9.
    """

    path: Union[str, os.PathLike] = ""
    shape: tuple = (0, 0, 0, 1)
    header: HDF5StackHeader = HDF5StackHeader.Empty
    compression_level: int = 0

    _dim = SimpleStackConfig._dim
    _set = SimpleStackConfig._set
    bscans_per_volume = SimpleStackConfig.bscans_per_volume
    ascans_per_bscan = SimpleStackConfig.ascans_per_bscan
    samples_per_ascan = SimpleStackConfig.samples_per_ascan
    channels_per_sample = SimpleStackConfig.channels_per_sample
    volume_shape = SimpleStackConfig.volume_shape
    bscan_shape = SimpleStackConfig.bscan_shape


class _HDF5Stack(_Storage):
    """Volumes in the dataset ``data`` of an HDF5 file, shape ``(volumes, bscans,
    ascans, samples, channels)``, growing as volumes are written (vortex's
    ``HDF5Stack``): chunks of one A-scan, zero fill, deflate at
    ``compression_level``. Beyond vortex the file is flushed at each
    :meth:`advance_volume`, so a crash leaves every volume advanced past readable."""

    _dtype = np.dtype("int8")
    _config_type = HDF5StackConfig
    _state_layout = HDF5_STACK_STATE

    def _new(self) -> Any:
        return api.NewHDF5Stack(self._dtype.name)

    @property
    def dtype(self) -> np.dtype:
        """The element type of the volumes."""
        return self._dtype

    @property
    def shape(self) -> Optional[tuple]:
        """The volume shape while open (as :attr:`_SimpleStack.shape`), else None."""
        c = self._config
        if c is None or not self.ready:
            return None
        v = c.volume_shape
        return v[:3] if v[3] == 1 else v

    @property
    def volumes_written(self) -> int:
        """Volumes advanced past so far."""
        return self._state().volume

    @native
    def open(self, config: HDF5StackConfig) -> None:
        """Load the HDF5 library if needed and create the file (closing an open one
        first). No library: a :class:`~vortexgo.VortexError` naming what to install;
        an unwritable path: OSError."""
        self._check_config(config)
        path = _path("HDF5StackConfig", config.path)
        shape = check_shape("HDF5StackConfig.shape", config.shape)
        if len(shape) not in (3, 4):
            raise ValueError(f"HDF5StackConfig.shape={config.shape!r}, expected (bscans, ascans, samples, channels)")
        if len(shape) == 3:
            shape = shape + (1,)
        for i, n in enumerate(shape):
            if n <= 0:
                raise ValueError(f"HDF5StackConfig.shape[{i}]={n}, expected > 0")
        header = config.header
        if not isinstance(header, HDF5StackHeader):
            header = HDF5StackHeader(check_int("HDF5StackConfig.header", header, 0, 1))
        level = check_int("HDF5StackConfig.compression_level", config.compression_level, 0, 9)
        self._h.Open(path, *shape, int(header), level, _hdf5_libraries())
        self._config = HDF5StackConfig(path, shape, header, level)

    _array = _SimpleStack._array

    @native
    def write_volume(self, data: Any) -> None:
        """Write whole B-scans ``(bscans, ascans, samples, channels)`` into the current
        volume from B-scan 0 (no advance, as vortex)."""
        self._require_open("write_volume")
        a = self._array(data, "write_volume", self._config.bscan_shape)
        self._h.WriteVolume(a.ctypes.data, a.nbytes)

    @native
    def write_multi_bscan(self, index: int, data: Any) -> None:
        """Write whole B-scans ``(n, ascans, samples, channels)`` from B-scan ``index``."""
        self._require_open("write_multi_bscan")
        a = self._array(data, "write_multi_bscan", self._config.bscan_shape)
        self._h.WriteMultiBscan(check_int("index", index, 0), a.ctypes.data, a.nbytes)

    @native
    def write_partial_bscan(self, bscan_index: int, ascan_index: int, data: Any) -> None:
        """Write whole A-scans ``(n, samples, channels)`` into B-scan ``bscan_index``
        from A-scan ``ascan_index``."""
        self._require_open("write_partial_bscan")
        a = self._array(data, "write_partial_bscan", self._config.volume_shape[2:])
        self._h.WritePartialBscan(check_int("bscan_index", bscan_index, 0), check_int("ascan_index", ascan_index, 0),
                                  a.ctypes.data, a.nbytes)

    @native
    def advance_volume(self, allocate: bool = True) -> None:
        """Move to the next volume; with ``allocate`` the dataset grows to hold it now."""
        self._h.AdvanceVolume(check_bool("allocate", allocate))


# ---------------------------------------------------------------------------
# The per-dtype storage classes, one row each: (name, base, dtype,
# docstring), as vortex's bindings make them from one list. storage.pyi
# declares each for editors, and __all__ lists each by name.

_CLASSES: tuple[tuple[str, type, str, str], ...] = (
    ("SimpleStackInt8", _SimpleStack, "int8",
     "A stack of int8 volumes (the processor's int8 rendering)."),
    ("SimpleStackUInt16", _SimpleStack, "uint16",
     "A stack of uint16 volumes (raw spectra, or processed values cast to uint16)."),
    ("SimpleStackUInt32", _SimpleStack, "uint32",
     "A stack of uint32 volumes: the engine's strobe words (``StrobesStackEndpoint``). vortex's engine "
     "uses uint32 strobes but its Python module binds no uint32 storage; vortexgo adds one so that the "
     "strobe endpoints can be used."),
    ("SimpleStackUInt64", _SimpleStack, "uint64",
     "A stack of uint64 volumes (the record counter, ``CounterStackEndpoint``)."),
    ("SimpleStackFloat32", _SimpleStack, "float32",
     "A stack of float32 volumes (processed A-scans)."),
    ("SimpleStackFloat64", _SimpleStack, "float64",
     "A stack of float64 volumes (galvo and sample positions, ``GalvoTargetStackEndpoint`` ...)."),
    ("SimpleStreamInt8", _SimpleStream, "int8",
     "A headerless stream of int8 values."),
    ("SimpleStreamUInt16", _SimpleStream, "uint16",
     "A headerless stream of uint16 values (raw spectra)."),
    ("SimpleStreamUInt32", _SimpleStream, "uint32",
     "A headerless stream of uint32 values (strobe words, ``StrobesStreamEndpoint``; a vortexgo addition: "
     "vortex's Python module binds no uint32 storage)."),
    ("SimpleStreamUInt64", _SimpleStream, "uint64",
     "A headerless stream of uint64 values (sample counters)."),
    ("SimpleStreamFloat32", _SimpleStream, "float32",
     "A headerless stream of float32 values (processed A-scans)."),
    ("SimpleStreamFloat64", _SimpleStream, "float64",
     "A headerless stream of float64 values (galvo waveforms)."),
    ("HDF5StackInt8", _HDF5Stack, "int8",
     "An HDF5 stack of int8 volumes."),
    ("HDF5StackUInt16", _HDF5Stack, "uint16",
     "An HDF5 stack of uint16 volumes (raw spectra)."),
    ("HDF5StackUInt32", _HDF5Stack, "uint32",
     "An HDF5 stack of uint32 volumes (strobe words; a vortexgo addition, as :class:`SimpleStackUInt32`)."),
    ("HDF5StackUInt64", _HDF5Stack, "uint64",
     "An HDF5 stack of uint64 volumes."),
    ("HDF5StackFloat32", _HDF5Stack, "float32",
     "An HDF5 stack of float32 volumes (processed A-scans; vortex's build has no Float32)."),
    ("HDF5StackFloat64", _HDF5Stack, "float64",
     "An HDF5 stack of float64 volumes."),
)


def _define(classes: tuple) -> dict:
    """The table's classes by name, for the module's namespace."""
    return {name: type(name, (base,), {"_dtype": np.dtype(dtype), "__doc__": doc, "__module__": __name__,
                                       "__qualname__": name})
            for name, base, dtype, doc in classes}


globals().update(_define(_CLASSES))
