"""TripleBuffer: three device buffers rotating through upload, process and download."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._array import Array, _norm_dtype
from .._core import api
from .._device import Device, DeviceLike, get_device
from .._errors import Closeable, ClosedError, release_on_collect
from .._validate import check_int
from ._lease import invalidate, owned_view
from .._layouts import TRIPLE_BUFFER
from ._records import tk_native

__all__ = ["TripleBuffer"]

_STATES = ("free", "uploading", "processing", "downloading")
# pipeline.BufferState of the state each stage claims its slot into.
_UPLOAD, _PROCESS, _DOWNLOAD = 1, 2, 3


class TripleBuffer(Closeable):
    """Three device buffers of ``size`` elements rotating through the upload,
    process and download stages (prism's ``GpuTripleBuffer``).

    In round r (r = number of :meth:`advance` calls) the upload stage owns slot
    r % 3, processing slot (r-1) % 3 and download slot (r-2) % 3. Each
    ``get_*_buffer`` call moves its stage's slot one state forward and returns
    it as an :class:`vortexgo.Array` view, or None when the slot is not in the
    state that stage expects (upload wants Free, process Uploading, download
    Processing). The states are host bookkeeping, changed atomically and safe
    from several threads; device ordering comes from events (see
    :meth:`ManagedGpuContext.triple_buffered_step`). Buffers are charged to the
    memory budget as ``"triple_buffer"``.

    Each slot view holds a reference to its memory: after :meth:`close` the
    Array views raise ClosedError, but NumPy (or DLPack) views taken before
    stay valid, and the memory is freed when the last of them goes.

    Args:
        device: the device (default: the default device).
        size: elements per buffer.
        dtype: element type (one of :data:`vortexgo.SUPPORTED_DTYPES`).
    """

    def __init__(self, device: DeviceLike, size: int, dtype: Any = "float32") -> None:
        self._h = None
        self._closed = True
        dev = get_device(device)
        size = check_int("size", size, 1)
        dt = _norm_dtype(dtype)
        self._init(tk_native(api.NewTripleBuffer)(dev._h, size, dt.name), dev, None, size, dt)

    @classmethod
    def _wrap(cls, h, device: Device, owner: Any, size: int, dtype: np.dtype) -> "TripleBuffer":
        tb = cls.__new__(cls)
        tb._init(h, device, owner, size, dtype)
        return tb

    def _init(self, h, device: Device, owner: Any, size: int, dtype: np.dtype) -> None:
        self._h = h
        self._owner = owner
        self.device: Device = device
        self.size: int = size
        self.dtype: np.dtype = dtype
        self.nbytes: int = self.size * self.dtype.itemsize
        self._views = [owned_view(h.Borrow(i), (self.size,), self.dtype, device) for i in range(3)]
        # A context's triple buffers are released by the context.
        self._fin = release_on_collect(self, h.Close, "a triple buffer") if owner is None else None
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("triple buffer is closed")

    def _view(self, views: list, slot: int) -> Array:
        # close() may run on another thread between our check and here: it sets
        # _closed before it empties _views, so the list read before the check
        # is either the full one or the thread sees _closed.
        if self._closed or len(views) <= slot:
            raise ClosedError("triple buffer is closed")
        return views[slot]

    def _claim(self, stage: int) -> Optional[Array]:
        views = self._views
        self._check()
        slot = self._h.Claim(stage)
        return None if slot < 0 else self._view(views, slot)

    def get_upload_buffer(self) -> Optional[Array]:
        """Claim this round's upload slot (Free -> Uploading); None if it is not Free."""
        return self._claim(_UPLOAD)

    def get_process_buffer(self) -> Optional[Array]:
        """Claim this round's process slot (Uploading -> Processing); None if it is not Uploading."""
        return self._claim(_PROCESS)

    def get_download_buffer(self) -> Optional[Array]:
        """Claim this round's download slot (Processing -> Downloading); None if it is not Processing."""
        return self._claim(_DOWNLOAD)

    def advance(self) -> int:
        """End the round: the download slot, if Downloading, becomes Free; returns the new round."""
        self._check()
        return self._h.Advance()

    @property
    def round(self) -> int:
        """The number of :meth:`advance` calls so far."""
        self._check()
        return TRIPLE_BUFFER.read(self._h.Info).round

    def states(self) -> tuple[str, str, str]:
        """The states of slots 0, 1 and 2 ("free", "uploading", "processing", "downloading"), read atomically."""
        self._check()
        a, b, c = (_STATES[v] for v in TRIPLE_BUFFER.read(self._h.Info)[:3])
        return (a, b, c)

    def slot(self, i: int) -> Array:
        """Slot ``i``'s buffer regardless of its state."""
        views = self._views
        self._check()
        return self._view(views, check_int("slot", i, 0, 2))

    def reset(self) -> None:
        """Every slot back to Free and round 0 (no stage may still use a buffer)."""
        self._check()
        self._h.Reset()

    @tk_native
    def close(self) -> None:
        """Drop the buffers: each is freed now, or when the last NumPy/DLPack
        view of it goes (a context's triple buffers are closed by the context)."""
        self._check()
        if self._owner is not None:
            raise ValueError("this TripleBuffer belongs to a ManagedGpuContext, which closes it")
        self._mark_closed()
        self._fin.detach()
        self._h.Close()

    def _mark_closed(self) -> None:
        self._closed = True
        for v in self._views:
            invalidate(v)
        # The views' leases go back when the user's references do.
        self._views = []

    def __repr__(self) -> str:
        if self._closed:
            return f"<TripleBuffer {self.device.alias} closed>"
        return (f"<TripleBuffer {self.device.alias} 3 x {self.size} {self.dtype.name} round={self.round} "
                f"states={'/'.join(self.states())}>")
