"""Storage endpoints beyond ``SimpleStack``: vortex's stream, HDF5, BROCT, dump and
marker-log endpoints (vortex users import them from ``vortex.engine``;
:mod:`vortexgo.engine` re-exports every name here).

- ``AscanStreamEndpoint(storage)`` / ``SpectraStreamEndpoint(storage)``: the
  records of each block that the format plan copies, appended in order to a
  ``SimpleStream`` (int8 or float32 A-scans; uint16 spectra).
- ``CounterStreamEndpoint``, ``GalvoTargetStreamEndpoint``,
  ``SampleTargetStreamEndpoint``, ``GalvoActualStreamEndpoint``,
  ``SampleActualStreamEndpoint``: the same records of the block's streams
  (uint64 record counter; float64 galvo positions, one column per channel).
- ``StreamDumpStorage(storage, lead_samples=0)``: one stream of every block,
  whole, every ``divisor``-th row, into a ``StreamDump``.
- ``MarkerLogStorage(storage)``: every block's markers into a ``MarkerLog``.
- ``AscanHDF5StackEndpoint`` / ``SpectraHDF5StackEndpoint``: each completed
  volume into an ``HDF5Stack``; ``BroctStorageEndpoint``: each completed int8
  volume into a ``BroctStorage`` (its B-scans transposed in the writer, where
  vortex's BroctFormatExecutor transposes on the device).

Every write runs off the engine's hot path (a writer goroutine per endpoint fed
through pinned staging buffers); the first failed write stops the engine and
``Engine.wait()`` raises it; a stop keeps every completed block and volume. A
storage that is not open is skipped, as in vortex. Closing the storage while an
engine writes to it raises :class:`~vortexgo.InUseError`.
"""

from __future__ import annotations

import json
import logging
import weakref
from typing import Any, Optional

import numpy as np

from ._core import api
from ._errors import VortexError, native
from ._validate import check_int
from .endpoint import _Endpoint, _StorageEndpoint
from .storage import BroctStorage, MarkerLog, StreamDump, _close_quietly, _HDF5Stack, _SimpleStream

__all__ = [
    "AscanStreamEndpoint", "SpectraStreamEndpoint", "CounterStreamEndpoint", "GalvoTargetStreamEndpoint",
    "SampleTargetStreamEndpoint", "GalvoActualStreamEndpoint", "SampleActualStreamEndpoint",
    "StreamDumpStorage", "MarkerLogStorage",
    "AscanHDF5StackEndpoint", "SpectraHDF5StackEndpoint", "BroctStorageEndpoint",
]


class _BlockEndpoint(_Endpoint):
    """An endpoint writing each block to a stream storage (gosrc/storage.BlockEndpoint)."""

    _kind = ""
    _storage: tuple = (_SimpleStream,)
    _dtypes: tuple = ()

    def __init__(self, storage: Any, log: Optional[logging.Logger] = None, *, lead_samples: int = 0) -> None:
        super().__init__()
        if not isinstance(storage, self._storage):
            names = " or ".join(c.__name__.lstrip("_") for c in self._storage)
            raise TypeError(f"storage={storage!r}, expected a {names}")
        if self._dtypes and storage.dtype.name not in self._dtypes:
            raise ValueError(f"storage is a {type(storage).__name__}, expected a SimpleStream of "
                             f"{' or '.join(self._dtypes)} for {type(self).__name__}")
        self.logger = log
        self.storage = storage
        self._h = native(api.NewObject)("storage", "endpoint:" + self._kind, "")
        weakref.finalize(self, _close_quietly, self._h)
        native(self._h.Do)("attach", json.dumps({"LeadSamples": check_int("lead_samples", lead_samples, 0)}),
                           storage._h, 0, 0)

    def _record(self) -> list:
        rec = np.zeros(2, np.float64)
        self._h.Record(rec.ctypes.data, 2)
        return rec.tolist()

    @property
    def prepared(self) -> bool:
        """True once an engine has prepared the endpoint."""
        self._live("prepared")
        return bool(self._record()[0])

    @property
    def stream(self) -> Any:
        """Not offered (a storage endpoint's stream only downloads blocks for its writer)."""
        raise VortexError(f"{type(self).__name__} has no stream to chain work on (it only downloads blocks "
                          "for its writer); use a tensor endpoint's stream")

    @property
    def blocks_written(self) -> int:
        """Blocks handed to the storage so far."""
        return int(self._record()[1])


def _stream_endpoint(name: str, doc: str, dtypes: tuple) -> type:
    return type(name, (_BlockEndpoint,), {"__doc__": doc, "_kind": name, "_dtypes": dtypes, "__module__": __name__})


