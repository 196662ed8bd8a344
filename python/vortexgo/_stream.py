"""Streams and events: ordered asynchronous work, and points in it."""

from __future__ import annotations

import sys
import threading
from typing import Any, Optional

from ._core import (
    EventBase,
    OP_QUERY_EVENT,
    OP_QUERY_STREAM,
    OP_RECORD,
    OP_SYNC_EVENT,
    OP_SYNC_STREAM,
    OP_WAIT_EVENT,
    StreamBase,
    c_event_query,
    c_event_record,
    c_event_sync,
    c_stream_query,
    c_stream_sync,
    c_stream_wait,
)
from . import _core
from ._device import Device, DeviceLike, get_device
from ._errors import ClosedError, native, release_on_collect
from ._lifetime import process_cache
from ._validate import INT64_MAX, check_bool, check_int

# Per-call operations try three paths in turn, each answering -1 when it
# cannot: the C fast path (CUDA streams and events the registry publishes),
# the Go fast path, both by the object's one registry id (_id), then the
# method path (_op: the wrappers' ids, still known after close), which
# raises the full error. A closed object has _id 0, so its calls always
# reach the method path's ClosedError; a close racing a call is safe below
# (the native handle outlives every call in flight).
#
# Stream and Event get these methods from a base class: the extension's C
# types (_core.StreamBase/EventBase, python/vortexgo/_fastcall.c) where it
# was built, so a call costs no Python frame, else the pure-Python bases
# below. The C methods fall back to the pure-Python methods (bound on the
# subclasses as _<name>_slow) for anything but the plain call that succeeds
# (no argument, keywords, a foreign stream, a -1 from both fast paths), so
# the two bases cannot differ in what they accept or raise.


@native
def _op(*args: int) -> int:
    # _core.stream_op is looked up per call: _core binds the Go function at its first load.
    return _core.stream_op(*args)


#: Smallest int64: priorities and handles are bounded to Go's int before gopy
#: sees them (it would say "int too big to convert", naming nothing).
INT64_MIN = -(2**63)

__all__ = [
    "Stream",
    "Event",
    "current_stream",
    "default_stream",
    "synchronize",
    "synchronize_stream",
    "synchronize_event",
]


def _cupy():
    """CuPy if it is installed (imported lazily: it takes a while), else None."""
    mod = sys.modules.get("cupy")
    if mod is not None:
        return mod
    try:
        import cupy  # type: ignore[import-not-found]
    except Exception:
        return None
    return cupy


class _PyStreamBase:
    """Stream's per-call methods in Python: its base without the C extension,
    and the slow path of the C base (python/vortexgo/_fastcall.c)."""

    __slots__ = ("_id",)

    def __new__(cls, *args: Any, **kwargs: Any):
        # The id starts at 0, as in the C base: a call on an object whose
        # __init__ failed takes the same path (and error) in both.
        self = super().__new__(cls)
        self._id = 0
        return self

    def record_event(self, event: Optional["Event"] = None) -> "Event":
        """Record ``event`` (a new one if None) at the tail of this stream and return it."""
        if event is None:
            event = Event(self.device)
        elif not isinstance(event, Event):
            raise TypeError(f"event={event!r}, expected a vortexgo.Event")
        if c_event_record(self._id, event._id) and _core.fast_record(self._id, event._id):
            _op(OP_RECORD, self._h.ID(), event._h.ID())  # raises the full error
        return event

    def wait_event(self, event: "Event") -> None:
        """Make later work on this stream wait for ``event``; the host does not wait."""
        if not isinstance(event, Event):
            raise TypeError(f"event={event!r}, expected a vortexgo.Event")
        if c_stream_wait(self._id, event._id) and _core.fast_wait_event(self._id, event._id):
            _op(OP_WAIT_EVENT, self._h.ID(), event._h.ID())

    def synchronize(self) -> None:
        """Block the host until all work queued so far is done (GIL released)."""
        if c_stream_sync(self._id) and _core.fast_sync_stream(self._id):
            _op(OP_SYNC_STREAM, self._h.ID(), 0)

    @property
    def is_complete(self) -> bool:
        """True when all work queued so far is done (does not block)."""
        r = c_stream_query(self._id)
        if r < 0:
            r = _core.fast_query_stream(self._id)
            if r < 0:
                return _op(OP_QUERY_STREAM, self._h.ID(), 0)
        return r == 1

    #: Alias of :attr:`is_complete` (CuPy's name).
    done = is_complete

    def query(self) -> bool:
        """Alias of :attr:`is_complete`."""
        return self.is_complete


