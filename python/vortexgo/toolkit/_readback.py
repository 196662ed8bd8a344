"""Asynchronous readback: device-to-host copies into a pool of pinned buffers."""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._array import Array
from .._core import api
from .._device import Device, DeviceLike, get_device
from .._attrs import NoCopy
from .._errors import Closeable, ClosedError, release_on_collect
from .._lifetime import Keep, host_view, process_cache
from .._stream import Stream, current_stream
from .._validate import check_int
from ._coordinator import borrowed, timeout_us
from .._layouts import READBACK_STATS
from ._records import tk_native

__all__ = ["Readback", "ReadbackHandle", "ReadbackStats", "readback"]


@dataclass(frozen=True)
class ReadbackStats:
    """Buffers of a :class:`Readback`: allocated, free, held by unreleased handles
    (or their arrays), and released while their copy may still run."""

    total: int
    free: int
    held: int
    retiring: int


class ReadbackHandle(NoCopy):
    """A readback in flight or done (returned by :func:`readback` and
    :meth:`Readback.readback`).

    :attr:`done` checks without blocking, :meth:`wait` blocks (GIL released),
    :meth:`get` returns the data as a NumPy array viewing the pinned buffer (no
    copy). The handle and every array :meth:`get` returned share one
    reference to the buffer: it goes back to the pool only when the handle
    is released (or collected) and the last of those arrays is gone, so an
    array stays valid after :meth:`release` and after the pool is closed.
    """

    __slots__ = ("_h", "_keep", "_pool", "shape", "dtype", "nbytes", "__weakref__")

    def __init__(self, h, shape: tuple[int, ...], dtype: np.dtype, nbytes: int, pool: Any = None) -> None:
        self._h, self.shape, self.dtype = h, shape, dtype
        self._pool = pool  # the Readback it came from: its close ends the handle's use
        self.nbytes = nbytes
        # The one Go reference of this handle; arrays from get() hold it too.
        self._keep: Optional[Keep] = Keep(h.Close, h.Ptr(), self.nbytes, what="a readback")

    def _check(self) -> None:
        if self._keep is None:
            raise ClosedError("readback handle already released")
        pool = self._pool
        if pool is not None and pool._closed:
            # Arrays get() returned before the close stay valid (they hold the buffer).
            raise ClosedError("readback handle's Readback pool was closed: call get() before closing the pool")

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
        self._h.Wait(timeout_us("timeout", timeout))

    def get(self, timeout: Optional[float] = None) -> np.ndarray:
        """Wait for the copy, then return the data as a NumPy array backed by
        the pinned buffer (zero-copy; it keeps the buffer alive)."""
        self.wait(timeout)
        keep = self._keep
        if keep is None:  # released by another thread meanwhile
            raise ClosedError("readback handle already released")
        self._check()  # the pool closed by another thread meanwhile
        return host_view(keep.ptr, self.shape, self.dtype, keep)

    @tk_native
    def stream_wait(self, stream: Stream) -> None:
        """Make ``stream`` wait, on the device, until the copy has read its source:
        call it on the producer stream before it overwrites the source."""
        self._check()
        if not isinstance(stream, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream")
        self._h.StreamWait(stream._id)

    def release(self) -> None:
        """Give the handle's reference back: the buffer returns to the pool once
        the copy completed and no array from :meth:`get` is left (releasing
        early is safe, and so is releasing after the pool was closed). The
        handle is unusable afterwards."""
        if self._keep is None:
            raise ClosedError("readback handle already released")
        # Dropping the reference releases it in Go at once when no array
        # holds it (CPython frees on the last reference).
        self._keep = None

    @property
    def released(self) -> bool:
        """True after :meth:`release`."""
        return self._keep is None

    def __enter__(self) -> "ReadbackHandle":
        return self

    def __exit__(self, *exc) -> None:
        if self._keep is not None:
            self.release()

    def __repr__(self) -> str:
        if self._keep is None:
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

    :meth:`close` waits for the copies in flight, then drops the pool's
    buffers; a buffer still held by a handle or an array is freed when the
    last of them goes, so results stay readable.

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
        priority = check_int("priority", priority)
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
        options = json.dumps({"Buffers": buffers, "MaxBuffers": max_buffers, "Priority": priority})  # pipeline.ReadbackOptions
        self._h = tk_native(api.NewReadback)(self.device._h, self.buffer_size, options,
                                             stream._id if stream is not None else 0)
        self._stream = stream if stream is not None else borrowed(self.device, self._h.Stream(), self)
        self._fin = release_on_collect(self, self._h.Close, "a readback pool")
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("readback pool is closed")

    @property
    def stream(self) -> Stream:
        """The stream the copies run on."""
        self._check()
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
        self._check()
        ptr, shape, dtype, producer = _source(array, self.device, stream)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > self.buffer_size:
            raise ValueError(f"array of {nbytes} bytes, expected at most buffer_size={self.buffer_size}")
        return ReadbackHandle(self._h.Start(ptr, nbytes, producer._id), shape, dtype, nbytes, self)

    def stats(self) -> ReadbackStats:
        """Counts of the pool's buffers."""
        self._check()
        return ReadbackStats(*READBACK_STATS.read(self._h.Stats))

    @tk_native
    def close(self) -> None:
        """Wait for the copies, then drop every buffer: those still held by a
        handle or its arrays are freed when the last of them goes."""
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


def _close_default_pools() -> None:
    with _default_lock:
        pools = list(_default_pools.values())
        _default_pools.clear()
    for p in pools:
        p.close()


process_cache(_close_default_pools)


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
