"""Borrowers keep what they use alive: the Python half of memory.Shared.

A NumPy view, a DLPack capsule or a view of a view must hold a reference
that keeps its memory alive however the owner is closed, the way CuPy's
pointer = (owner, offset) does. Here that reference is a :class:`Keep`: a
small object that owns one Go borrow (``release``) and gives it back when it
is collected. Every export points its base at a ``Keep``; the owner's
``free()``/``close()`` only drops the owner's own reference (Go frees the
memory with the last one), so nothing is ever freed under a user.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ._errors import release_on_collect

__all__ = ["Keep", "host_view", "process_cache", "close_process_caches"]

#: Closers of what vortexgo keeps for the whole process (per-device default
#: streams, the default readback pools): nothing else owns those objects.
_process_caches: list[Callable[[], None]] = []


def process_cache(close: Callable[[], None]) -> None:
    """Register ``close``, which closes one of vortexgo's process-lifetime
    caches (and leaves it empty, to be refilled on next use)."""
    _process_caches.append(close)


def close_process_caches() -> None:
    """Close every process-lifetime cache, newest first. The process does
    not need it (its exit releases everything); a leak check does: after
    this, whatever Go still holds open was leaked
    (``make py-test-invariants``)."""
    for close in reversed(_process_caches):
        close()


class Keep:
    """One borrower's reference to memory. ``release`` (a bound Go method,
    e.g. a pyapi lease's ``Release``) runs exactly once: on :meth:`release`
    or when the last Python reference to this object goes.

    ``parent`` is kept alive too, for chains (a view of a view)."""

    __slots__ = ("_fin", "ptr", "nbytes", "parent", "__weakref__")

    def __init__(self, release: Optional[Callable[[], object]], ptr: int, nbytes: int,
                 parent: Any = None, what: str = "borrowed memory") -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.parent = parent
        self._fin = release_on_collect(self, release, what) if release is not None else None

    def release(self) -> None:
        """Give the reference back now (idempotent)."""
        if self._fin is not None:
            self._fin()

    @property
    def alive(self) -> bool:
        return self._fin is None or self._fin.alive


class _HostExport:
    """An ``__array_interface__`` exporter whose only job is to be the NumPy
    view's ``base``, so the view keeps ``keep`` (and so the memory) alive."""

    __slots__ = ("__array_interface__", "keep")

    def __init__(self, ptr: int, shape: Sequence[int], dtype: np.dtype, keep: Any, readonly: bool) -> None:
        self.keep = keep
        self.__array_interface__ = {
            "shape": tuple(shape),
            "typestr": dtype.str,
            "data": (ptr, readonly),
            "version": 3,
            "strides": None,
        }


def host_view(ptr: int, shape: Sequence[int], dtype: Any, keep: Any, readonly: bool = False) -> np.ndarray:
    """A zero-copy NumPy array over host-accessible memory at ``ptr`` whose
    base chain holds ``keep`` for as long as the array (or any view of it)
    lives. An empty shape or a zero size needs no pointer."""
    dt = np.dtype(dtype)
    if ptr == 0:
        arr = np.empty(tuple(shape), dtype=dt)
        if arr.size:
            raise ValueError("host_view: null pointer for a non-empty array")
        return arr
    return np.asarray(_HostExport(ptr, shape, dt, keep, readonly))


