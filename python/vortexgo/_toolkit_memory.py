"""Memory side of the async toolkit: the memory budget, pinned buffer pools,
asynchronous readback and peer copies between GPUs."""

from __future__ import annotations

import math
import functools
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from ._array import Array, order_after
from ._core import api
from ._device import Device, DeviceLike, get_device
from ._errors import Closeable, ClosedError, release_on_collect
from ._stream import Event, Stream, current_stream
from ._toolkit_ops import check_int, invalidate, owned_view, timeout_us, tk_native, view_root

__all__ = [
    "PurposeUsage", "MemoryKindUsage", "MemoryUsage", "set_memory_budget", "memory_usage", "reset_memory_peak",
    "PoolStats", "BufferPool", "Readback", "ReadbackHandle", "ReadbackStats", "readback",
    "copy_peer", "peer_copy_unavailable_reason",
]


class BorrowedStream(Stream):
    """A stream owned by a toolkit object (a coordinator's or a readback pool's):
    usable like any :class:`vortexgo.Stream`, but closing it is its owner's job,
    so :meth:`close` refuses and collection never destroys it."""

    __slots__ = ()

    def close(self) -> None:
        """Refused: the owner (coordinator, context or readback pool) closes this stream."""
        raise ValueError("this stream belongs to a toolkit object; close that object instead")

    def __repr__(self) -> str:
        return f"<Stream {self.device.alias} handle={hex(self.handle)} borrowed from {type(self._owner).__name__}>"


def borrowed(device: Device, handle, owner: Any) -> BorrowedStream:
    s = BorrowedStream._wrap(device, handle, owner, release=False)
    return s  # type: ignore[return-value]


# --- memory budget --------------------------------------------------------------


@dataclass(frozen=True)
class PurposeUsage:
    """Live allocations under one purpose label."""

    bytes: int
    count: int


@dataclass(frozen=True)
class MemoryKindUsage:
    """Usage of one kind of memory (device or pinned), in bytes; ``limit`` 0 means unlimited."""

    current: int = 0
    peak: int = 0
    limit: int = 0
    active: int = 0
    by_purpose: dict[str, PurposeUsage] = field(default_factory=dict)

    @property
    def available(self) -> Optional[int]:
        """Bytes left under the limit, or None without a limit."""
        return None if self.limit == 0 else max(self.limit - self.current, 0)


@dataclass(frozen=True)
class MemoryUsage:
    """A snapshot of the process memory budget (:func:`memory_usage`)."""

    device: MemoryKindUsage
    pinned: MemoryKindUsage


def memory_usage() -> MemoryUsage:
    """Current, peak and limit of device and pinned memory, with live
    allocations by purpose ("array", "tensor", "triple_buffer", "pipeline",
    "readback", "buffer_pool", "managed_context", ...)."""
    # One structured record (memory.Usage.JSON in Go), parsed here only.
    rec = json.loads(api.MemoryUsage())
    out = {}
    for kind in ("device", "pinned"):
        k = rec[kind]
        by = {p: PurposeUsage(v["bytes"], v["count"]) for p, v in (k.get("by_purpose") or {}).items()}
        out[kind] = MemoryKindUsage(current=k["current"], peak=k["peak"], limit=k["limit"], active=k["active"],
                                    by_purpose=by)
    return MemoryUsage(**out)


@tk_native
def set_memory_budget(device_bytes: Optional[int] = None, pinned_bytes: Optional[int] = None) -> None:
    """Limit the bytes of device and pinned memory vortexgo allocates, process-wide.

    None leaves a limit as it is; 0 removes it. An allocation past a limit
    raises :class:`vortexgo.MemoryBudgetError` naming the request, the usage
    and the limit, and allocates nothing. Lowering a limit below the usage
    frees nothing; it refuses new allocations until usage falls.
    """
    u = memory_usage()
    dev = u.device.limit if device_bytes is None else check_int("device_bytes", device_bytes, 0)
    pin = u.pinned.limit if pinned_bytes is None else check_int("pinned_bytes", pinned_bytes, 0)
    api.SetMemoryBudget(dev, pin)


def reset_memory_peak() -> None:
    """Set the peaks to the current usage (to measure a new phase)."""
    api.ResetMemoryPeak()


# --- pinned buffer pool ------------------------------------------------------------


@dataclass(frozen=True)
class PoolStats:
    """Buffers of a :class:`BufferPool`: allocated, free now, returned but waiting
    for their event, and handed out."""

    allocated: int
    free: int
    pending: int
    in_use: int


