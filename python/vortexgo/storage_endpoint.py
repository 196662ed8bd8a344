"""Storage endpoints beyond ``SimpleStack``: vortex's stream, HDF5, BROCT, dump and
marker-log endpoints (vortex users import them from ``vortex.engine``;
:mod:`vortexgo.engine` re-exports every name here).

- ``AscanStreamEndpoint(storage)`` / ``SpectraStreamEndpoint(storage)``: the
  records of each block that the format plan copies, appended in order to a
  ``SimpleStream`` (int8 or float32 A-scans; uint16 spectra).
- ``CounterStreamEndpoint``, ``GalvoTargetStreamEndpoint``,
  ``SampleTargetStreamEndpoint``, ``GalvoActualStreamEndpoint``,
  ``SampleActualStreamEndpoint``, ``StrobesStreamEndpoint``: the same records
  of the block's streams (uint64 record counter; float64 galvo positions, one
  column per channel; uint32 strobe words, into a ``SimpleStreamUInt32``).
- ``CounterStackEndpoint``, ``GalvoTargetStackEndpoint``,
  ``SampleTargetStackEndpoint``, ``GalvoActualStackEndpoint``,
  ``SampleActualStackEndpoint``, ``StrobesStackEndpoint`` and their
  ``...HDF5StackEndpoint`` twins: a stream's records laid out by the format
  plan, ``(segments, records, columns, 1)`` per volume, in a ``SimpleStack`` /
  ``HDF5Stack`` of the stream's type, written as vortex's
  :class:`~vortexgo.endpoint.BufferStrategy` says.
- ``CounterStackHostTensorEndpoint`` / ``GalvoActualStackHostTensorEndpoint``:
  the latest volume of the counter (uint64) / measured galvo positions
  (float64) in a host tensor of shape ``(segments, records, columns)``.
- ``StreamDumpStorage(storage, lead_samples=0)``: one stream of every block,
  whole, every ``divisor``-th row, into a ``StreamDump``.
- ``MarkerLogStorage(storage)``: every block's markers into a ``MarkerLog``.
- ``AscanHDF5StackEndpoint`` / ``SpectraHDF5StackEndpoint``: the plan's
  copies into an ``HDF5Stack``; ``BroctStorageEndpoint``: int8 volumes into a
  ``BroctStorage`` (its B-scans transposed in the writer, where vortex's
  BroctFormatExecutor transposes on the device). Like every stack storage
  endpoint they write as their :class:`~vortexgo.endpoint.BufferStrategy` says (vortex's
  semantics: Volume writes the segments each block finished and advances at
  each finished volume; Segment writes each finished segment; Block writes
  each copy at once).

Every write runs off the engine's hot path (a writer goroutine per endpoint fed
through pinned staging buffers); the first failed write stops the engine and
``Engine.wait()`` raises it; a stop keeps every completed block and volume (and,
as in vortex, the stop finishes the planner: the volume open at the stop is
stored with what it got). A storage that is not open when a block arrives is
skipped, as in vortex (the stack endpoints need theirs open at
:meth:`~vortexgo.engine.Engine.prepare`, to check its shape). Closing the storage
while an engine writes to it raises :class:`~vortexgo.InUseError`.
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
from .endpoint import (BufferStrategy, _buffer_strategy, _Endpoint, _EndpointTensor, _PendingTensor, _StorageEndpoint,
                       _TensorEndpoint)
from .format import StackFormatExecutor, StackFormatExecutorConfig
from .storage import BroctStorage, MarkerLog, StreamDump, _close_quietly, _HDF5Stack, _SimpleStack, _SimpleStream

# (stream name, class prefix, dtype) of vortex's block streams (stream_index_t order)
_STREAMS = (("counter", "Counter", "uint64"), ("galvo_target", "GalvoTarget", "float64"),
            ("sample_target", "SampleTarget", "float64"), ("galvo_actual", "GalvoActual", "float64"),
            ("sample_actual", "SampleActual", "float64"), ("strobes", "Strobes", "uint32"))

__all__ = [
    "AscanStreamEndpoint", "SpectraStreamEndpoint", "CounterStreamEndpoint", "GalvoTargetStreamEndpoint",
    "SampleTargetStreamEndpoint", "GalvoActualStreamEndpoint", "SampleActualStreamEndpoint", "StrobesStreamEndpoint",
    "StreamDumpStorage", "MarkerLogStorage",
    "AscanHDF5StackEndpoint", "SpectraHDF5StackEndpoint", "BroctStorageEndpoint",
    "CounterStackHostTensorEndpoint", "GalvoActualStackHostTensorEndpoint",
] + [f"{c}StackEndpoint" for _, c, _ in _STREAMS] + [f"{c}HDF5StackEndpoint" for _, c, _ in _STREAMS]


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
StrobesStreamEndpoint = _stream_endpoint(
    "StrobesStreamEndpoint", "Appends the strobe words (uint32, bit ``line`` per strobe, the engine's "
    "``EngineConfig.strobes``) of the copied records to a ``SimpleStreamUInt32``.", ("uint32",))


class StreamDumpStorage(_BlockEndpoint):
    """Dumps one stream of every block (``StreamDumpConfig.stream``) to a ``StreamDump``:
    ``StreamDumpStorage(storage, lead_samples=0)``. vortexgo's blocks carry the
    acquisition's timing only, so ``lead_samples`` must be 0. Stream 5 (strobes)
    dumps uint32 words."""

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
    same Go endpoint: gosrc/endpoint.StackStorageEndpoint):
    ``Endpoint(executor, storage, buffer_strategy=BufferStrategy.Volume, log=None)``."""

    _storages: tuple = ()


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


