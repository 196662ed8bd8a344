"""Endpoints: where the engine's formatted volumes go (vortex's endpoints,
which vortex users import from ``vortex.engine``; :mod:`vortexgo.engine`
re-exports every name here).

Tensor endpoints keep the latest volume in a locked tensor
(``with endpoint.tensor as volume:``); storage endpoints write every
completed volume to a ``SimpleStack`` or another storage (below);
:class:`NullEndpoint` discards blocks but still fires its callbacks.
Callbacks fire **once the formatting is dispatched, not completed**: chain
GPU work on ``endpoint.stream``.

An endpoint belongs to the user; an engine borrows it from its
``prepare()`` until its run ends. Closing it while an engine uses it raises
:class:`~vortexgo.InUseError` (stop the engine first); after ``close()``,
``endpoint.stream`` (and a wrapper cached from it) raises
:class:`~vortexgo.ClosedError` instead of reaching a destroyed stream.

The storage endpoints beyond ``SimpleStack`` (vortex's stream, HDF5, BROCT,
dump and marker-log endpoints; ``vortexgo.storage_endpoint`` names them too):

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
  whole, every ``divisor``-th row, into a ``StreamDump``; ``lead_samples``
  picks the IO lead whose galvo target and strobes it dumps.
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

Each class that differs from its family only by dtype, stream or storage
(``StackDeviceTensorEndpointInt8``, ``CounterStreamEndpoint``, ...) is made
from one table, ``_CLASSES`` at the end of this module, as vortex's bindings
make them from one list; ``endpoint.pyi`` declares every name for editors
and type checkers.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _layouts
from ._attrs import NoCopy, StrictAttributes
from ._core import api
from ._device import Device
from ._errors import ClosedError, LockError, VortexError, native, release_on_collect
from ._stream import Stream
from ._tensor import DeviceTensor
from ._validate import check_int, check_shape
from .log import is_logger
from .format import (PositionFormatExecutor, RadialFormatExecutor, SpiralFormatExecutor, StackFormatExecutor,
                     StackFormatExecutorConfig)
from .storage import BroctStorage, MarkerLog, StreamDump, _HDF5Stack, _SimpleStack, _SimpleStream

__all__ = [
    "BufferStrategy",
    "StackDeviceTensorEndpointInt8", "StackDeviceTensorEndpointUInt16", "StackDeviceTensorEndpointFloat32",
    "StackHostTensorEndpointInt8", "StackHostTensorEndpointUInt16", "StackHostTensorEndpointFloat32",
    "SpectraStackDeviceTensorEndpointUInt16", "AscanStackEndpoint", "SpectraStackEndpoint", "NullEndpoint",
    "RadialDeviceTensorEndpointInt8", "RadialDeviceTensorEndpointUInt16", "RadialDeviceTensorEndpointFloat32",
    "SpiralDeviceTensorEndpointInt8", "SpiralDeviceTensorEndpointUInt16", "SpiralDeviceTensorEndpointFloat32",
    "PositionDeviceTensorEndpointInt8", "PositionDeviceTensorEndpointUInt16", "PositionDeviceTensorEndpointFloat32",
    "SpectraRadialDeviceTensorEndpointUInt16", "SpectraSpiralDeviceTensorEndpointUInt16",
    "SpectraPositionDeviceTensorEndpointUInt16",
    "StackTensorEndpointInt8", "StackTensorEndpointUInt16", "StackTensorEndpointFloat32",
    "SpectraStackHostTensorEndpointUInt16", "SpectraStackTensorEndpointUInt16",
    "AscanSpiralDeviceTensorEndpointInt8", "AscanSpiralDeviceTensorEndpointUInt16",
    "AscanSpiralDeviceTensorEndpointFloat32",
    # the storage endpoints beyond SimpleStack (STORAGE_ENDPOINTS)
    "AscanStreamEndpoint", "SpectraStreamEndpoint", "CounterStreamEndpoint", "GalvoTargetStreamEndpoint",
    "SampleTargetStreamEndpoint", "GalvoActualStreamEndpoint", "SampleActualStreamEndpoint", "StrobesStreamEndpoint",
    "StreamDumpStorage", "MarkerLogStorage",
    "AscanHDF5StackEndpoint", "SpectraHDF5StackEndpoint", "BroctStorageEndpoint",
    "CounterStackHostTensorEndpoint", "GalvoActualStackHostTensorEndpoint",
    "CounterStackEndpoint", "GalvoTargetStackEndpoint", "SampleTargetStackEndpoint", "GalvoActualStackEndpoint",
    "SampleActualStackEndpoint", "StrobesStackEndpoint",
    "CounterHDF5StackEndpoint", "GalvoTargetHDF5StackEndpoint", "SampleTargetHDF5StackEndpoint",
    "GalvoActualHDF5StackEndpoint", "SampleActualHDF5StackEndpoint", "StrobesHDF5StackEndpoint",
]

#: The storage endpoints beyond ``SimpleStack`` (``vortexgo.storage_endpoint``'s names).
STORAGE_ENDPOINTS = tuple(__all__[__all__.index("AscanStreamEndpoint"):])


class _EndpointTensor(DeviceTensor):
    """The endpoint's volume: the engine sizes and owns it, so it cannot be resized or freed from Python."""

    def resize(self, shape: Any, dtype: Any = None) -> None:
        if self._stack():
            raise LockError("resizing an endpoint's tensor while this thread holds its lock would deadlock; "
                            "leave the `with endpoint.tensor` block first (and note the engine sizes it)")
        raise VortexError("an endpoint's tensor is sized by the engine from the formatter and processor; "
                          "change their configuration and prepare a new engine instead")

    def close(self) -> None:
        """No-op: the endpoint owns its tensor (``endpoint.close()`` frees it)."""

    @property
    def valid(self) -> bool:
        """vortex's ``valid``: True while the engine's volume is allocated."""
        return not self._closed

    def __repr__(self) -> str:
        return "<Endpoint" + super().__repr__()[1:]


