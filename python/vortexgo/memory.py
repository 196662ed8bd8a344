"""Tensors by vortex's names (``vortex.memory``), on top of :class:`vortexgo.DeviceTensor`.

- ``CpuTensor{Int8,UInt16,UInt64,Float32,Float64}``: host memory (the CPU backend);
- ``CudaHostTensor*``: pinned host memory of a CUDA device;
- ``CudaDeviceTensor*``: CUDA device memory.

Each starts empty and invalid, as vortex's; :meth:`~_Tensor.resize` gives it
memory, :meth:`~_Tensor.clear` frees it, and ``with tensor as view:`` takes
the tensor's lock shared (vortex's) and yields a zero-copy view: a NumPy
array for host memory, a CuPy array (or a ``__cuda_array_interface__``
object without CuPy) for device memory. Views borrow the memory they show:
one kept after the ``with`` block, a resize or a clear stays valid, and the
memory goes back with the last view (vortexgo's ownership rule; vortex's
views dangle there). :attr:`~_Tensor.tensor` is the underlying
:class:`~vortexgo.DeviceTensor`, with its stream and ready event.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Iterable, Optional

import numpy as np

from ._attrs import NoCopy, StrictAttributes
from ._device import Device, DeviceLike, get_device
from ._errors import ClosedError, LockError
from ._tensor import DeviceTensor

__all__ = [
    "CpuTensorInt8", "CpuTensorUInt16", "CpuTensorUInt64", "CpuTensorFloat32", "CpuTensorFloat64",
    "CudaHostTensorInt8", "CudaHostTensorUInt16", "CudaHostTensorUInt64", "CudaHostTensorFloat32", "CudaHostTensorFloat64",
    "CudaDeviceTensorInt8", "CudaDeviceTensorUInt16", "CudaDeviceTensorUInt64", "CudaDeviceTensorFloat32", "CudaDeviceTensorFloat64",
]


class _Tensor(NoCopy, StrictAttributes):
    """The methods every tensor of this module has (vortex's base tensor)."""

    _kind = ""  # "CpuTensor", "CudaHostTensor" or "CudaDeviceTensor"
    _dtype = np.dtype(np.float32)
    # DeviceTensor has no 64-bit integers: UInt64 tensors keep float64
    # storage (same size and alignment) and their views are reinterpreted.
    _storage = np.dtype(np.float32)

    def __init__(self, device: DeviceLike = None) -> None:
        if self._kind == "CpuTensor":
            dev = get_device("cpu" if device is None else device)
            if not dev.is_cpu:
                raise ValueError(f"device={device!r}, expected the cpu device for a CpuTensor "
                                 "(CudaHostTensor and CudaDeviceTensor are the CUDA ones)")
        else:
            dev = get_device("cuda" if device is None else device)
            if not dev.is_cuda:
                raise ValueError(f"device={device!r}, expected a CUDA device for a {self._kind} "
                                 "(CpuTensor is the host one)")
        self._device: Device = dev
        self._t: Optional[DeviceTensor] = None  # no memory until resize
        self._capacity = 0  # bytes: DeviceTensor reallocates only when growing
        self._mu = threading.Lock()  # orders resize/clear/shrink against each other
        self._held = threading.local()  # the tensors this thread entered, innermost last

    # --- vortex's read-only properties ------------------------------------

    def _info(self) -> dict:
        t = self._t
        if t is None:
            return {"shape": [], "nbytes": 0}
        info = t._info()
        return {"shape": [] if info["closed"] else info["shape"], "nbytes": 0 if info["closed"] else info["nbytes"]}

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self._dtype

    @property
    def valid(self) -> bool:
        """Whether the tensor holds memory (False until :meth:`resize`, after :meth:`clear`)."""
        return self._info()["nbytes"] > 0

    @property
    def shape(self) -> list[int]:
        """The shape ([] when empty)."""
        return list(self._info()["shape"])

    @property
    def dimension(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def count(self) -> int:
        """The number of elements (0 when empty)."""
        s = self.shape
        return math.prod(s) if s else 0

    @property
    def size_in_bytes(self) -> int:
        """``count * dtype.itemsize``."""
        return self.count * self._dtype.itemsize

    @property
    def underlying_size_in_bytes(self) -> int:
        """The bytes allocated, at least :attr:`size_in_bytes` (a smaller resize
        keeps the memory; :meth:`shrink` gives the excess back)."""
        return self._capacity if self._t is not None else 0

    @property
    def stride(self) -> list[int]:
        """C-order strides in elements."""
        s, out, acc = self.shape, [], 1
        for d in reversed(s):
            out.append(acc)
            acc *= d
        return list(reversed(out))

    @property
    def stride_in_bytes(self) -> list[int]:
        """C-order strides in bytes."""
        return [x * self._dtype.itemsize for x in self.stride]

    @property
    def data(self) -> Optional[int]:
        """The address of the memory (None when empty); it changes on a growing
        :meth:`resize`: hold the lock while using it."""
        return self._t.ptr if self.valid else None

    @property
    def tensor(self) -> Optional[DeviceTensor]:
        """The :class:`~vortexgo.DeviceTensor` holding the memory (None when empty)."""
        return self._t

    # --- changes --------------------------------------------------------------

    def _check_unheld(self, op: str) -> None:
        if getattr(self._held, "stack", None):
            raise LockError(f"{type(self).__name__}.{op}() while this thread is inside `with tensor` would "
                            "deadlock; leave the `with` block first")

    def resize(self, shape: Iterable[int]) -> None:
        """Give the tensor ``shape`` (a list of ints >= 0, vortex's form). The
        contents are not kept. Waits for other threads' locks; raises
        :class:`~vortexgo.LockError` inside this thread's ``with tensor``."""
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = [shape]
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"shape={shape!r}, expected a list of ints")
        shape = tuple(shape)
        self._check_unheld("resize")
        with self._mu:
            if self._t is None:
                self._t = DeviceTensor(shape, self._storage, self._device, pinned=self._kind == "CudaHostTensor")
            else:
                self._t.resize(shape)
            self._capacity = max(self._capacity, math.prod(shape) * self._dtype.itemsize)

    def shrink(self) -> None:
        """Give back the memory beyond :attr:`size_in_bytes`, keeping the contents."""
        self._check_unheld("shrink")
        with self._mu:
            old = self._t
            if old is None or self._capacity <= self.size_in_bytes:
                return
            shape = tuple(self.shape)
            new = DeviceTensor(shape, self._storage, self._device, pinned=self._kind == "CudaHostTensor")
            with old.locked(shared=True) as src, new.locked() as dst:
                if self._kind == "CudaDeviceTensor" and not hasattr(dst, "__setitem__"):
                    new.close()
                    return  # without CuPy there is no device copy here: keep the memory
                dst[...] = src
            self._t, self._capacity = new, new.nbytes
            old.close()  # views of the old memory keep it until collected

    def clear(self) -> None:
        """Free the memory: the tensor is empty and invalid again (views taken
        before keep theirs until collected)."""
        self._check_unheld("clear")
        with self._mu:
            t, self._t, self._capacity = self._t, None, 0
        if t is not None:
            t.close()

    # --- with tensor as view ------------------------------------------------------

    def __enter__(self) -> Any:
        """Take the lock shared (vortex's) and return a zero-copy view of the contents."""
        t = self._t
        if t is None:
            raise ValueError(f"{type(self).__name__} is empty, expected resize(shape) before `with tensor`")
        t.acquire(shared=True)
        try:
            view = self._as_dtype(t.view())
        except ClosedError:
            t.release()
            raise ValueError(f"{type(self).__name__} was cleared, expected resize(shape) before `with tensor`") from None
        except BaseException:
            t.release()
            raise
        st = getattr(self._held, "stack", None)
        if st is None:
            st = self._held.stack = []
        st.append(t)
        return view

    def _as_dtype(self, view: Any) -> Any:
        """``view`` of the storage as the tensor's dtype (UInt64 over float64)."""
        if self._storage == self._dtype:
            return view
        if hasattr(view, "view") and callable(view.view):  # NumPy and CuPy reinterpret in place
            return view.view(self._dtype)
        from ._tensor import TensorView

        return TensorView(view.ptr, view.shape, self._dtype, view.device, view.keep)

    def __exit__(self, *exc: Any) -> bool:
        st = getattr(self._held, "stack", None)
        if not st:
            raise RuntimeError(f"{type(self).__name__}.__exit__ without __enter__ in this thread")
        st.pop().release()  # the tensor entered, whatever happened to self._t since
        return False

    def __repr__(self) -> str:
        return f"{self._kind}(shape=[{', '.join(map(str, self.shape))}], dtype={self._dtype.name})"


class _CudaDeviceTensor(_Tensor):
    """The CUDA device tensors: vortex gives only these a ``device`` (the others have
    none, and vortex's own tests tell device tensors apart by it)."""

    @property
    def device(self) -> int:
        """The CUDA device's ordinal."""
        return self._device.ordinal


# Where each kind keeps its memory, for the docstrings.
_MEMORY = {"CpuTensor": "host memory on the CPU backend",
           "CudaHostTensor": "pinned host memory of a CUDA device (``device`` defaults to ``\"cuda\"``)",
           "CudaDeviceTensor": "CUDA device memory (``device`` defaults to ``\"cuda\"``)"}

# vortex's tensor classes, one row each: (name, kind, dtype), as vortex's
# bindings make them from one list. memory.pyi declares each for editors,
# and __all__ lists each by name.
_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("CpuTensorInt8", "CpuTensor", "int8"),
    ("CpuTensorUInt16", "CpuTensor", "uint16"),
    ("CpuTensorUInt64", "CpuTensor", "uint64"),
    ("CpuTensorFloat32", "CpuTensor", "float32"),
    ("CpuTensorFloat64", "CpuTensor", "float64"),
    ("CudaHostTensorInt8", "CudaHostTensor", "int8"),
    ("CudaHostTensorUInt16", "CudaHostTensor", "uint16"),
    ("CudaHostTensorUInt64", "CudaHostTensor", "uint64"),
    ("CudaHostTensorFloat32", "CudaHostTensor", "float32"),
    ("CudaHostTensorFloat64", "CudaHostTensor", "float64"),
    ("CudaDeviceTensorInt8", "CudaDeviceTensor", "int8"),
    ("CudaDeviceTensorUInt16", "CudaDeviceTensor", "uint16"),
    ("CudaDeviceTensorUInt64", "CudaDeviceTensor", "uint64"),
    ("CudaDeviceTensorFloat32", "CudaDeviceTensor", "float32"),
    ("CudaDeviceTensorFloat64", "CudaDeviceTensor", "float64"),
)


def _define(classes: tuple) -> dict:
    """The table's classes by name, for the module's namespace."""
    made = {}
    for name, kind, dtype in classes:
        dt = np.dtype(dtype)
        made[name] = type(name, (_CudaDeviceTensor if kind == "CudaDeviceTensor" else _Tensor,), {
            "_kind": kind, "_dtype": dt, "__module__": __name__, "__qualname__": name,
            "_storage": np.dtype(np.float64) if dt == np.uint64 else dt,
            "__doc__": f"vortex's ``{name}``: a lockable {dt.name} tensor in {_MEMORY[kind]}.",
        })
    return made


globals().update(_define(_CLASSES))