AscanStreamEndpoint = _stream_endpoint(
    "AscanStreamEndpoint", "Appends the processed A-scans the format plan copies, in order, to a "
    "``SimpleStreamInt8`` or ``SimpleStreamFloat32``.", ("int8", "float32"))
SpectraStreamEndpoint = _stream_endpoint(
    "SpectraStreamEndpoint", "Appends the raw spectra the format plan copies to a ``SimpleStreamUInt16``.", ("uint16",))
CounterStreamEndpoint = _stream_endpoint(
    "CounterStreamEndpoint", "Appends the record counter (uint64 sample index) of the copied records to a "
    "``SimpleStreamUInt64``.", ("uint64",))
GalvoTargetStreamEndpoint = _stream_endpoint(
    "GalvoTargetStreamEndpoint", "Appends the commanded galvo positions (float64, one column per output "
    "channel) of the copied records to a ``SimpleStreamFloat64``.", ("float64",))
SampleTargetStreamEndpoint = _stream_endpoint(
    "SampleTargetStreamEndpoint", "Appends the on-time commanded positions of the copied records to a "
    "``SimpleStreamFloat64``.", ("float64",))
GalvoActualStreamEndpoint = _stream_endpoint(
    "GalvoActualStreamEndpoint", "Appends the measured galvo positions (one column per input channel) of the "
    "copied records to a ``SimpleStreamFloat64``.", ("float64",))
SampleActualStreamEndpoint = _stream_endpoint(
    "SampleActualStreamEndpoint", "Appends the on-time measured positions of the copied records to a "
    "``SimpleStreamFloat64``.", ("float64",))


class StreamDumpStorage(_BlockEndpoint):
    """Dumps one stream of every block (``StreamDumpConfig.stream``) to a ``StreamDump``:
    ``StreamDumpStorage(storage, lead_samples=0)``. vortexgo's blocks carry the
    acquisition's timing only, so ``lead_samples`` must be 0; the engine generates
    no strobes (stream 5)."""

    _kind = "StreamDumpStorage"
    _storage = (StreamDump,)

    def __init__(self, storage: StreamDump, lead_samples: int = 0) -> None:
        super().__init__(storage, lead_samples=lead_samples)


class MarkerLogStorage(_BlockEndpoint):
    """Logs every block's markers to a ``MarkerLog``: ``MarkerLogStorage(storage)``."""

    _kind = "MarkerLogStorage"
    _storage = (MarkerLog,)

    def __init__(self, storage: MarkerLog) -> None:
        super().__init__(storage)


class _VolumeEndpoint(_StorageEndpoint):
    """A stack storage endpoint over another storage than ``SimpleStack`` (the
    same Go endpoint: gosrc/endpoint.StackStorageEndpoint)."""

    _storages: tuple = ()

    def __init__(self, executor: Any = None, storage: Any = None, buffer_strategy: Any = None,
                 logger: Optional[logging.Logger] = None, log: Optional[logging.Logger] = None) -> None:
        _Endpoint.__init__(self)
        if storage is None and isinstance(executor, self._storages):
            executor, storage = None, executor
        if not isinstance(storage, self._storages):
            names = " or ".join(c.__name__.lstrip("_") for c in self._storages)
            raise TypeError(f"storage={storage!r}, expected a {names}")
        if self._spectra and storage.dtype != np.uint16:
            raise ValueError(f"storage is a {type(storage).__name__}, expected a uint16 stack (raw spectra are uint16)")
        # vortex's buffer strategies all end in one write per volume here.
        self._set_executor_shape(executor, None)
        self.logger = logger if logger is not None else log
        self.storage = storage
        # Without an executor the Go endpoint takes the storage in its place and
        # keeps every sample.
        x = executor._handle() if executor is not None else storage._h
        self._h = native(api.NewStorageEndpoint)("spectra_stack" if self._spectra else "ascan_stack", storage._h, x)


class AscanHDF5StackEndpoint(_VolumeEndpoint):
    """Stores every completed processed volume in an ``HDF5Stack`` (int8, uint16 or
    float32), off the engine's hot path. Open the stack before :meth:`vortexgo.engine.Engine.prepare`."""

    _storages = (_HDF5Stack,)


class SpectraHDF5StackEndpoint(_VolumeEndpoint):
    """Stores the raw spectra of every completed volume in an ``HDF5StackUInt16``."""

    _storages = (_HDF5Stack,)
    _spectra = True


class BroctStorageEndpoint(_VolumeEndpoint):
    """Stores every completed int8 volume in a ``BroctStorage``:
    ``BroctStorageEndpoint(executor, storage)`` with a ``StackFormatExecutor`` (vortex
    takes a BroctFormatExecutor, which transposes on the device; vortexgo's writer
    transposes each B-scan to BROCT's ``(samples, ascans)``)."""

    _storages = (BroctStorage,)
