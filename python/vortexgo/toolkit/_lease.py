"""Views of toolkit-owned memory that keep it alive (DESIGN.md section 7).

A triple-buffer slot, a pool buffer or a readback result is memory a
toolkit object owns in Go (memory.Shared). Every view handed to the user
holds a Go lease on it; closing the owner only drops the owner's own
reference, and Go frees the memory with the last lease, so no view ever
reads freed memory. Closing marks the vortexgo Array views closed (using
them raises ClosedError) while NumPy views taken earlier stay valid.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .._array import Array
from .._errors import ClosedError
from .._lifetime import Keep, host_view

__all__ = ["owned_view", "view_root", "invalidate", "PoolArray"]


class _Lent:
    """The ``_buf`` of a root Array over leased memory: the Array's
    collection (or nothing else) releases the lease, so the memory lives as
    long as the Array or any view of it; ``free()`` on the user's Array is
    refused (it is a view of this root)."""

    __slots__ = ("lease",)

    def __init__(self, lease: Any) -> None:
        self.lease = lease

    def Free(self) -> None:  # noqa: N802 - the gopy Buffer method name
        self.lease.Release()


def owned_view(lease: Any, shape: tuple[int, ...], dtype: np.dtype, device, pinned: bool = False,
               cls: type = Array) -> Array:
    """An Array over leased memory (``lease.Ptr()``), holding the lease."""
    ptr = lease.Ptr() if lease is not None else 0
    root = Array._new(_Lent(lease) if lease is not None else _Lent(_NoLease()), ptr, shape, dtype, device, pinned,
                      None)
    return cls._new(root._buf, ptr, shape, dtype, device, pinned, None, base=root)


class _NoLease:
    def Release(self) -> None:  # noqa: N802
        pass


def view_root(view: Array) -> Array:
    """The hidden root Array of an :func:`owned_view` (or ``view`` itself)."""
    return view._base if view._base is not None else view


def invalidate(view: Array) -> None:
    """Mark an :func:`owned_view` closed: later use of the Array raises
    ClosedError. Its lease goes back when the Array and its NumPy views
    are collected."""
    view_root(view)._buf = None


class PoolArray(Array):
    """A :class:`BufferPool` buffer. Each NumPy view (buffer protocol:
    ``np.asarray``, ``memoryview``) takes a lease of its own, so the pool
    hands the buffer out again, or frees it after ``close()``, only when
    the last view is gone; :meth:`BufferPool.put` may come first."""

    __slots__ = ("_lend",)

    def __buffer__(self, flags: int) -> memoryview:
        self._check()
        lend: Optional[Callable[[], Any]] = getattr(self, "_lend", None)
        if lend is None:
            raise ClosedError("pool buffer was returned")
        lease = lend()
        keep = Keep(lease.Release, self.ptr, self.nbytes, what="a pool buffer view")
        return memoryview(host_view(self.ptr, self.shape, self.dtype, keep))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # Reached only when the buffer protocol failed (a returned buffer):
        # raise its error rather than let NumPy wrap the object.
        a = np.asarray(memoryview(self))
        return a if dtype is None else a.astype(dtype, copy=bool(copy))

    @property
    def __array_interface__(self) -> dict:  # type: ignore[override]
        # NumPy takes the buffer protocol first; anything reading this
        # dict instead would hold no lease, so it is not offered.
        raise AttributeError("pool buffers export the buffer protocol (np.asarray(buf))")

    def __dlpack_device__(self) -> tuple[int, int]:  # type: ignore[override]
        return (1, 0)  # kDLCPU: the capsule below is NumPy's, over host memory

    def __dlpack__(self, **kw: Any) -> Any:  # type: ignore[override]
        # Route DLPack through a leased NumPy view (pinned host memory is
        # CPU-accessible), so the capsule keeps the buffer alive too.
        return np.asarray(self).__dlpack__(**kw)
