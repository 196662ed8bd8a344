"""BufferPool: pinned host buffers of one size, reused only after their last use completed."""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from .._array import Array
from .._core import api
from .._device import Device, DeviceLike, get_device
from .._errors import Closeable, ClosedError, release_on_collect
from .._stream import Event, Stream
from .._validate import check_int
from ._coordinator import timeout_us
from ._lease import PoolArray, invalidate, owned_view, view_root
from .._layouts import POOL_STATS
from ._records import tk_native

__all__ = ["BufferPool", "PoolStats"]


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

    NumPy views of a buffer (``np.asarray(buf)``) each hold the buffer: it
    is not handed out again, nor freed by :meth:`close`, until the last view
    is gone, so a view never sees another user's data or freed memory.

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
        self._closed = True
        self.buffer_size = check_int("buffer_size", buffer_size, 1)
        self.pool_size = check_int("pool_size", pool_size, 0)
        self.max_size = check_int("max_size", max_size, 0)
        if policy not in ("grow", "block"):
            raise ValueError(f"policy={policy!r}, expected 'grow' or 'block'")
        self.policy = policy
        self.device: Device = get_device(device)
        self._lock = threading.Lock()
        self._out: dict[int, tuple[Any, PoolArray]] = {}  # ptr -> (Go buffer, the Array handed out)
        self._handles: dict[int, Any] = {}  # ptr -> Go buffer handed out (no Array: see _put_back)
        self._events: dict[int, Event] = {}  # ptr -> event it was put back with (kept alive)
        # memory.PoolConfig as one record (Policy 0 grow, 1 block); counts over
        # memory.MaxPoolBuffers are a ValueError naming them, from Go.
        self._h = tk_native(api.NewBufferPool)(self.device._h, json.dumps({
            "Size": self.buffer_size, "Initial": self.pool_size, "Max": self.max_size, "Policy": int(policy == "block")}))
        self._fin = release_on_collect(self, self._h.Close, "a buffer pool")
        # Registered after _fin, so it runs first: buffers never put back go back
        # when the pool is collected (an Array handed out keeps the pool alive, so
        # none is left then), and the pool, or Close earlier, frees them.
        weakref.finalize(self, _put_back, self._h, self._handles).atexit = False
        self._closed = False

    @tk_native
    def get(self, timeout: Optional[float] = None) -> PoolArray:
        """A buffer as a pinned ``uint8`` Array of ``buffer_size`` elements.

        When none is free a ``"grow"`` pool allocates one (below ``max_size``);
        otherwise this waits up to ``timeout`` seconds (None: no limit, 0: not
        at all), with the GIL released, then raises ``TimeoutError``.
        """
        self._check()
        h = self._h.Get(timeout_us("timeout", timeout))
        arr = owned_view(_Unleased(h.Ptr()), (self.buffer_size,), np.dtype("uint8"), self.device, pinned=True,
                         cls=PoolArray)
        # Each export of the buffer leases it in Go (Lend refuses once the
        # buffer is put back, so a stale Array cannot lease a reused buffer).
        arr._lend = tk_native(lambda: self._h.Lend(h))
        with self._lock:
            self._out[arr.ptr] = (h, arr)
            self._handles[arr.ptr] = h
            self._events.pop(arr.ptr, None)
        return arr

    @tk_native
    def put(self, buf: Any, after: Union[Event, Stream, None] = None) -> None:
        """Give ``buf`` back; it is reused once ``after`` completes and every
        NumPy view of it is gone.

        ``after`` is an :class:`~vortexgo.Event` recorded after the buffer's last use (the
        pool keeps it alive; do not re-record it until the buffer is handed out
        again), a :class:`~vortexgo.Stream` whose work queued so far is the last use, or
        None when nothing uses the buffer any more. ``buf`` becomes unusable
        (using it raises ClosedError) so stale use fails instead of racing.
        """
        if not isinstance(buf, Array):
            raise TypeError(f"buf={type(buf).__name__}, expected an Array from this pool's get()")
        if after is not None and not isinstance(after, (Event, Stream)):
            raise TypeError(f"after={after!r}, expected an Event, a Stream or None")
        with self._lock:
            entry = self._out.get(buf.ptr)
            if entry is None or not isinstance(buf, PoolArray) or view_root(buf) is not view_root(entry[1]) or buf.freed:
                raise ValueError(f"buf at 0x{buf.ptr:x} is not in use from this pool, expected an Array from its get()")
            # Claimed under the lock: a second put of the same buffer from
            # another thread finds nothing.
            del self._out[buf.ptr]
            del self._handles[buf.ptr]
        try:
            self._h.Put(entry[0], after._id if isinstance(after, Event) else 0,
                        after._id if isinstance(after, Stream) else 0)
        except BaseException:
            with self._lock:
                self._out[buf.ptr] = entry
                self._handles[buf.ptr] = entry[0]
            raise
        with self._lock:
            if isinstance(after, Event):
                self._events[buf.ptr] = after
        entry[1]._lend = None
        invalidate(entry[1])

    def buffer(self, timeout: Optional[float] = None, *, stream: Optional[Stream] = None) -> "_Borrowed":
        """Context manager: ``with pool.buffer(stream=s) as buf:`` gets a buffer and
        puts it back on exit, after the work queued on ``stream`` by then."""
        return _Borrowed(self, timeout, stream)

    def stats(self) -> PoolStats:
        """Counts of the pool's buffers."""
        self._check()
        return PoolStats(*POOL_STATS.read(self._h.Stats))

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("buffer pool is closed")

    @tk_native
    def close(self) -> None:
        """Free the pool's buffers (after the events they were returned with);
        buffers still out are freed when put back, and buffers with NumPy
        views when the last view goes."""
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


def _put_back(pool: Any, handles: dict[int, Any]) -> None:
    """Put every buffer still out back into ``pool`` (a closed pool frees them)."""
    for h in list(handles.values()):
        try:
            pool.Put(h, 0, 0)
        except RuntimeError:  # pragma: no cover - the pool released it already
            pass
    handles.clear()


class _Unleased:
    """The pool keeps a buffer in use until it is put back; the Array itself
    needs no lease (its exports take their own)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def Ptr(self) -> int:  # noqa: N802
        return self.ptr

    def Release(self) -> None:  # noqa: N802
        pass


class _Borrowed:
    def __init__(self, pool: BufferPool, timeout: Optional[float], stream: Optional[Stream]) -> None:
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
        self.pool, self.timeout, self.stream, self.buf = pool, timeout, stream, None

    def __enter__(self) -> PoolArray:
        self.buf = self.pool.get(self.timeout)
        return self.buf

    def __exit__(self, *exc) -> None:
        if self.buf is not None and not self.pool.closed:
            self.pool.put(self.buf, self.stream)
