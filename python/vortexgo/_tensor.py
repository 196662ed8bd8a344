"""Locked tensors: device (or pinned) buffers guarded by a readers-writer
lock, as vortex's endpoints hold them (``with endpoint.tensor as volume``)."""

from __future__ import annotations

import json
import math
import threading
from typing import Any, Iterable, Optional, Union

import numpy as np

from ._array import _norm_dtype, _norm_shape
from ._device import DeviceLike, get_device
from ._errors import ClosedError, native, release_on_collect
from ._attrs import NoCopy, StrictAttributes
from ._core import api
from ._lifetime import Keep, host_view
from ._stream import Stream, _cupy, current_stream
from ._validate import check_bool, check_timeout

__all__ = ["DeviceTensor", "TensorView"]


def _owner() -> int:
    # The Go lock tracks holders by token so that it can tell "this thread
    # already holds me" (resize would deadlock) from "another thread does"
    # (wait). Python thread idents are pointer-sized: mask to int64.
    return threading.get_ident() & 0x7FFF_FFFF_FFFF_FFFF


class TensorView:
    """The object a locked tensor in CUDA device memory lends out (wrapped by
    CuPy when it is installed): it speaks ``__cuda_array_interface__`` with
    ``stream: None`` (work is to be chained on the tensor's stream; see
    :class:`DeviceTensor`), so any library can wrap it. It holds a borrow of
    the tensor's memory (``keep``): consumers keep this object, and with it
    the memory, alive after the tensor is resized or closed."""

    __slots__ = ("ptr", "shape", "dtype", "device", "keep", "__weakref__")

    def __init__(self, ptr: int, shape: tuple, dtype: np.dtype, device, keep: Any = None) -> None:
        self.ptr, self.shape, self.dtype, self.device, self.keep = ptr, shape, dtype, device, keep

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # Device memory: NumPy would silently wrap this object in a 0-d object array.
        raise TypeError(f"np.asarray(TensorView) of {self.device.alias} memory: wrap it with a GPU library "
                        "(cupy.asarray(view), torch.as_tensor(view, device='cuda')), or copy it to the host")

    def __repr__(self) -> str:
        return f"<TensorView {self.shape} {self.dtype.name} on {self.device.alias}>"