class _StreamStackEndpoint(_StorageEndpoint):
    """A stream's records laid out by the format plan into a stack storage
    (vortex's ``streams_stack_storage``): ``<Stream>StackEndpoint(executor,
    storage, buffer_strategy=BufferStrategy.Volume, log=None)``."""

    _source = ""
    _dtype_name = ""
    _storages: tuple = (_SimpleStack,)

    def __init__(self, executor: Any = None, storage: Any = None, buffer_strategy: Any = BufferStrategy.Volume,
                 log: Optional[logging.Logger] = None, *, logger: Optional[logging.Logger] = None) -> None:
        _Endpoint.__init__(self)
        if storage is None and isinstance(executor, self._storages):
            executor, storage = None, executor
        if not isinstance(storage, self._storages):
            names = " or ".join(c.__name__.lstrip("_") for c in self._storages)
            raise TypeError(f"storage={storage!r}, expected a {names} of {self._dtype_name}")
        if storage.dtype != np.dtype(self._dtype_name):
            raise ValueError(f"storage is a {type(storage).__name__}, expected a {self._dtype_name} stack for "
                             f"{type(self).__name__} (the {self._source} stream is {self._dtype_name})")
        strategy = _buffer_strategy(buffer_strategy)
        self._set_executor_shape(executor, None)
        self.buffer_strategy = strategy
        self.logger = logger if logger is not None else log
        self.storage = storage
        # Without an executor the Go endpoint takes the storage in its place
        # and keeps every column of the stream.
        x = executor._handle() if executor is not None else storage._h
        self._h = native(api.NewStorageEndpoint)(f"{self._source}_stack:{strategy.name}", storage._h, x)

    @property
    def executor(self) -> Optional[StackFormatExecutor]:
        """Its stack executor; None keeps every column of the stream."""
        return self._executor