class BufferPool(Closeable):
    """A pool of pinned host buffers of one size (forge3d's ``AsyncBufferPool``,
    made safe for asynchronous copies).

    A buffer is handed out by :meth:`get` as a pinned ``uint8``
    :class:`vortexgo.Array` and given back by :meth:`put` together with the
    event (or stream) after which its last use is complete; the pool hands it
    out again only once that event has completed, so a copy still in flight
    never lands in a reused buffer. Buffers are charged to the memory budget
    as ``"buffer_pool"``.

    Args:
        buffer_size: bytes per buffer.
        pool_size: buffers allocated up front.
        policy: ``"grow"`` allocates another buffer when none is free (up to
            ``max_size``, 0 = no cap); ``"block"`` makes :meth:`get` wait.
        max_size: cap for ``"grow"``.
        device: whose pinned memory (default: the default device).
    """

    def __init__(self, buffer_size: int, pool_size: int = 3, *, policy: str = "grow", max_size: int = 0,
                 device: DeviceLike = None) -> None:
        self._h = None
        self.buffer_size = check_int("buffer_size", buffer_size, 1)
        self.pool_size = check_int("pool_size", pool_size, 0)
        self.max_size = check_int("max_size", max_size, 0)
        if policy not in ("grow", "block"):
            raise ValueError(f"policy={policy!r}, expected 'grow' or 'block'")
        self.policy = policy
        self.device: Device = get_device(device)
        self._lock = threading.Lock()
        self._out: dict[int, tuple[Any, Array]] = {}  # ptr -> (Go buffer, the Array handed out)
        self._events: dict[int, Event] = {}  # ptr -> event it was put back with (kept alive)
        self._h = tk_native(api.NewBufferPool)(self.device._h, self.buffer_size, self.pool_size, self.max_size,
                                                policy == "block")
        self._fin = release_on_collect(self, self._h.Close, "a buffer pool")
        self._closed = False

    @tk_native
    def get(self, timeout: Optional[float] = None) -> Array:
        """A buffer as a pinned ``uint8`` Array of ``buffer_size`` elements.

        When none is free a ``"grow"`` pool allocates one (below ``max_size``);
        otherwise this waits up to ``timeout`` seconds (None: no limit, 0: not
        at all), with the GIL released, then raises ``TimeoutError``.
        """
        self._check()
        h = self._h.Get(timeout_us(timeout))
        ptr = h.Ptr()
        arr = owned_view(self, ptr, (self.buffer_size,), np.dtype("uint8"), self.device, pinned=True)
        with self._lock:
            self._out[ptr] = (h, arr)
            self._events.pop(ptr, None)
        return arr

    @tk_native
    def put(self, buf: Array, after: Union[Event, Stream, None] = None) -> None:
        """Give ``buf`` back; it is reused once ``after`` completes.

        ``after`` is an :class:`Event` recorded after the buffer's last use (the
        pool keeps it alive; do not re-record it until the buffer is handed out
        again), a :class:`Stream` whose work queued so far is the last use, or
        None when nothing uses the buffer any more. ``buf`` becomes unusable
        (using it raises ClosedError) so stale use fails instead of racing.
        """
        if not isinstance(buf, Array):
            raise TypeError(f"buf={type(buf).__name__}, expected an Array from this pool's get()")
        if after is not None and not isinstance(after, (Event, Stream)):
            raise TypeError(f"after={after!r}, expected an Event, a Stream or None")
        with self._lock:
            entry = self._out.get(buf.ptr)
            if entry is None or view_root(buf) is not view_root(entry[1]) or buf.freed:
                raise ValueError(f"buf at 0x{buf.ptr:x} is not in use from this pool, expected an Array from its get()")
            h = entry[0]
        if isinstance(after, Stream):
            self._h.PutStream(h, after._h)
        elif isinstance(after, Event):
            self._h.Put(h, after._h)
        else:
            self._h.PutNow(h)
        with self._lock:
            self._out.pop(buf.ptr, None)
            if isinstance(after, Event):
                self._events[buf.ptr] = after
        invalidate(entry[1])

    def buffer(self, timeout: Optional[float] = None, *, stream: Optional[Stream] = None) -> "_Borrowed":
        """Context manager: ``with pool.buffer(stream=s) as buf:`` gets a buffer and
        puts it back on exit, after the work queued on ``stream`` by then."""
        return _Borrowed(self, timeout, stream)

    def stats(self) -> PoolStats:
        """Counts of the pool's buffers."""
        self._check()
        return PoolStats(*map(int, self._h.Stats().split(",")))

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("buffer pool is closed")

    @tk_native
    def close(self) -> None:
        """Free the pool's buffers (after the events they were returned with);
        buffers still out are freed when put back."""
        self._check()
        self._closed = True
        self._fin.detach()
        self._h.Close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<BufferPool {self.device.alias} closed>"
        s = self.stats()
        return (f"<BufferPool {self.device.alias} {self.buffer_size} B x {s.allocated} policy={self.policy} "
                f"free={s.free} pending={s.pending} in_use={s.in_use}>")


