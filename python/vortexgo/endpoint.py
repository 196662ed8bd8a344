"""Endpoints: where the engine's formatted volumes go (vortex's endpoints,
which vortex users import from ``vortex.engine``; :mod:`vortexgo.engine`
re-exports every name here).

Tensor endpoints keep the latest volume in a locked tensor
(``with endpoint.tensor as volume:``); storage endpoints write every
completed volume to a ``SimpleStack``; :class:`NullEndpoint` discards
blocks but still fires its callbacks. Callbacks fire **once the formatting
is dispatched, not completed**: chain GPU work on ``endpoint.stream``.

An endpoint belongs to the user; an engine borrows it from its
``prepare()`` until its run ends. Closing it while an engine uses it raises
:class:`~vortexgo.InUseError` (stop the engine first); after ``close()``,
``endpoint.stream`` (and a wrapper cached from it) raises
:class:`~vortexgo.ClosedError` instead of reaching a destroyed stream.
"""

from __future__ import annotations

import enum
import logging
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ._attrs import NoCopy, StrictAttributes
from ._core import api
from ._device import Device
from ._errors import ClosedError, LockError, VortexError, native
from ._stream import Stream
from ._tensor import DeviceTensor
from ._validate import check_int, check_shape
from .log import is_logger
from .format import (PositionFormatExecutor, RadialFormatExecutor, SpiralFormatExecutor, StackFormatExecutor,
                     StackFormatExecutorConfig)
from .storage import _SimpleStack

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
]

_GEOMETRY = (RadialFormatExecutor, SpiralFormatExecutor, PositionFormatExecutor)


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
        kind = ("spectra_" if self._spectra else "") + (self._geometry or f"stack_{self._memory}")
        self._h = native(api.NewExecutorEndpoint)(kind, self._dtype, executor._handle(), *(self._shape or (0, 0, 0)))

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


class StackDeviceTensorEndpointInt8(_TensorEndpoint):
    """Keeps the latest volume's int8 rendering in device memory (``with endpoint.tensor as volume``)."""

    _dtype = "int8"


class StackDeviceTensorEndpointUInt16(_TensorEndpoint):
    """Keeps the latest processed volume as uint16 (rounded, saturated) in device memory."""

    _dtype = "uint16"


class StackDeviceTensorEndpointFloat32(_TensorEndpoint):
    """Keeps the latest processed volume as float32 in device memory."""

    _dtype = "float32"


class StackHostTensorEndpointInt8(_TensorEndpoint):
    """Keeps the latest volume's int8 rendering in pinned host memory (NumPy, no copy)."""

    _dtype = "int8"
    _memory = "host"


class StackHostTensorEndpointUInt16(_TensorEndpoint):
    """Keeps the latest processed volume as uint16 in pinned host memory."""

    _dtype = "uint16"
    _memory = "host"


class StackHostTensorEndpointFloat32(_TensorEndpoint):
    """Keeps the latest processed volume as float32 in pinned host memory."""

    _dtype = "float32"
    _memory = "host"


class SpectraStackDeviceTensorEndpointUInt16(_TensorEndpoint):
    """Keeps the latest volume's raw uint16 spectra, uncropped, in device memory."""

    _dtype = "uint16"
    _spectra = True


class SpectraStackHostTensorEndpointUInt16(_TensorEndpoint):
    """Keeps the latest volume's raw uint16 spectra, uncropped, in pinned host memory
    (NumPy, no copy)."""

    _dtype = "uint16"
    _spectra = True
    _memory = "host"


#: vortex's CPU spectra endpoint: the spectra in host memory.
SpectraStackTensorEndpointUInt16 = SpectraStackHostTensorEndpointUInt16


def _geometry_endpoint(name: str, geometry: str, executor: type, dtype: str, spectra: bool = False) -> type:
    what = "raw uint16 spectra" if spectra else f"processed A-scans as {dtype}"
    doc = (f"vortex's ``{name}``: the latest volume of {what}, placed by a {executor.__name__} into an "
           "``(x, y, samples)`` device tensor: ``{name}(executor, shape)``.").replace("{name}", name)
    return type(name, (_TensorEndpoint,), {"__doc__": doc, "_dtype": dtype, "_geometry": geometry,
                                          "_executors": (executor,), "_spectra": spectra, "__module__": __name__})


for _g, _ex in (("Radial", RadialFormatExecutor), ("Spiral", SpiralFormatExecutor), ("Position", PositionFormatExecutor)):
    for _suffix, _dt in (("Int8", "int8"), ("UInt16", "uint16"), ("Float32", "float32")):
        _n = f"{_g}DeviceTensorEndpoint{_suffix}"
        globals()[_n] = _geometry_endpoint(_n, _g.lower(), _ex, _dt)
    _n = f"Spectra{_g}DeviceTensorEndpointUInt16"
    globals()[_n] = _geometry_endpoint(_n, _g.lower(), _ex, "uint16", True)


# vortex's names for the same endpoints: its CPU tensor endpoints
# (StackTensorEndpoint*) keep the volume in host memory, as the host ones do
# here; its spiral A-scan endpoints are called AscanSpiralDeviceTensorEndpoint*.
StackTensorEndpointInt8 = StackHostTensorEndpointInt8
StackTensorEndpointUInt16 = StackHostTensorEndpointUInt16
StackTensorEndpointFloat32 = StackHostTensorEndpointFloat32
for _suffix in ("Int8", "UInt16", "Float32"):
    globals()[f"AscanSpiralDeviceTensorEndpoint{_suffix}"] = globals()[f"SpiralDeviceTensorEndpoint{_suffix}"]


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
        self.storage = storage
        # Without an executor the Go endpoint takes the storage in its place and
        # keeps every sample.
        x = executor._handle() if executor is not None else storage._h
        kind = ("spectra_stack" if self._spectra else "ascan_stack") + ":" + self.buffer_strategy.name
        self._h = native(api.NewStorageEndpoint)(kind, storage._h, x)

    @property
    def volumes_written(self) -> int:
        """Volumes handed to the storage so far (still readable after :meth:`close`:
        it reports what was stored)."""
        rec = np.zeros(1, np.float64)  # endpoint.StackStorageEndpoint.Record: volumes written
        self._h.Record(rec.ctypes.data, 1)
        return int(rec[0])


class AscanStackEndpoint(_StorageEndpoint):
    """Stores every completed processed volume in a ``SimpleStack`` (in the stack's
    dtype), off the engine's hot path. Open the stack before :meth:`~vortexgo.engine.Engine.prepare`."""


class SpectraStackEndpoint(_StorageEndpoint):
    """Stores the raw uint16 spectra of every completed volume in a ``SimpleStackUInt16``."""

    _spectra = True


class NullEndpoint(_Endpoint):
    """Receives blocks and discards them; its callbacks still fire (and work chained on
    its stream runs after the block's processing)."""

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__()
        self.logger = logger
        self._h = api.NewEndpoint("null", "")