class _PyEventBase:
    """Event's per-call methods in Python: its base without the C extension,
    and the slow path of the C base (python/vortexgo/_fastcall.c)."""

    __slots__ = ("_id",)

    def __new__(cls, *args: Any, **kwargs: Any):
        # The id starts at 0, as in the C base: a call on an object whose
        # __init__ failed takes the same path (and error) in both.
        self = super().__new__(cls)
        self._id = 0
        return self

    def record(self, stream: Optional["Stream"] = None) -> "Event":
        """Record this event at the tail of ``stream`` (default: the current stream)."""
        s = stream if stream is not None else current_stream(self.device)
        if not isinstance(s, Stream):
            s = Stream.from_external(s, self.device)
        if c_event_record(s._id, self._id) and _core.fast_record(s._id, self._id):
            _op(OP_RECORD, s._h.ID(), self._h.ID())  # raises the full error
        return self

    def synchronize(self) -> None:
        """Block the host until the event completes (GIL released)."""
        if c_event_sync(self._id) and _core.fast_sync_event(self._id):
            _op(OP_SYNC_EVENT, 0, self._h.ID())

    @property
    def is_complete(self) -> bool:
        """True once the work before the event is done (does not block)."""
        r = c_event_query(self._id)
        if r < 0:
            r = _core.fast_query_event(self._id)
            if r < 0:
                return _op(OP_QUERY_EVENT, 0, self._h.ID())
        return r == 1

    #: Alias of :attr:`is_complete` (CuPy's name).
    done = is_complete

    def query(self) -> bool:
        """Alias of :attr:`is_complete`."""
        return self.is_complete


_StreamBase = StreamBase if StreamBase is not None else _PyStreamBase
_EventBase = EventBase if EventBase is not None else _PyEventBase