class _Borrowed:
    def __init__(self, pool: BufferPool, timeout: Optional[float], stream: Optional[Stream]) -> None:
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
        self.pool, self.timeout, self.stream, self.buf = pool, timeout, stream, None

    def __enter__(self) -> Array:
        self.buf = self.pool.get(self.timeout)
        return self.buf

    def __exit__(self, *exc) -> None:
        if self.buf is not None and not self.pool.closed:
            self.pool.put(self.buf, self.stream)


# --- asynchronous readback -----------------------------------------------------------


@dataclass(frozen=True)
class ReadbackStats:
    """Buffers of a :class:`Readback`: allocated, free, held by unreleased handles,
    and released while their copy may still run."""

    total: int
    free: int
    held: int
    retiring: int


class _HostView:
    """Presents a readback's pinned bytes to NumPy and keeps its handle alive."""

    __slots__ = ("__array_interface__", "handle")

    def __init__(self, handle: "ReadbackHandle", ptr: int) -> None:
        self.handle = handle
        self.__array_interface__ = {"shape": handle.shape, "typestr": handle.dtype.str,
                                    "data": (ptr, False), "version": 3, "strides": None}


def _release_readback(h: Any, pool: "Readback") -> None:
    # The finalizer of a ReadbackHandle: it holds the handle and the pool,
    # never the ReadbackHandle itself.
    if not pool.closed:
        h.Release()


