"""Storage: volumes to disk (vortex's ``vortex.storage``).

A ``SimpleStack{Int8,UInt16,Float32}`` writes consecutive ``(bscans, ascans,
depth)`` volumes to one file. With ``SimpleStackHeader.NumPy`` (the default)
the file is a valid ``.npy`` of shape ``(volumes, bscans, ascans, depth)``
after every completed volume, so a crash or a stop mid-volume leaves a file
that :func:`numpy.load` reads with every completed volume. With
``SimpleStackHeader.Empty`` it is the raw bytes.

Use a stack directly (``write_volume``) or hand it to an
:class:`~vortexgo.engine.AscanStackEndpoint` /
:class:`~vortexgo.engine.SpectraStackEndpoint`, whose writes run off the
engine's hot path.
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
from ._validate import check_int, check_shape

__all__ = ["SimpleStackHeader", "SimpleStackConfig", "SimpleStackInt8", "SimpleStackUInt16", "SimpleStackFloat32"]


class SimpleStackHeader(enum.Enum):
    """What precedes the volumes in the file."""

    #: raw bytes, nothing before them
    Empty = "empty"
    #: a .npy header kept up to date after every volume
    NumPy = "numpy"


@dataclass
class SimpleStackConfig:
    """Where and how a ``SimpleStack`` writes.

    Attributes:
        path: the file (created or truncated by :meth:`open`).
        shape: one volume, ``(bscans, ascans, depth)``.
        header: :attr:`SimpleStackHeader.NumPy` (default) or :attr:`SimpleStackHeader.Empty`.
    """

    path: Union[str, os.PathLike] = ""
    shape: tuple[int, int, int] = (0, 0, 0)
    header: SimpleStackHeader = SimpleStackHeader.NumPy


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

    def __init__(self, logger: Any = None) -> None:
        self._h = native(api.NewObject)("storage", self._dtype.name, "")  # storage.SimpleStack.Do's ops
        # A finaliser rather than __del__: it holds the handle, so a stack dying
        # in a reference cycle or at exit still closes (and finalises) its file.
        weakref.finalize(self, self._h.Close)
        self.logger = logger
        self.config: Optional[SimpleStackConfig] = None

    def _do(self, op: str, args: Optional[dict] = None, ptr: int = 0, nbytes: int = 0) -> None:
        """One of the Go stack's operations (gosrc/storage/bind.go; the generic binding path)."""
        self._h.Do(op, "" if args is None else json.dumps(args), self._h, ptr, nbytes)

    @property
    def dtype(self) -> np.dtype:
        """The element type of the volumes."""
        return self._dtype

    @property
    def is_open(self) -> bool:
        """True between :meth:`open` and :meth:`close`."""
        return bool(self._record()[0])

    def _record(self) -> list[float]:
        """storage.SimpleStack.Record: open (0/1), volumes completed."""
        rec = np.zeros(2, np.float64)
        self._h.Record(rec.ctypes.data, 2)
        return rec.tolist()

    @property
    def shape(self) -> Optional[tuple[int, int, int]]:
        """The volume shape ``(bscans, ascans, depth)`` while open, else None."""
        c = self.config
        return tuple(c.shape) if c is not None and self.is_open else None  # type: ignore[return-value]

    @property
    def volumes_written(self) -> int:
        """Volumes completely written so far."""
        return int(self._record()[1])

    @native
    def open(self, config: SimpleStackConfig) -> None:
        """Create the file and write its header. An unwritable path raises OSError here,
        so it surfaces before any engine starts."""
        if not isinstance(config, SimpleStackConfig):
            raise TypeError(f"config={config!r}, expected a SimpleStackConfig")
        path = os.fspath(config.path)
        if not isinstance(path, str) or not path:
            raise ValueError(f"SimpleStackConfig.path={config.path!r}, expected a file path")
        # Ints only: (2, 1.5, 3) is a mistake, not (2, 1, 3); the Go core
        # bounds the volume's bytes (MemoryError) before the file is made.
        shape = check_shape("SimpleStackConfig.shape", config.shape)
        if len(shape) != 3:
            raise ValueError(f"SimpleStackConfig.shape={config.shape!r}, expected (bscans, ascans, depth)")
        for i, s in enumerate(shape):
            if s <= 0:
                raise ValueError(f"SimpleStackConfig.shape[{i}]={s}, expected > 0 (shape is (bscans, ascans, depth))")
        header = config.header
        if isinstance(header, str):
            header = SimpleStackHeader(header.lower())
        if not isinstance(header, SimpleStackHeader):
            raise TypeError(f"SimpleStackConfig.header={config.header!r}, expected a SimpleStackHeader")
        self._do("open", {"Path": path, "Shape": list(shape),
                          "Header": int(header is SimpleStackHeader.NumPy)})  # storage.Header
        self.config = SimpleStackConfig(path, shape, header)  # type: ignore[arg-type]

    @native
    def close(self) -> None:
        """Finalise the header (dropping an incomplete trailing volume) and close the file.

        Raises :class:`~vortexgo.InUseError` while a storage endpoint of an
        engine that has not finished writes here: stop the engine first.
        """
        self._h.Close()

    def _require_open(self, what: str) -> None:
        # ClosedError (a ValueError): a stack is closed until open() and after close().
        if not self.is_open:
            raise ClosedError(f"{type(self).__name__}.{what}: the stack is not open, expected open(config) first")

    def _check(self, a: np.ndarray, what: str) -> None:
        if a.dtype != self._dtype:
            raise ValueError(f"{what}: dtype {a.dtype.name}, expected {self._dtype.name} (this is a "
                             f"{type(self).__name__}; cast first)")

    @native
    def write_volume(self, volume: Any) -> None:
        """Write one whole volume (NumPy, CuPy, or vortexgo array) of shape
        ``(bscans, ascans, depth)`` and advance to the next."""
        self._require_open("write_volume")
        a = _host(volume)
        self._check(a, "write_volume")
        if a.shape != self.shape and a.shape != (1,) + tuple(self.shape or ()):
            raise ValueError(f"write_volume: shape {a.shape}, expected {self.shape}")
        self._do("write", {"Bscan": -1}, a.ctypes.data, a.nbytes)  # bscan -1: a whole volume

    @native
    def write_partial_bscan(self, bscan_idx: int, ascan_idx: int, data: Any) -> None:
        """Write whole A-scans (shape ``(n, depth)`` or ``(depth,)``) into B-scan
        ``bscan_idx`` of the current volume from A-scan ``ascan_idx``."""
        self._require_open("write_partial_bscan")
        a = _host(data)
        self._check(a, "write_partial_bscan")
        depth = (self.shape or (0, 0, 0))[2]
        if a.shape[-1:] != (depth,) or a.ndim > 2:
            raise ValueError(f"write_partial_bscan: shape {a.shape}, expected (n, {depth}) or ({depth},)")
        self._do("write", {"Bscan": check_int("bscan_idx", bscan_idx, 0), "Ascan": check_int("ascan_idx", ascan_idx, 0)},
                 a.ctypes.data, a.nbytes)

    @native
    def advance_volume(self) -> None:
        """Mark the current volume complete (after partial writes) and move to the next."""
        self._do("advance_volume")

    @native
    def seek(self, volume_idx: int, bscan_idx: int = 0) -> None:
        """Move the write position to ``(volume_idx, bscan_idx)``."""
        self._do("seek", {"Volume": check_int("volume_idx", volume_idx, 0), "Bscan": check_int("bscan_idx", bscan_idx, 0)})

    def __enter__(self) -> "_SimpleStack":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self.is_open:
            return f"<{type(self).__name__} closed>"
        c = self.config
        return (f"<{type(self).__name__} {os.fspath(c.path)!r} {self.shape} {c.header.name}, "
                f"{self.volumes_written} volumes written>")


class SimpleStackInt8(_SimpleStack):
    """A stack of int8 volumes (the processor's int8 rendering)."""

    _dtype = np.dtype("int8")


class SimpleStackUInt16(_SimpleStack):
    """A stack of uint16 volumes (raw spectra, or processed values cast to uint16)."""

    _dtype = np.dtype("uint16")


class SimpleStackFloat32(_SimpleStack):
    """A stack of float32 volumes (processed A-scans)."""

    _dtype = np.dtype("float32")