def _stream_stack_endpoint(stream: str, prefix: str, dtype: str, hdf5: bool) -> type:
    name = f"{prefix}{'HDF5' if hdf5 else ''}StackEndpoint"
    store = f"{'HDF5Stack' if hdf5 else 'SimpleStack'}{ {'uint64': 'UInt64', 'float64': 'Float64', 'uint32': 'UInt32'}[dtype]}"
    doc = (f"Stores the block's ``{stream}`` stream ({dtype}), laid out by the format plan, in a ``{store}`` of "
           "volume shape ``(segments, records, columns, 1)``: "
           f"``{name}(executor, storage, buffer_strategy=BufferStrategy.Volume)`` (vortex's). The executor's "
           "sample slice and transform apply to the stream's columns; open the storage before "
           ":meth:`~vortexgo.engine.Engine.prepare`.")
    return type(name, (_StreamStackEndpoint,), {"__doc__": doc, "_source": stream, "_dtype_name": dtype,
                                                "_storages": (_HDF5Stack,) if hdf5 else (_SimpleStack,),
                                                "__module__": __name__})


for _s, _c, _d in _STREAMS:
    for _h5 in (False, True):
        _cls = _stream_stack_endpoint(_s, _c, _d, _h5)
        globals()[_cls.__name__] = _cls
del _s, _c, _d, _h5, _cls


class _UInt64EndpointTensor(_EndpointTensor):
    """An endpoint's uint64 volume: held in float64 storage of the same size
    (the tensors have no 64-bit integers) and viewed as uint64."""

    @property
    def dtype(self) -> np.dtype:
        """uint64."""
        return np.dtype(np.uint64)

    def view(self) -> Any:
        """A zero-copy uint64 view of the volume (see :meth:`DeviceTensor.view`)."""
        return super().view().view(np.uint64)

    def __repr__(self) -> str:
        return super().__repr__().replace("float64", "uint64")


class _StreamTensorEndpoint(_TensorEndpoint):
    """The latest volume of one of the block's streams in a host tensor
    (vortex's ``streams_stack_cuda_host_tensor``)."""

    _memory = "host"
    _kind = ""

    def __init__(self, executor: Optional[StackFormatExecutor] = None, shape: Any = None,
                 log: Optional[logging.Logger] = None, *, logger: Optional[logging.Logger] = None) -> None:
        _Endpoint.__init__(self)
        if shape is None and executor is not None and not isinstance(executor, StackFormatExecutor):
            executor, shape = None, executor  # Endpoint(shape)
        if shape is None:
            raise TypeError(f"{type(self).__name__}: shape=None, expected the volume's (segments, records, columns)")
        self._set_executor_shape(executor, shape)
        self.logger = logger if logger is not None else log
        ex = executor if executor is not None else StackFormatExecutor(StackFormatExecutorConfig())
        self._h = native(api.NewExecutorEndpoint)(self._kind, self._dtype, ex._handle(), *self._shape)

    @property
    def executor(self) -> Optional[StackFormatExecutor]:
        """Its stack executor; None keeps every column of the stream."""
        return self._executor

    @property
    def tensor(self) -> Any:
        """The latest volume, ``(segments, records, columns)``, locked by
        ``with endpoint.tensor as volume:`` (NumPy, no copy)."""
        self._live("tensor")
        if self._tensor is None:
            if self._device is None or not self.prepared:
                return _PendingTensor(self)  # vortex's: valid False until prepared
            dev = self._require_device()
            h = native(self._h.Tensor)()
            cls = _UInt64EndpointTensor if self._dtype == "uint64" else _EndpointTensor
            self._tensor = cls._wrap(h, dev, self.stream, pinned=True)
        return self._tensor


class CounterStackHostTensorEndpoint(_StreamTensorEndpoint):
    """The latest volume of the record counter (uint64: the acquisition sample of
    each record), laid out by the format plan in a host tensor:
    ``CounterStackHostTensorEndpoint(executor, shape)`` with ``shape`` =
    ``(segments, records, 1)`` (vortex's)."""

    _kind = "counter_stack_host"
    _dtype = "uint64"


class GalvoActualStackHostTensorEndpoint(_StreamTensorEndpoint):
    """The latest volume of the measured galvo positions (float64, one column per
    input channel) in a host tensor: ``GalvoActualStackHostTensorEndpoint(executor,
    shape)`` with ``shape`` = ``(segments, records, channels)`` (vortex's)."""

    _kind = "galvo_actual_stack_host"
    _dtype = "float64"