class Stream(_StreamBase):
    """An ordered queue of asynchronous work on one device.

    On CUDA it is a non-blocking CUstream that CuPy, PyTorch and cuda.core can
    adopt (``__cuda_stream__``); on the CPU backend work runs synchronously in
    issue order.

    Args:
        device: the device (see :func:`vortexgo.get_device`).
        priority: clamped to ``device.stream_priority_range``; on CUDA a
            smaller number is a higher priority. Read back with :attr:`priority`.
    """

    __slots__ = ("_h", "_fin", "device", "_cupy_stream", "_closed", "_owner", "_hash", "__weakref__")

    def __init__(self, device: DeviceLike = None, priority: int = 0) -> None:
        priority = check_int("priority", priority, INT64_MIN, INT64_MAX)
        self._h = self._hash = None
        self._id = 0
        self._closed = True  # until the native stream exists
        self._cupy_stream = None
        self._owner: Any = None
        self.device: Device = get_device(device)
        self._h = native(self.device._h.NewStream)(priority)
        self._id = self._h.ID()
        self._fin = release_on_collect(self, self._h.Close, "a stream")
        self._closed = False

    @classmethod
    def _wrap(cls, device: Device, handle, owner: Any = None, *, release: bool = True) -> "Stream":
        # release=False: the native stream belongs to another object (a
        # coordinator, a readback pool) that closes it; collecting this
        # wrapper must not. Go decides whether the C fast path may name the
        # stream (pyapi: an adopted one yes; a borrowed one, of an endpoint or
        # a coordinator, no: the C path knows no owners).
        s = cls.__new__(cls)
        s.device = device
        s._h = handle
        s._id = handle.ID()
        s._hash = None
        s._fin = release_on_collect(s, handle.Close, "a stream") if release else None
        s._cupy_stream = None
        s._closed = False
        s._owner = owner  # keeps a foreign stream object alive while we use it
        return s

    @classmethod
    def from_external(cls, stream: Any, device: DeviceLike = None) -> "Stream":
        """Adopt a stream created elsewhere, without owning it.

        Args:
            stream: an object with ``__cuda_stream__`` (cuda.core, CuPy >= 13,
                vortexgo), a CuPy stream (``.ptr``), a PyTorch stream
                (``.cuda_stream``), or a raw CUstream handle as an int.
            device: the device the stream belongs to (default: the default device).
        """
        owner = None
        if isinstance(stream, Stream):
            return stream
        if isinstance(stream, int) and not isinstance(stream, bool):
            handle = stream
        elif hasattr(stream, "__cuda_stream__"):
            proto = stream.__cuda_stream__
            proto = proto() if callable(proto) else proto
            if not (isinstance(proto, tuple) and len(proto) == 2 and proto[0] == 0):
                raise TypeError(f"stream.__cuda_stream__ returned {proto!r}, expected (0, handle)")
            handle, owner = proto[1], stream
        elif hasattr(stream, "cuda_stream"):
            handle, owner = stream.cuda_stream, stream
        elif hasattr(stream, "ptr"):
            handle, owner = stream.ptr, stream
        else:
            raise TypeError(
                f"stream={stream!r:.60}, expected a stream handle: an int CUstream handle or an object with "
                "__cuda_stream__, .cuda_stream or .ptr giving one")
        try:
            handle = check_int("stream", handle, 0, INT64_MAX)
        except (TypeError, ValueError) as e:
            # Say that it is the handle (the CUstream value) that is wrong, and whose.
            whose = "" if owner is None else f" given by {type(owner).__name__}"
            raise type(e)(f"{e}: a stream handle{whose}, a CUstream value") from None
        dev = get_device(device)
        if owner is not None and device is None:
            dev_id = getattr(getattr(owner, "device", None), "id", None)
            if isinstance(dev_id, int):
                dev = get_device(dev_id)
        return cls._wrap(dev, native(dev._h.WrapStream)(handle), owner)

    # --- properties -----------------------------------------------------

    @native
    def _handle(self) -> int:
        # A ClosedError once this stream, or the object it is borrowed from
        # (an endpoint, a coordinator), was closed: never a destroyed handle.
        return self._h.Handle()

    @property
    def handle(self) -> int:
        """The native handle (a CUstream pointer on CUDA) as an int."""
        return self._handle()

    @property
    def ptr(self) -> int:
        """Alias of :attr:`handle` (CuPy's name)."""
        return self._handle()

    @property
    def cuda_stream(self) -> int:
        """Alias of :attr:`handle` (PyTorch's name)."""
        return self._handle()

    @property
    def priority(self) -> int:
        """The priority in effect (after clamping)."""
        return self._h.Priority()

    @property
    def owned(self) -> bool:
        """False for streams adopted with :meth:`from_external`."""
        return self._h.Owned()

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol: ``(0, handle)``."""
        return (0, self._handle())

    # --- work ---------------------------------------------------------------
    # record_event, wait_event, synchronize, query, is_complete and done come
    # from the base (see _PyStreamBase for their documentation).

    _record_event_slow = _PyStreamBase.record_event
    _wait_event_slow = _PyStreamBase.wait_event
    _synchronize_slow = _PyStreamBase.synchronize
    _is_complete_slow = _PyStreamBase.is_complete.fget

    #: Alias of :meth:`record_event` (CuPy's name); the same method object,
    #: so the alias costs no extra call on this per-call path.
    record = _StreamBase.record_event

    def wait_stream(self, other: "Stream", event: Optional["Event"] = None) -> None:
        """Make later work on this stream wait for all work queued so far on ``other``."""
        if not isinstance(other, Stream):
            other = Stream.from_external(other, self.device)
        self.wait_event(other.record_event(event))

    # --- lifetime and context management ---------------------------------

    @native
    def close(self) -> None:
        """Release the stream (foreign streams are only forgotten, not destroyed)."""
        if self._closed:
            raise ClosedError("stream already closed")
        self._closed = True
        self._cupy_stream = None
        self._id = 0
        if self._fin is not None:
            self._fin.detach()
        self._h.Close()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def cupy(self):
        """A CuPy stream over this stream's handle (cached); None without CuPy or on CPU.

        CuPy >= 14 adopts it through ``__cuda_stream__``
        (``cupy.cuda.Stream.from_external``); older CuPy gets a
        ``cupy.cuda.ExternalStream``. Either way no new stream is created.
        """
        if self._cupy_stream is None and self.device.is_cuda:
            cp = _cupy()
            if cp is not None:
                from_external = getattr(cp.cuda.Stream, "from_external", None)
                with cp.cuda.Device(self.device.ordinal):
                    self._cupy_stream = (from_external(self) if from_external is not None
                                         else cp.cuda.ExternalStream(self.handle, self.device.ordinal))
        return self._cupy_stream

    def __enter__(self):
        """Make this the current stream of vortexgo and, with CuPy, of CuPy too.

        Returns the CuPy stream over this stream (see :meth:`cupy`) when CuPy is
        installed (so ``stream.record()`` and CuPy calls inside the block run on
        it), else this stream.
        """
        _stack().append(self)
        cs = self.cupy()
        if cs is not None:
            cs.__enter__()
            return cs
        return self

    def __exit__(self, *exc) -> None:
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()
        cs = self._cupy_stream
        if cs is not None:
            cs.__exit__(*exc)

    def __reduce_ex__(self, protocol: int):
        # One owner per native stream: a copy would be a second wrapper able
        # to close the stream under the first (and a pickled handle means
        # nothing in another process).
        raise TypeError("a vortexgo.Stream cannot be copied or pickled: share the object, "
                        "or wrap its handle with Stream.from_external")

    def __eq__(self, other: object) -> bool:
        # Two live wrappers of one native stream are equal; a closed stream
        # equals only itself (its handle is gone: no ClosedError from ==).
        if self is other:
            return True
        if not isinstance(other, Stream) or self.device != other.device:
            return False
        try:
            return self.handle == other.handle
        except ClosedError:
            return False

    def __hash__(self) -> int:
        # Computed once, so a stream closed while in a set or dict keys the
        # same; equal live wrappers hash alike since their handles agree.
        if self._hash is None:
            try:
                self._hash = hash((self.device, self.handle))
            except ClosedError:
                self._hash = object.__hash__(self)
        return self._hash

    def __repr__(self) -> str:
        # repr never raises: a stream whose owner (an endpoint) closed it prints as closed.
        try:
            if self._closed:
                return f"<Stream {self.device.alias} closed>"
            own = "" if self.owned else ", external"
            return f"<Stream {self.device.alias} handle={hex(self.handle)} priority={self.priority}{own}>"
        except Exception:
            return "<Stream closed>"


class Event(_EventBase):
    """A marker in a stream: query it, wait for it on the host or on another
    stream, or time the work between two events.

    Args:
        device: the device (default: the default device).
        enable_timing: record timestamps so :meth:`elapsed_time` works.
    """

    __slots__ = ("_h", "_fin", "device", "enable_timing", "_closed", "__weakref__")

    def __init__(self, device: DeviceLike = None, enable_timing: bool = False) -> None:
        self._h = None
        self._id = 0
        self._closed = True  # until the native event exists
        self.device: Device = get_device(device)
        self.enable_timing = check_bool("enable_timing", enable_timing)
        self._h = native(self.device._h.NewEvent)(self.enable_timing)
        self._id = self._h.ID()
        self._fin = release_on_collect(self, self._h.Close, "an event")
        self._closed = False

    @property
    def handle(self) -> int:
        """The native handle (CUevent) as an int."""
        return native(self._h.Handle)()

    # record, synchronize, query, is_complete and done come from the base
    # (see _PyEventBase for their documentation).

    _record_slow = _PyEventBase.record
    _synchronize_slow = _PyEventBase.synchronize
    _is_complete_slow = _PyEventBase.is_complete.fget

    @native
    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds between this event and ``end`` (both timing events, both complete)."""
        if not isinstance(end, Event):
            raise TypeError(f"end={end!r}, expected a vortexgo.Event")
        if not (self.enable_timing and end.enable_timing):
            raise ValueError("elapsed_time needs two events created with enable_timing=True")
        return self._h.ElapsedTime(end._h)

    @native
    def close(self) -> None:
        """Release the event."""
        if self._closed:
            raise ClosedError("event already closed")
        self._closed = True
        self._id = 0
        self._fin.detach()
        self._h.Close()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def __reduce_ex__(self, protocol: int):
        # One owner per native event (see Stream.__reduce_ex__).
        raise TypeError("a vortexgo.Event cannot be copied or pickled: share the object")

    def __repr__(self) -> str:
        if self._closed:
            return f"<Event {self.device.alias} closed>"
        timing = " timing" if self.enable_timing else ""
        return f"<Event {self.device.alias} handle={hex(self.handle)}{timing}>"