class ReadbackHandle:
    """A readback in flight or done (returned by :func:`readback` and
    :meth:`Readback.readback`).

    :attr:`done` checks without blocking, :meth:`wait` blocks (GIL released),
    :meth:`get` returns the data as a NumPy array viewing the pinned buffer (no
    copy). The handle, and every array :meth:`get` returned, keeps the buffer
    out of the pool until :meth:`release` (or collection of the handle and its
    arrays); after release the arrays must not be used.
    """

    __slots__ = ("_h", "_pool", "shape", "dtype", "nbytes", "_released", "_fin", "__weakref__")

    def __init__(self, h, pool: "Readback", shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._h, self._pool, self.shape, self.dtype = h, pool, shape, dtype
        self.nbytes = h.Len()
        self._released = False
        self._fin = release_on_collect(self, functools.partial(_release_readback, h, pool), "a readback")

    def _check(self) -> None:
        if self._released:
            raise ClosedError("readback handle already released")

    @property
    @tk_native
    def done(self) -> bool:
        """True once the copy has completed (does not block)."""
        self._check()
        return self._h.Done()

    @tk_native
    def wait(self, timeout: Optional[float] = None) -> None:
        """Block until the copy completes, at most ``timeout`` seconds (None: no
        limit), else raise ``TimeoutError``."""
        self._check()
        self._h.Wait(timeout_us(timeout))

    def get(self, timeout: Optional[float] = None) -> np.ndarray:
        """Wait for the copy, then return the data as a NumPy array backed by
        the pinned buffer (zero-copy; it keeps this handle alive)."""
        self.wait(timeout)
        return np.asarray(_HostView(self, self._h.Ptr()))

    @tk_native
    def stream_wait(self, stream: Stream) -> None:
        """Make ``stream`` wait, on the device, until the copy has read its source:
        call it on the producer stream before it overwrites the source."""
        self._check()
        if not isinstance(stream, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream")
        self._h.StreamWait(stream._h)

    @tk_native
    def release(self) -> None:
        """Return the buffer to the pool (it is reused only after the copy
        completes, so releasing early is safe). Arrays from :meth:`get` are then
        invalid."""
        self._check()
        self._released = True
        self._fin.detach()
        if not self._pool.closed:
            self._h.Release()

    @property
    def released(self) -> bool:
        """True after :meth:`release`."""
        return self._released

    def __enter__(self) -> "ReadbackHandle":
        return self

    def __exit__(self, *exc) -> None:
        if not self._released:
            self.release()

    def __repr__(self) -> str:
        if self._released:
            state = "released"
        else:
            try:
                state = "done" if self._h.Done() else "in flight"
            except Exception:
                state = "?"
        return f"<ReadbackHandle {self.shape} {self.dtype.name} {state}>"


class Readback(Closeable):
    """Asynchronous device-to-host copies into a pool of pinned buffers.

    :meth:`readback` returns at once; the copy runs on the pool's stream after
    the producer stream's work so far, so the producer goes on with frame N+1
    while frame N is read back (double-buffered with the default two
    buffers). When every buffer is busy, a released buffer whose copy still
    runs is waited for (back-pressure); the pool grows up to ``max_buffers``
    before that. Buffers are charged to the memory budget as ``"readback"``.

    Args:
        buffer_size: bytes per pinned buffer (the largest readback).
        device: the device read from (default: the default device).
        buffers: buffers allocated up front (2: double buffering).
        max_buffers: growth cap when every buffer is held (0: no growth).
        stream: run the copies on this stream (default: a stream of its own).
        priority: priority of its own stream.
    """

    def __init__(self, buffer_size: int, device: DeviceLike = None, *, buffers: int = 2, max_buffers: int = 0,
                 stream: Optional[Stream] = None, priority: int = 0) -> None:
        self._h = None
        self._closed = True
        self.device: Device = get_device(device)
        self.buffer_size = check_int("buffer_size", buffer_size, 1)
        buffers = check_int("buffers", buffers, 1)
        max_buffers = check_int("max_buffers", max_buffers, 0)
        if stream is not None:
            if not isinstance(stream, Stream):
                raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
            self._h = tk_native(api.NewReadbackOn)(self.device._h, self.buffer_size, buffers, max_buffers, stream._h)
            self._stream = stream
        else:
            self._h = tk_native(api.NewReadback)(self.device._h, self.buffer_size, buffers, max_buffers,
                                                 check_int("priority", priority))
            self._stream = borrowed(self.device, self._h.Stream(), self)
        self._fin = release_on_collect(self, self._h.Close, "a readback pool")
        self._closed = False

    @property
    def stream(self) -> Stream:
        """The stream the copies run on."""
        return self._stream

    @tk_native
    def readback(self, array: Any, *, stream: Optional[Stream] = None) -> ReadbackHandle:
        """Start copying ``array`` (a vortexgo Array, or anything with
        ``__cuda_array_interface__``) to pinned host memory and return at once.

        ``stream`` is the producer: the copy follows the work queued on it so
        far (default: the array's stream, else the current stream). The
        producer must not overwrite the array before the copy has read it:
        alternate two arrays, or call :meth:`ReadbackHandle.stream_wait`.
        """
        if self._closed:
            raise ClosedError("readback pool is closed")
        ptr, shape, dtype, producer = _source(array, self.device, stream)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > self.buffer_size:
            raise ValueError(f"array of {nbytes} bytes, expected at most buffer_size={self.buffer_size}")
        h = self._h.Start(ptr, nbytes, producer._h)
        return ReadbackHandle(h, self, shape, dtype)

    def stats(self) -> ReadbackStats:
        """Counts of the pool's buffers."""
        if self._closed:
            raise ClosedError("readback pool is closed")
        return ReadbackStats(*map(int, self._h.Stats().split(",")))

    @tk_native
    def close(self) -> None:
        """Wait for the copies, then free every buffer (unreleased handles become invalid)."""
        if self._closed:
            raise ClosedError("readback pool already closed")
        self._closed = True
        self._fin.detach()
        self._h.Close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<Readback {self.device.alias} closed>"
        s = self.stats()
        return f"<Readback {self.device.alias} {self.buffer_size} B x {s.total} free={s.free} held={s.held}>"


def _source(array: Any, device: Device, stream: Optional[Stream]) -> tuple[int, tuple[int, ...], np.dtype, Stream]:
    if stream is not None and not isinstance(stream, Stream):
        stream = Stream.from_external(stream, device)
    if isinstance(array, Array):
        array._check()
        if array.device != device:
            raise ValueError(f"array is on {array.device.alias}, expected {device.alias} (the pool's device)")
        producer = stream or array.stream or current_stream(device)
        return array.ptr, array.shape, array.dtype, producer
    cai = getattr(array, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        dtype = np.dtype(cai["typestr"])
        shape = tuple(int(d) for d in cai["shape"])
        strides = cai.get("strides")
        if strides is not None and tuple(strides) != tuple(
                math.prod(shape[i + 1:]) * dtype.itemsize for i in range(len(shape))):
            raise ValueError("array must be C-contiguous")
        producer = stream
        if producer is None:
            h = cai.get("stream")
            producer = Stream.from_external(h, device) if h not in (None, 0) else current_stream(device)
        return int(cai["data"][0]), shape, dtype, producer
    raise TypeError(f"array={type(array).__name__}, expected a vortexgo.Array or an object with __cuda_array_interface__")


_default_pools: dict[tuple[Device, int], Readback] = {}
_default_lock = threading.Lock()


def readback(device_array: Any, *, stream: Optional[Stream] = None) -> ReadbackHandle:
    """Start an asynchronous readback of ``device_array`` and return at once.

    Uses a shared double-buffered :class:`Readback` per device and size class
    (powers of two, at least 64 KiB; it grows to 16 buffers while handles are
    held). ``handle.get()`` returns a NumPy array viewing pinned memory;
    release the handle (or drop it) when done. For control over buffers and
    streams create a :class:`Readback`.
    """
    dev = device_array.device if isinstance(device_array, Array) else get_device(None)
    if not isinstance(dev, Device):
        dev = get_device(None)
    if isinstance(device_array, Array):
        n = device_array.nbytes
    else:
        cai = getattr(device_array, "__cuda_array_interface__", None)
        if not isinstance(cai, dict):
            raise TypeError(f"device_array={type(device_array).__name__}, expected a vortexgo.Array or an object "
                            "with __cuda_array_interface__")
        n = math.prod(cai["shape"]) * np.dtype(cai["typestr"]).itemsize
    size = max(1 << 16, 1 << max(n - 1, 0).bit_length())
    key = (dev, size)
    with _default_lock:
        pool = _default_pools.get(key)
        if pool is None or pool.closed:
            pool = _default_pools[key] = Readback(size, dev, buffers=2, max_buffers=16)
    return pool.readback(device_array, stream=stream)


# --- peer copies --------------------------------------------------------------------------


def peer_copy_unavailable_reason() -> str:
    """Why :func:`copy_peer` between two GPUs cannot run here ("" when it can)."""
    n = api.CUDADeviceCount()
    if n >= 2:
        return ""
    if n == 0:
        return f"peer copies need two CUDA devices; none found ({api.CUDAUnavailableReason() or 'no CUDA device'})"
    return "peer copies need two CUDA devices; only cuda:0 is present"


@tk_native
def copy_peer(dst: Array, src: Array, *, stream: Optional[Stream] = None) -> None:
    """Copy ``src`` on one GPU into ``dst`` on another, asynchronously.

    The copy runs on ``stream`` (default: the current stream of ``dst``'s
    device) after ``src``'s producer stream (an event wait, no host wait);
    ``dst`` records the stream as its producer. The driver uses a direct
    peer-to-peer transfer where the GPUs support it, else it stages the
    bytes through host memory. Both arrays must be CUDA device memory of the
    same size and dtype.
    """
    for name, a in (("dst", dst), ("src", src)):
        if not isinstance(a, Array):
            raise TypeError(f"{name}={type(a).__name__}, expected a vortexgo.Array")
        if not a.device.is_cuda or a.pinned:
            raise ValueError(f"{name} is {'pinned host' if a.pinned else 'CPU'} memory on {a.device.alias}, expected "
                             f"CUDA device memory ({peer_copy_unavailable_reason() or 'use vortexgo.copy for host copies'})")
        a._check()
    if dst.nbytes != src.nbytes or dst.dtype != src.dtype:
        raise ValueError(f"dst is {dst.nbytes} bytes of {dst.dtype.name}, src {src.nbytes} bytes of "
                         f"{src.dtype.name}: expected the same size and dtype")
    s = stream if stream is not None else current_stream(dst.device)
    if not isinstance(s, Stream):
        s = Stream.from_external(s, dst.device)
    order_after(s, src.stream)
    if dst.nbytes:
        s._h.Copy(dst.ptr, src.ptr, dst.nbytes)
    dst.stream = s