class DeviceTensor(NoCopy, StrictAttributes):
    """A resizable n-d buffer with a lock.

    ``with tensor as view:`` takes the exclusive lock (other Python threads
    keep running while this one waits) and yields a zero-copy view: a CuPy
    array when CuPy is installed and the tensor is in CUDA device memory, a
    NumPy array when the memory is host-accessible (CPU backend, pinned).
    Issue GPU work on the view on ``tensor.stream`` (``with tensor.stream:``):
    writers record the tensor's ready event there, and the view reports
    ``stream: None`` in its CUDA array interface so wrapping it never makes
    the host wait.

    Resizing while the same thread holds the lock raises
    :class:`vortexgo.LockError` (it would deadlock); other threads wait.

    Views borrow the memory they show: a view kept after the lock is
    released, after :meth:`resize` (it keeps showing the old buffer) or
    after :meth:`close` stays valid, and the memory goes back when the last
    view is collected. :meth:`view` after :meth:`close` raises ClosedError.
    """

    def __init__(self, shape: Union[int, Iterable[int]], dtype: Any = "float32", device: DeviceLike = None, *,
                 pinned: bool = False, stream: Optional[Stream] = None) -> None:
        self._h = None
        self._closed = True  # until the native tensor exists
        shape = _norm_shape(shape)
        dt = _norm_dtype(dtype)
        self.device = get_device(device)
        self.pinned = check_bool("pinned", pinned)
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
        self.stream: Stream = stream if stream is not None else Stream(self.device)
        self._h = native(api.NewTensor)(self.device._h, ",".join(map(str, shape)), dt.name, self.pinned)
        self._fin = release_on_collect(self, self._h.Close, "a tensor")
        self._held = threading.local()
        self._closed = False

    @classmethod
    def _wrap(cls, handle, device, stream: Stream, pinned: bool) -> "DeviceTensor":
        t = cls.__new__(cls)
        t._h, t.device, t.stream, t.pinned = handle, device, stream, pinned
        t._fin = None  # the owner (an endpoint) releases the memory
        t._held = threading.local()
        t._closed = False
        return t

    # --- metadata ----------------------------------------------------------

    def _info(self) -> dict:
        # shape, dtype, nbytes and closed read together (memory.TensorInfo),
        # so they agree while another thread resizes.
        return json.loads(self._h.Info())

    @property
    def shape(self) -> tuple[int, ...]:
        """The current shape."""
        return tuple(self._info()["shape"])

    @property
    def dtype(self) -> np.dtype:
        """The current dtype."""
        return np.dtype(self._info()["dtype"])

    @property
    def nbytes(self) -> int:
        """The current size in bytes."""
        return self._info()["nbytes"]

    @property
    def ptr(self) -> int:
        """The current address (it may change on :meth:`resize`; hold the lock
        while using it). Raises ClosedError after :meth:`close`."""
        return native(self._h.Ptr)()

    # --- locking ---------------------------------------------------------------

    def _stack(self) -> list:
        st = getattr(self._held, "modes", None)
        if st is None:
            st = self._held.modes = []
        return st

    @native
    def acquire(self, *, shared: bool = False, timeout: Optional[float] = None) -> None:
        """Take the lock (exclusive unless ``shared``); ``timeout`` in seconds, None waits forever.

        Raises TimeoutError if the lock is not obtained in time.
        """
        if self._closed:
            raise ClosedError("tensor is closed")
        timeout = check_timeout("timeout", timeout)
        ms = -1 if timeout is None else int(math.ceil(timeout * 1000))
        self._h.Lock(_owner(), not shared, ms)
        self._stack().append(shared)

    @native
    def release(self) -> None:
        """Release the lock this thread took last."""
        st = self._stack()
        if not st:
            raise RuntimeError("release() without a matching acquire() in this thread")
        shared = st.pop()
        self._h.Unlock(_owner(), not shared)

    @native
    def view(self) -> Any:
        """A zero-copy view of the current contents (take the lock first to
        see them consistently). The view borrows the memory: it stays valid
        after the lock is released, after :meth:`resize` (showing the old
        buffer) and after :meth:`close`. Raises ClosedError after :meth:`close`."""
        lease = self._h.View()
        info = json.loads(lease.Info())  # the view's own shape and dtype, taken with the borrow
        shape, dt, ptr = tuple(info["shape"]), np.dtype(info["dtype"]), lease.Ptr()
        keep = Keep(lease.Release, ptr, info["nbytes"], what="a tensor view")
        if self.pinned or self.device.is_cpu:
            return host_view(ptr, shape, dt, keep)
        tv = TensorView(ptr, shape, dt, self.device, keep)
        cp = _cupy()
        if cp is not None:
            with cp.cuda.Device(self.device.ordinal):
                return cp.asarray(tv)
        return tv

    def locked(self, *, shared: bool = False, timeout: Optional[float] = None) -> "_Locked":
        """Context manager: ``with tensor.locked(shared=True, timeout=1.0) as view:``."""
        return _Locked(self, shared, timeout)

    def __enter__(self) -> Any:
        self.acquire()
        try:
            return self.view()
        except BaseException:
            self.release()
            raise

    def __exit__(self, *exc) -> None:
        self.release()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # NumPy would otherwise wrap the tensor object itself in a 0-d object
        # array, silently: its data is only valid under the lock.
        raise TypeError(f"np.asarray({type(self).__name__}) outside its lock: read the data inside "
                        "`with tensor as view:` (np.asarray(view), or view.copy() to keep it past the block)")

    # --- changes ------------------------------------------------------------------

    @native
    def resize(self, shape: Union[int, Iterable[int]], dtype: Any = None) -> None:
        """Change shape (and dtype); reallocates only when the byte size grows.

        Waits for other threads' locks; raises LockError if this thread holds the lock.
        """
        shape = _norm_shape(shape)
        dt = self.dtype if dtype is None else _norm_dtype(dtype)
        if self._closed:
            raise ClosedError("tensor is closed")
        if self._stack():
            from ._errors import LockError

            raise LockError("resize() while this thread holds the tensor's lock would deadlock; "
                            "leave the `with tensor` block first")
        self._h.Resize(_owner(), ",".join(map(str, shape)), dt.name)

    @native
    def mark_ready(self, stream: Optional[Stream] = None) -> None:
        """Record the tensor's ready event on ``stream`` (default: the tensor's stream) after writing."""
        s = stream or self.stream
        if not isinstance(s, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
        self._h.SetReady(s._h)

    @native
    def wait_ready(self, stream: Optional[Stream] = None) -> None:
        """Make ``stream`` (default: current) wait for the last write marked ready; no host wait."""
        s = stream or current_stream(self.device)
        if not isinstance(s, Stream):
            raise TypeError(f"stream={stream!r}, expected a vortexgo.Stream or None")
        self._h.WaitReady(s._h)

    @native
    def close(self) -> None:
        """Release the tensor's memory: now if no view borrows it, else when
        the last view is collected. Later locks and views raise ClosedError."""
        if not self._closed:
            self._closed = True
            if self._fin is not None:
                self._fin.detach()
            self._h.Close()

    def __repr__(self) -> str:
        info = None if self._closed else self._info()
        if info is None or info["closed"]:
            return "<DeviceTensor closed>"
        where = f"{self.device.alias}{', pinned' if self.pinned else ''}"
        return f"<DeviceTensor {tuple(info['shape'])} {info['dtype']} on {where}>"


class _Locked:
    __slots__ = ("t", "shared", "timeout")

    def __init__(self, t: DeviceTensor, shared: bool, timeout: Optional[float]) -> None:
        self.t, self.shared, self.timeout = t, shared, timeout

    def __enter__(self) -> Any:
        self.t.acquire(shared=self.shared, timeout=self.timeout)
        try:
            return self.t.view()
        except BaseException:
            self.t.release()
            raise

    def __exit__(self, *exc) -> None:
        self.t.release()