# --- current and default streams ---------------------------------------------

_local = threading.local()
_defaults: dict[Device, Stream] = {}
_defaults_lock = threading.Lock()


def _close_defaults() -> None:
    with _defaults_lock:
        streams = list(_defaults.values())
        _defaults.clear()
    for s in streams:
        s.close()


process_cache(_close_defaults)


def _stack() -> list:
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def default_stream(device: DeviceLike = None) -> Stream:
    """vortexgo's per-device default stream (non-blocking, created on first use)."""
    dev = get_device(device)
    s = _defaults.get(dev)
    if s is None:
        with _defaults_lock:
            s = _defaults.get(dev)
            if s is None:
                s = _defaults[dev] = Stream(dev)
    return s


def current_stream(device: DeviceLike = None) -> Stream:
    """The innermost ``with stream:`` of this thread on ``device``, else the default stream."""
    dev = get_device(device)
    for s in reversed(_stack()):
        if s.device == dev:
            return s
    return default_stream(dev)


def synchronize(device: DeviceLike = None) -> None:
    """Block until all work on the device (default: the default device) is done."""
    get_device(device).synchronize()


def synchronize_stream(stream: Stream) -> None:
    """Block until all work queued so far on ``stream`` is done."""
    if not isinstance(stream, Stream):
        stream = Stream.from_external(stream)
    stream.synchronize()


def synchronize_event(event: Event) -> None:
    """Block until ``event`` completes."""
    if not isinstance(event, Event):
        raise TypeError(f"event={event!r}, expected a vortexgo.Event")
    event.synchronize()