class _PendingTensor:
    """An endpoint's tensor before :meth:`~vortexgo.engine.Engine.prepare` allocates it,
    as vortex's: ``valid`` is False, ``shape`` and ``dtype`` are what the endpoint was
    built with (``[]`` when the formatter decides the shape), and ``with tensor as
    volume`` gives an empty volume (no B-scans), so a display polling it before the
    engine is prepared draws nothing instead of failing."""

    valid = False

    def __init__(self, endpoint: "_TensorEndpoint") -> None:
        self._name = type(endpoint).__name__
        self.shape = list(endpoint._shape or [])
        self.dtype = np.dtype(endpoint._dtype)

    def __enter__(self) -> np.ndarray:
        rest = tuple(self.shape[1:]) if len(self.shape) > 1 else (0, 1)
        return np.empty((0,) + rest, self.dtype)

    def __exit__(self, *exc: Any) -> None:
        pass

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # Not a 0-d object array (NumPy's silent fallback): say what to do.
        raise TypeError(f"np.asarray({self._name}.tensor): the volume is not allocated until Engine.prepare(); "
                        "then read it inside `with endpoint.tensor as volume:`")

    def __repr__(self) -> str:
        return f"<{self._name} tensor, not allocated until Engine.prepare(): {self.shape} {self.dtype.name}>"


class _EndpointStream(Stream):
    """A non-owning handle on an endpoint's stream: closing it only forgets
    the handle (the endpoint destroys the stream). Like every vortexgo
    handle it is released through ``weakref.finalize``, which is safe inside
    reference cycles (a callback that refers to its endpoint makes one)."""

    __slots__ = ()


