"""Storage: volumes to disk (vortex's ``vortex.storage``).

A ``SimpleStack{Int8,UInt16,UInt64,Float32,Float64}`` writes consecutive
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
engine's hot path (one channel; the endpoint writes and advances per volume).
"""

from __future__ import annotations

import enum
import json
import os
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from ._core import api
from ._errors import ClosedError, native
from ._validate import check_bool, check_int, check_shape

__all__ = ["SimpleStackHeader", "SimpleStackConfig", "SimpleStackInt8", "SimpleStackUInt16", "SimpleStackUInt64",
           "SimpleStackFloat32", "SimpleStackFloat64"]


class SimpleStackHeader(enum.IntEnum):
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
class SimpleStackConfig:
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
    """A C-contiguous NumPy array of ``array``: NumPy as is, CuPy or vortexgo
    arrays copied to the host (after the work queued on their stream)."""
    if isinstance(array, np.ndarray):
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


class _SimpleStack:
    _dtype = np.dtype("int8")

    def __init__(self, log: Any = None, *, logger: Any = None) -> None:
        self._h = native(api.NewObject)("storage", self._dtype.name, "")  # storage.SimpleStack.Do's ops
        # A finaliser rather than __del__: it holds the handle, so a stack dying
        # in a reference cycle or at exit still closes (and finalises) its file.
        weakref.finalize(self, self._h.Close)
        self.logger = log if log is not None else logger
        self._config: Optional[SimpleStackConfig] = None

    def _do(self, op: str, args: Optional[dict] = None, ptr: int = 0, nbytes: int = 0) -> None:
        """One of the Go stack's operations (gosrc/storage/bind.go; the generic binding path)."""
        self._h.Do(op, "" if args is None else json.dumps(args), self._h, ptr, nbytes)

    @property
    def config(self) -> Optional[SimpleStackConfig]:
        """The configuration of the last :meth:`open` (None before)."""
        return self._config

    @property
    def dtype(self) -> np.dtype:
        """The element type of the volumes."""
        return self._dtype

    @property
    def ready(self) -> bool:
        """True between :meth:`open` and :meth:`close` (vortex's ``ready``)."""
        return bool(self._record()[0])

    @property
    def is_open(self) -> bool:
        """Same as :attr:`ready`."""
        return self.ready

    def _record(self) -> list[float]:
        """storage.SimpleStack.Record: open (0/1), volumes the header counts."""
        rec = np.zeros(2, np.float64)
        self._h.Record(rec.ctypes.data, 2)
        return rec.tolist()

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
        return int(self._record()[1])

    @native
    def open(self, config: SimpleStackConfig) -> None:
        """Create the file and write its provisional header, closing an open file
        first (as vortex). An unwritable path raises OSError here, so it surfaces
        before any engine starts."""
        if not isinstance(config, SimpleStackConfig):
            raise TypeError(f"config={config!r}, expected a SimpleStackConfig")
        path = os.fspath(config.path)
        if not isinstance(path, str) or not path:
            raise ValueError(f"SimpleStackConfig.path={config.path!r}, expected a file path")
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
        self._do("open", {"Path": path, "Shape": list(shape[:3]), "Channels": shape[3],
                          "Header": int(header), "Buffering": buffering})
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
        if not self.ready or self._config is None:
            raise ClosedError(f"{type(self).__name__}.{what}: the stack is not open, expected open(config) first")
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
        vortex it does not advance: call :meth:`advance_volume` next."""
        self.write_multi_bscan(0, data)

    @native
    def write_multi_bscan(self, index: int, data: Any) -> None:
        """Write whole B-scans ``(n, ascans, samples, channels)`` into the current
        volume from B-scan ``index``."""
        c = self._require_open("write_multi_bscan")
        a = self._array(data, "write_multi_bscan", c.bscan_shape)
        self._do("write", {"Bscan": -1, "Ascan": check_int("index", index, 0)}, a.ctypes.data, a.nbytes)

    @native
    def write_partial_bscan(self, bscan_index: int, ascan_index: int, data: Any) -> None:
        """Write whole A-scans ``(n, samples, channels)`` into B-scan
        ``bscan_index`` of the current volume from A-scan ``ascan_index``."""
        c = self._require_open("write_partial_bscan")
        a = self._array(data, "write_partial_bscan", c.volume_shape[2:])
        self._do("write", {"Bscan": check_int("bscan_index", bscan_index, 0),
                           "Ascan": check_int("ascan_index", ascan_index, 0)}, a.ctypes.data, a.nbytes)

    @native
    def advance_volume(self, allocate: bool = True) -> None:
        """Move to the next volume; with ``allocate`` the finished volume is
        reserved on disk (zeros where nothing was written)."""
        self._do("advance_volume", {"Allocate": check_bool("allocate", allocate)})

    @native
    def seek(self, volume_index: int, bscan_index: int = 0) -> None:
        """Make volume ``volume_index`` the current volume."""
        self._do("seek", {"Volume": check_int("volume_index", volume_index, 0),
                          "Bscan": check_int("bscan_index", bscan_index, 0)})

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


class SimpleStackInt8(_SimpleStack):
    """A stack of int8 volumes (the processor's int8 rendering)."""

    _dtype = np.dtype("int8")


class SimpleStackUInt16(_SimpleStack):
    """A stack of uint16 volumes (raw spectra, or processed values cast to uint16)."""

    _dtype = np.dtype("uint16")


class SimpleStackUInt64(_SimpleStack):
    """A stack of uint64 volumes (no engine endpoint stores uint64)."""

    _dtype = np.dtype("uint64")


class SimpleStackFloat32(_SimpleStack):
    """A stack of float32 volumes (processed A-scans)."""

    _dtype = np.dtype("float32")


class SimpleStackFloat64(_SimpleStack):
    """A stack of float64 volumes (no engine endpoint stores float64)."""

    _dtype = np.dtype("float64")