class _Endpoint(NoCopy, StrictAttributes):
    """Common base of the endpoints: callbacks, tensor and stream."""

    _dtype: Optional[str] = None

    # vortex's notification callbacks, declared on the class as vortex's are (dir() lists them);
    # each endpoint sets its own in __init__.
    update_callback: Optional[Callable[[], Any]] = None
    segment_callback: Optional[Callable[[int, int, int, int], Any]] = None
    volume_callback: Optional[Callable[[int, int, int], Any]] = None
    scan_callback: Optional[Callable[[int, int], Any]] = None
    event_callback: Optional[Callable[[int, int], Any]] = None
    aggregate_segment_callback: Optional[Callable[[list[int]], Any]] = None
    block_segment_callback: Optional[Callable[[list[int]], Any]] = None

    def __init__(self) -> None:
        self.update_callback: Optional[Callable[[], Any]] = None
        self.segment_callback: Optional[Callable[[int, int, int, int], Any]] = None
        self.volume_callback: Optional[Callable[[int, int, int], Any]] = None
        self.scan_callback: Optional[Callable[[int, int], Any]] = None
        #: ``event_callback(sample, id)`` for the scan's Event markers (vortex's endpoint event callback).
        self.event_callback: Optional[Callable[[int, int], Any]] = None
        #: ``aggregate_segment_callback(segments)``: the segment indices (as ``segment_callback``'s
        #: last argument) a block finished in one volume, before that volume's ``volume_callback``,
        #: and at the block's end those of the volume still open (vortex's).
        self.aggregate_segment_callback: Optional[Callable[[list[int]], Any]] = None
        #: ``block_segment_callback(segments)``: every segment index the block finished, at the
        #: block's end, before ``update_callback`` (vortex's).
        self.block_segment_callback: Optional[Callable[[list[int]], Any]] = None
        self._device: Optional[Device] = None
        self._tensor: Optional[_EndpointTensor] = None
        self._stream: Optional[Stream] = None
        self._executor: Optional[StackFormatExecutor] = None
        self._shape: Optional[tuple[int, ...]] = None
        self._closed = False

    _executors: tuple = (StackFormatExecutor,)

    def _set_executor_shape(self, executor: Any, shape: Any) -> None:
        if executor is not None and not isinstance(executor, self._executors):
            names = " or ".join(c.__name__ for c in self._executors)
            raise TypeError(f"executor={executor!r}, expected a {names} or None")
        if shape is not None:
            shape = check_shape("shape", shape)
            if len(shape) != 3 or min(shape) <= 0:
                raise ValueError(f"shape={shape!r}, expected (segments, records, samples) of positive sizes")
        self._executor, self._shape = executor, shape

    def _live(self, what: str) -> None:
        if self._closed:
            raise ClosedError(f"{type(self).__name__}.{what}: the endpoint is closed")

    @property
    def prepared(self) -> bool:
        """True once an engine has prepared the endpoint."""
        self._live("prepared")
        return self._h.Prepared()

    @property
    def stream(self) -> Stream:
        """The stream formatting runs on (after :meth:`~vortexgo.engine.Engine.prepare`).

        ``with endpoint.stream as stream:`` makes it current (binding a
        ``cupy.cuda.ExternalStream`` when CuPy is installed), so work issued
        there runs after the engine's formatting of the volume.
        """
        self._live("stream")
        if self._stream is None:
            self._stream = _EndpointStream._wrap(self._require_device(), native(self._h.Stream)())
        return self._stream

    def _require_device(self) -> Device:
        if self._device is None or not self.prepared:
            raise ValueError(f"{type(self).__name__} is not prepared yet, expected Engine.prepare() first")
        return self._device

    def _bind(self, device: Device) -> None:
        """An engine prepared the endpoint on ``device``: its tensor and stream are taken anew."""
        self._device = device
        self._tensor, self._stream = None, None

    def _holds_lock(self) -> bool:
        """Whether this thread holds the endpoint's tensor lock (an engine waiting for its
        run would then wait forever)."""
        t = self._tensor
        return t is not None and bool(t._stack())

    @native
    def close(self) -> None:
        """Release the endpoint's stream and buffers.

        Raises :class:`~vortexgo.InUseError` while an engine that prepared the
        endpoint has not finished its run (stop the engine first, then close),
        and LockError while this thread holds the endpoint's tensor lock.
        Afterwards ``endpoint.stream`` and any stream taken from it raise
        :class:`~vortexgo.ClosedError`.
        """
        if self._closed:
            return
        t = self._tensor
        if t is not None and t._stack():
            raise LockError(f"closing {type(self).__name__} while this thread holds its tensor's lock; "
                            "leave the `with endpoint.tensor` block first")
        self._h.Close()  # InUseError leaves the endpoint open and usable
        self._closed = True
        fin = getattr(self, "_fin", None)
        if fin is not None:
            fin.detach()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("prepared" if self.prepared else "not prepared")
        cbs = [n for n in ("update", "segment", "volume", "scan", "event") if getattr(self, f"{n}_callback") is not None]
        cb = f", callbacks: {', '.join(cbs)}" if cbs else ""
        return f"<{type(self).__name__} {state}{cb}>"


class _TensorEndpoint(_Endpoint):
    _memory = "device"
    _spectra = False
    _geometry = ""  # "radial", "spiral", "position": a geometry endpoint

    def __init__(self, executor: Optional[StackFormatExecutor] = None, shape: Optional[Sequence[int]] = None,
                 logger: Optional[logging.Logger] = None) -> None:
        super().__init__()
        if is_logger(executor):
            executor, logger = None, executor
        self._set_executor_shape(executor, shape)
        self.logger = logger
        if executor is None:
            if self._geometry:
                raise TypeError(f"{type(self).__name__}: executor=None, expected a {self._executors[0].__name__}")
            # vortexgo's shorthand: a stack endpoint without an executor keeps every sample.
            executor = StackFormatExecutor(StackFormatExecutorConfig())
            self._executor = executor
        shape = self._shape or (0, 0, 0)
        if self._geometry:
            self._h = native(api.NewGeometryTensorEndpoint)(self._dtype, self._spectra, executor._handle(), *shape)
            self._fin = release_on_collect(self, self._h.Close, "an endpoint")
        else:
            self._h = native(api.NewStackTensorEndpoint)(self._dtype, self._memory == "host", self._spectra,
                                                         executor._handle(), *shape)
            self._fin = release_on_collect(self, self._h.Close, "an endpoint")

    @property
    def executor(self) -> Any:
        """The format executor this endpoint places its volume with (vortex's read-only ``executor``)."""
        return self._executor

    @property
    def tensor(self) -> DeviceTensor:
        """The latest volume, ``(bscans, ascans, depth)``, locked by ``with endpoint.tensor as volume:``.

        Before :meth:`~vortexgo.engine.Engine.prepare` it is a placeholder whose
        ``valid`` is False (vortex's) and whose volume is empty.

        The engine writes each block under the exclusive lock on
        :attr:`stream`; while you hold the lock the engine waits (backpressure)
        and never tears the data. Inside the lock you get a zero-copy CuPy
        array (NumPy for host endpoints and the CPU backend).
        """
        self._live("tensor")
        if self._tensor is None:
            if self._device is None or not self.prepared:
                return _PendingTensor(self)  # vortex's: valid False until prepared
            dev = self._require_device()
            h = native(self._h.Tensor)()
            self._tensor = _EndpointTensor._wrap(h, dev, self.stream, pinned=self._memory == "host")
        return self._tensor

    def __repr__(self) -> str:
        base = super().__repr__()
        if self._tensor is not None or (not self._closed and self.prepared):
            try:
                t = self.tensor
                base = base[:-1] + f", {t.shape} {t.dtype.name}>"
            except Exception:
                pass
        return base


class BufferStrategy(StrictAttributes, enum.IntEnum):
    """What a stack storage endpoint buffers before it writes (vortex's
    ``BufferStrategy``, values as vortex's ``buffer_strategy_t``)."""

    #: write each block's copies at once (``write_partial_bscan`` per copy)
    Block = 0
    #: buffer one segment, write it when the plan finishes it
    Segment = 1
    #: buffer the volume, write the segments each block finished at the
    #: block's end (vortex's default)
    Volume = 2


def _buffer_strategy(value: Any) -> BufferStrategy:
    """``value`` as a :class:`BufferStrategy` (also its name or value; None: vortex's
    default, Volume), or a clear error."""
    if value is None:
        return BufferStrategy.Volume
    if isinstance(value, BufferStrategy):
        return value
    if isinstance(value, str):
        for s in BufferStrategy:
            if s.name.lower() == value.lower():
                return s
        raise ValueError(f"buffer_strategy={value!r}, expected BufferStrategy.Block, Segment or Volume")
    if hasattr(value, "name") and isinstance(getattr(value, "name"), str) and type(value).__name__ == "BufferStrategy":
        return _buffer_strategy(value.name)  # vortex's own enum
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return BufferStrategy(check_int("buffer_strategy", value, 0, 2))
    raise TypeError(f"buffer_strategy={value!r}, expected a BufferStrategy (Block, Segment or Volume)")


def _storage_args(op: str, executor: Any, storage: Any, buffer_strategy: Any, logger: Any, storages: tuple) -> tuple:
    """vortex's storage endpoint arguments, ``(storage, log=None)`` or ``(executor, storage,
    buffer_strategy=BufferStrategy.Volume, log=None)``, and vortexgo's earlier ``(executor,
    storage, logger)``, as ``(executor, storage, buffer_strategy, logger)``."""
    if isinstance(executor, storages):  # (storage[, log])
        if storage is not None and not is_logger(storage):
            raise TypeError(f"{op}: a storage first, then {storage!r}; expected (storage, log=None) or "
                            "(executor, storage, buffer_strategy=BufferStrategy.Volume, log=None)")
        executor, storage, logger = None, executor, storage if logger is None else logger
    if is_logger(buffer_strategy):  # (executor, storage, logger)
        buffer_strategy, logger = None, buffer_strategy if logger is None else logger
    if not isinstance(storage, storages):
        names = " or ".join(c.__name__.lstrip("_") for c in storages)
        raise TypeError(f"{op}: storage={storage!r}, expected a {names}")
    return executor, storage, _buffer_strategy(buffer_strategy), logger


class _StorageEndpoint(_Endpoint):
    """A stack storage endpoint: vortex's ``(storage, log=None)`` or ``(executor, storage,
    buffer_strategy=BufferStrategy.Volume, log=None)``."""

    _spectra = False
    _storages: tuple = (_SimpleStack,)

    def __init__(self, executor: Any = None, storage: Any = None, buffer_strategy: Any = None,
                 logger: Optional[logging.Logger] = None, log: Optional[logging.Logger] = None) -> None:
        super().__init__()
        executor, storage, self.buffer_strategy, logger = _storage_args(
            type(self).__name__, executor, storage, buffer_strategy, logger if logger is not None else log,
            self._storages)
        if self._spectra and storage.dtype != np.uint16:
            want = "HDF5StackUInt16" if "HDF5" in type(storage).__name__ else "SimpleStackUInt16"
            raise ValueError(f"{type(self).__name__}: storage is a {type(storage).__name__}, expected a {want} "
                             "(raw spectra are uint16)")
        self._set_executor_shape(executor, None)
        self.logger = logger
        self._store = storage
        # Without an executor the Go endpoint takes the storage in its place and
        # keeps every sample.
        x = executor._handle() if executor is not None else storage._h
        self._h = native(api.NewStackStorageEndpoint)(self._spectra, self.buffer_strategy.name, storage._h, x)
        self._fin = release_on_collect(self, self._h.Close, "an endpoint")

    @property
    def storage(self) -> Any:
        """The storage this endpoint writes to (vortex's read-only ``storage``)."""
        return self._store

    @property
    def executor(self) -> Any:
        """Its stack executor (vortex's read-only ``executor``); None when built as ``(storage)``:
        every sample is kept."""
        return self._executor

    @property
    def volumes_written(self) -> int:
        """Volumes handed to the storage so far (still readable after :meth:`close`:
        it reports what was stored)."""
        return self._h.VolumesWritten()


class NullEndpoint(_Endpoint):
    """Receives blocks and discards them; its callbacks still fire (and work chained on
    its stream runs after the block's processing)."""

    def __init__(self, logger: Optional[logging.Logger] = None, *, log: Optional[logging.Logger] = None) -> None:
        super().__init__()
        self.logger = logger if logger is not None else log  # vortex's keyword is ``log``
        self._h = api.NewNullEndpoint()
        self._fin = release_on_collect(self, self._h.Close, "an endpoint")


class _BlockEndpoint(_Endpoint):
    """An endpoint writing each block to a stream storage (gosrc/endpoint.BlockEndpoint):
    ``_source`` is what it writes ("ascans", "spectra", a stream's name, "dump" or
    "markers")."""

    _source = ""
    _storage: tuple = (_SimpleStream,)
    _dtypes: tuple = ()

    def __init__(self, storage: Any, log: Optional[logging.Logger] = None) -> None:
        super().__init__()
        self._open(storage, log, 0)

    def _open(self, storage: Any, log: Optional[logging.Logger], lead_samples: int) -> None:
        """Checks the storage and builds the Go endpoint (``lead_samples``: a dump's lead)."""
        if not isinstance(storage, self._storage):
            names = " or ".join(c.__name__.lstrip("_") for c in self._storage)
            raise TypeError(f"storage={storage!r}, expected a {names}")
        if self._dtypes and storage.dtype.name not in self._dtypes:
            raise ValueError(f"storage is a {type(storage).__name__}, expected a SimpleStream of "
                             f"{' or '.join(self._dtypes)} for {type(self).__name__}")
        self.logger = log
        self._store = storage
        self._h = native(api.NewBlockEndpoint)(self._source, storage._h, check_int("lead_samples", lead_samples, 0))
        self._fin = release_on_collect(self, self._h.Close, "an endpoint")

    @property
    def storage(self) -> Any:
        """The storage this endpoint writes to (vortex's read-only ``storage``)."""
        return self._store

    def _state(self) -> Any:
        return _layouts.BLOCK_ENDPOINT.read(self._h.BlockState)

    @property
    def prepared(self) -> bool:
        """True once an engine has prepared the endpoint."""
        self._live("prepared")
        return bool(self._state().prepared)

    @property
    def stream(self) -> Any:
        """Not offered (a storage endpoint's stream only downloads blocks for its writer)."""
        raise VortexError(f"{type(self).__name__} has no stream to chain work on (it only downloads blocks "
                          "for its writer); use a tensor endpoint's stream")

    @property
    def blocks_written(self) -> int:
        """Blocks handed to the storage so far."""
        return self._state().blocks_written


class StreamDumpStorage(_BlockEndpoint):
    """Dumps one stream of every block (``StreamDumpConfig.stream``) to a ``StreamDump``:
    ``StreamDumpStorage(storage, lead_samples=0)``, as vortex's.

    ``lead_samples`` picks the IO lead whose streams are dumped (vortex's
    ``block.streams(lead_samples)``): the galvo target (stream 1) and the strobes (stream 5)
    the IOs added with ``EngineConfig.add_io(io, lead_samples=...)`` output, row ``r``
    holding what lead 0 holds ``lead_samples`` rows later; the other streams are the same
    at every lead. The engine keeps those streams for every lead of its IOs (and 0), so
    this costs no copy; a lead none of its IOs has is refused by
    :meth:`~vortexgo.engine.Engine.prepare` with an error naming the leads there are
    (vortex fails at the first block). Stream 5 dumps uint32 words."""

    _source = "dump"
    _storage = (StreamDump,)

    def __init__(self, storage: StreamDump, lead_samples: int = 0) -> None:
        _Endpoint.__init__(self)
        self._open(storage, None, lead_samples)


class MarkerLogStorage(_BlockEndpoint):
    """Logs every block's markers to a ``MarkerLog``: ``MarkerLogStorage(storage)``."""

    _source = "markers"
    _storage = (MarkerLog,)

    def __init__(self, storage: MarkerLog) -> None:
        super().__init__(storage)


class _VolumeEndpoint(_StorageEndpoint):
    """A stack storage endpoint over another storage than ``SimpleStack`` (the
    same Go endpoint: gosrc/endpoint.StackStorageEndpoint):
    ``Endpoint(executor, storage, buffer_strategy=BufferStrategy.Volume, log=None)``."""

    _storages: tuple = ()


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
        self._store = storage
        # Without an executor the Go endpoint takes the storage in its place
        # and keeps every column of the stream.
        x = executor._handle() if executor is not None else storage._h
        self._h = native(api.NewStreamStackEndpoint)(self._source, strategy.name, storage._h, x)
        self._fin = release_on_collect(self, self._h.Close, "an endpoint")



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
    _source = ""  # the stream: "counter" or "galvo_actual"

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
        self._h = native(api.NewStreamTensorEndpoint)(self._source, ex._handle(), *self._shape)
        self._fin = release_on_collect(self, self._h.Close, "an endpoint")

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


# ---------------------------------------------------------------------------
# The classes of vortex's endpoint families, one row each: (name, base,
# class attributes; "__doc__" may say {name}). vortex's bindings make them
# from one list too (bind/engine.cpp's BIND_*_ENDPOINT lines); endpoint.pyi
# declares each for editors, and __all__ lists each by name.


def _geometry(executor: type, dtype: str, spectra: bool = False) -> dict:
    """A geometry tensor endpoint's attributes: its executor's type decides the placement."""
    what = "raw uint16 spectra" if spectra else f"processed A-scans as {dtype}"
    return {"_dtype": dtype, "_geometry": executor.__name__[:-len("FormatExecutor")].lower(),
            "_executors": (executor,), "_spectra": spectra,
            "__doc__": f"vortex's ``{{name}}``: the latest volume of {what}, placed by a {executor.__name__} into an "
                       "``(x, y, samples)`` device tensor: ``{name}(executor, shape)``."}


def _stream(source: str, doc: str, *dtypes: str) -> dict:
    """A stream storage endpoint's attributes: what it appends and the stream types it takes."""
    return {"_source": source, "_dtypes": dtypes, "__doc__": doc}


def _stream_stack(stream: str, dtype: str, hdf5: bool = False) -> dict:
    """A stream stack endpoint's attributes (vortex's ``streams_stack_storage``)."""
    store = f"{'HDF5Stack' if hdf5 else 'SimpleStack'}{ {'uint64': 'UInt64', 'float64': 'Float64', 'uint32': 'UInt32'}[dtype]}"
    return {"_source": stream, "_dtype_name": dtype, "_storages": (_HDF5Stack,) if hdf5 else (_SimpleStack,),
            "__doc__": f"Stores the block's ``{stream}`` stream ({dtype}), laid out by the format plan, in a ``{store}`` "
                       "of volume shape ``(segments, records, columns, 1)``: "
                       "``{name}(executor, storage, buffer_strategy=BufferStrategy.Volume)`` (vortex's). The "
                       "executor's sample slice and transform apply to the stream's columns; open the storage before "
                       ":meth:`~vortexgo.engine.Engine.prepare`."}


_CLASSES: tuple[tuple[str, type, dict], ...] = (
    # tensor endpoints (vortex's *_cuda_device_tensor / *_cuda_host_tensor)
    ("StackDeviceTensorEndpointInt8", _TensorEndpoint, {"_dtype": "int8", "__doc__":
        "Keeps the latest volume's int8 rendering in device memory (``with endpoint.tensor as volume``)."}),
    ("StackDeviceTensorEndpointUInt16", _TensorEndpoint, {"_dtype": "uint16", "__doc__":
        "Keeps the latest processed volume as uint16 (rounded, saturated) in device memory."}),
    ("StackDeviceTensorEndpointFloat32", _TensorEndpoint, {"_dtype": "float32", "__doc__":
        "Keeps the latest processed volume as float32 in device memory."}),
    ("StackHostTensorEndpointInt8", _TensorEndpoint, {"_dtype": "int8", "_memory": "host", "__doc__":
        "Keeps the latest volume's int8 rendering in pinned host memory (NumPy, no copy)."}),
    ("StackHostTensorEndpointUInt16", _TensorEndpoint, {"_dtype": "uint16", "_memory": "host", "__doc__":
        "Keeps the latest processed volume as uint16 in pinned host memory."}),
    ("StackHostTensorEndpointFloat32", _TensorEndpoint, {"_dtype": "float32", "_memory": "host", "__doc__":
        "Keeps the latest processed volume as float32 in pinned host memory."}),
    ("SpectraStackDeviceTensorEndpointUInt16", _TensorEndpoint, {"_dtype": "uint16", "_spectra": True, "__doc__":
        "Keeps the latest volume's raw uint16 spectra, uncropped, in device memory."}),
    ("SpectraStackHostTensorEndpointUInt16", _TensorEndpoint, {"_dtype": "uint16", "_spectra": True, "_memory": "host",
        "__doc__": "Keeps the latest volume's raw uint16 spectra, uncropped, in pinned host memory (NumPy, no copy)."}),
    ("RadialDeviceTensorEndpointInt8", _TensorEndpoint, _geometry(RadialFormatExecutor, "int8")),
    ("RadialDeviceTensorEndpointUInt16", _TensorEndpoint, _geometry(RadialFormatExecutor, "uint16")),
    ("RadialDeviceTensorEndpointFloat32", _TensorEndpoint, _geometry(RadialFormatExecutor, "float32")),
    ("SpectraRadialDeviceTensorEndpointUInt16", _TensorEndpoint, _geometry(RadialFormatExecutor, "uint16", True)),
    ("SpiralDeviceTensorEndpointInt8", _TensorEndpoint, _geometry(SpiralFormatExecutor, "int8")),
    ("SpiralDeviceTensorEndpointUInt16", _TensorEndpoint, _geometry(SpiralFormatExecutor, "uint16")),
    ("SpiralDeviceTensorEndpointFloat32", _TensorEndpoint, _geometry(SpiralFormatExecutor, "float32")),
    ("SpectraSpiralDeviceTensorEndpointUInt16", _TensorEndpoint, _geometry(SpiralFormatExecutor, "uint16", True)),
    ("PositionDeviceTensorEndpointInt8", _TensorEndpoint, _geometry(PositionFormatExecutor, "int8")),
    ("PositionDeviceTensorEndpointUInt16", _TensorEndpoint, _geometry(PositionFormatExecutor, "uint16")),
    ("PositionDeviceTensorEndpointFloat32", _TensorEndpoint, _geometry(PositionFormatExecutor, "float32")),
    ("SpectraPositionDeviceTensorEndpointUInt16", _TensorEndpoint, _geometry(PositionFormatExecutor, "uint16", True)),
    # the streams' host tensor endpoints (vortex's streams_stack_cuda_host_tensor)
    ("CounterStackHostTensorEndpoint", _StreamTensorEndpoint, {"_source": "counter", "_dtype": "uint64", "__doc__":
        "The latest volume of the record counter (uint64: the acquisition sample of each record), laid out by the "
        "format plan in a host tensor: ``CounterStackHostTensorEndpoint(executor, shape)`` with ``shape`` = "
        "``(segments, records, 1)`` (vortex's)."}),
    ("GalvoActualStackHostTensorEndpoint", _StreamTensorEndpoint, {"_source": "galvo_actual", "_dtype": "float64",
        "__doc__": "The latest volume of the measured galvo positions (float64, one column per input channel) in a "
                   "host tensor: ``GalvoActualStackHostTensorEndpoint(executor, shape)`` with ``shape`` = "
                   "``(segments, records, channels)`` (vortex's)."}),
    # stack storage endpoints (vortex's stack_storage)
    ("AscanStackEndpoint", _StorageEndpoint, {"__doc__":
        "Stores every completed processed volume in a ``SimpleStack`` (in the stack's dtype), off the engine's hot "
        "path. Open the stack before :meth:`~vortexgo.engine.Engine.prepare`."}),
    ("SpectraStackEndpoint", _StorageEndpoint, {"_spectra": True, "__doc__":
        "Stores the raw uint16 spectra of every completed volume in a ``SimpleStackUInt16``."}),
    ("AscanHDF5StackEndpoint", _VolumeEndpoint, {"_storages": (_HDF5Stack,), "__doc__":
        "Stores every completed processed volume in an ``HDF5Stack`` (int8, uint16 or float32), off the engine's "
        "hot path. Open the stack before :meth:`vortexgo.engine.Engine.prepare`."}),
    ("SpectraHDF5StackEndpoint", _VolumeEndpoint, {"_storages": (_HDF5Stack,), "_spectra": True, "__doc__":
        "Stores the raw spectra of every completed volume in an ``HDF5StackUInt16``."}),
    ("BroctStorageEndpoint", _VolumeEndpoint, {"_storages": (BroctStorage,), "__doc__":
        "Stores every completed int8 volume in a ``BroctStorage``: ``BroctStorageEndpoint(executor, storage)`` with "
        "a ``StackFormatExecutor`` (vortex takes a BroctFormatExecutor, which transposes on the device; vortexgo's "
        "writer transposes each B-scan to BROCT's ``(samples, ascans)``)."}),
    # the streams' stack storage endpoints (vortex's streams_stack_storage)
    ("CounterStackEndpoint", _StreamStackEndpoint, _stream_stack("counter", "uint64")),
    ("GalvoTargetStackEndpoint", _StreamStackEndpoint, _stream_stack("galvo_target", "float64")),
    ("SampleTargetStackEndpoint", _StreamStackEndpoint, _stream_stack("sample_target", "float64")),
    ("GalvoActualStackEndpoint", _StreamStackEndpoint, _stream_stack("galvo_actual", "float64")),
    ("SampleActualStackEndpoint", _StreamStackEndpoint, _stream_stack("sample_actual", "float64")),
    ("StrobesStackEndpoint", _StreamStackEndpoint, _stream_stack("strobes", "uint32")),
    ("CounterHDF5StackEndpoint", _StreamStackEndpoint, _stream_stack("counter", "uint64", True)),
    ("GalvoTargetHDF5StackEndpoint", _StreamStackEndpoint, _stream_stack("galvo_target", "float64", True)),
    ("SampleTargetHDF5StackEndpoint", _StreamStackEndpoint, _stream_stack("sample_target", "float64", True)),
    ("GalvoActualHDF5StackEndpoint", _StreamStackEndpoint, _stream_stack("galvo_actual", "float64", True)),
    ("SampleActualHDF5StackEndpoint", _StreamStackEndpoint, _stream_stack("sample_actual", "float64", True)),
    ("StrobesHDF5StackEndpoint", _StreamStackEndpoint, _stream_stack("strobes", "uint32", True)),
    # stream storage endpoints (vortex's stream_storage)
    ("AscanStreamEndpoint", _BlockEndpoint, _stream(
        "ascans", "Appends the processed A-scans the format plan copies, in order, to a ``SimpleStreamInt8`` or "
        "``SimpleStreamFloat32``.", "int8", "float32")),
    ("SpectraStreamEndpoint", _BlockEndpoint, _stream(
        "spectra", "Appends the raw spectra the format plan copies to a ``SimpleStreamUInt16``.", "uint16")),
    ("CounterStreamEndpoint", _BlockEndpoint, _stream(
        "counter", "Appends the record counter (uint64 sample index) of the copied records to a "
        "``SimpleStreamUInt64``.", "uint64")),
    ("GalvoTargetStreamEndpoint", _BlockEndpoint, _stream(
        "galvo_target", "Appends the commanded galvo positions (float64, one column per output channel) of the "
        "copied records to a ``SimpleStreamFloat64``.", "float64")),
    ("SampleTargetStreamEndpoint", _BlockEndpoint, _stream(
        "sample_target", "Appends the on-time commanded positions of the copied records to a "
        "``SimpleStreamFloat64``.", "float64")),
    ("GalvoActualStreamEndpoint", _BlockEndpoint, _stream(
        "galvo_actual", "Appends the measured galvo positions (one column per input channel) of the copied records "
        "to a ``SimpleStreamFloat64``.", "float64")),
    ("SampleActualStreamEndpoint", _BlockEndpoint, _stream(
        "sample_actual", "Appends the on-time measured positions of the copied records to a "
        "``SimpleStreamFloat64``.", "float64")),
    ("StrobesStreamEndpoint", _BlockEndpoint, _stream(
        "strobes", "Appends the strobe words (uint32, bit ``line`` per strobe, the engine's "
        "``EngineConfig.strobes``) of the copied records to a ``SimpleStreamUInt32``.", "uint32")),
)

# vortex's other names for the same classes: its CPU tensor endpoints
# (StackTensorEndpoint*, SpectraStackTensorEndpointUInt16) keep the volume in
# host memory, as the host ones do here; its spiral A-scan endpoints are
# called AscanSpiralDeviceTensorEndpoint*.
_ALIASES: tuple[tuple[str, str], ...] = (
    ("StackTensorEndpointInt8", "StackHostTensorEndpointInt8"),
    ("StackTensorEndpointUInt16", "StackHostTensorEndpointUInt16"),
    ("StackTensorEndpointFloat32", "StackHostTensorEndpointFloat32"),
    ("SpectraStackTensorEndpointUInt16", "SpectraStackHostTensorEndpointUInt16"),
    ("AscanSpiralDeviceTensorEndpointInt8", "SpiralDeviceTensorEndpointInt8"),
    ("AscanSpiralDeviceTensorEndpointUInt16", "SpiralDeviceTensorEndpointUInt16"),
    ("AscanSpiralDeviceTensorEndpointFloat32", "SpiralDeviceTensorEndpointFloat32"),
)


def _define(classes: tuple, aliases: tuple) -> dict:
    """The table's classes (and aliases) by name, for the module's namespace."""
    made: dict = {}
    for name, base, attrs in classes:
        attrs = dict(attrs, __module__=__name__, __qualname__=name)
        attrs["__doc__"] = attrs["__doc__"].replace("{name}", name)
        made[name] = type(name, (base,), attrs)
    made.update({alias: made[name] for alias, name in aliases})
    return made


globals().update(_define(_CLASSES, _ALIASES))
