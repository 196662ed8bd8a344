"""Operations of the async toolkit: kernels by name, timed spins, host copies,
their typed arguments, and the toolkit's error translation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, TypeVar, Union

import numpy as np

from ._array import Array
from ._core import api
from ._errors import native
from ._stream import Stream

__all__ = [
    "KernelArg", "i32", "u32", "i64", "u64", "f32", "f64", "In", "Out",
    "KernelOp", "SpinOp", "UploadOp", "DownloadOp", "Op",
]

F = TypeVar("F", bound=Callable)



# KeyError (unknown op ids) is one of the tags _errors.native translates.
tk_native = native


def check_int(name: str, v: Any, lo: Optional[int] = None) -> int:
    """v as an int (not a bool), at least lo."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}={v!r}, expected an int")
    v = int(v)
    if lo is not None and v < lo:
        raise ValueError(f"{name}={v}, expected {name} >= {lo}")
    return v


def timeout_us(timeout: Optional[float]) -> int:
    """Seconds (None: forever) as the Go side's microseconds (-1: forever)."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout={timeout!r}, expected seconds (a number) or None")
    if not timeout >= 0 or math.isinf(timeout):
        if math.isinf(timeout) and timeout > 0:
            return -1
        raise ValueError(f"timeout={timeout}, expected seconds >= 0 or None (no limit)")
    return int(round(timeout * 1e6))


# --- views of memory owned by toolkit objects ------------------------------------


class _Owned:
    """The ``_buf`` of an Array over memory a toolkit object owns: it keeps the
    owner alive, and freeing the Array frees nothing (the owner does)."""

    __slots__ = ("owner",)

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def Free(self) -> None:  # noqa: N802 - the gopy Buffer method name
        pass


def owned_view(owner: Any, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device, pinned: bool = False,
               stream: Optional[Stream] = None) -> Array:
    """An Array over ``owner``'s memory; ``free()`` on it is refused and
    :func:`invalidate` makes it (and its reshapes) raise ClosedError."""
    root = Array._new(_Owned(owner), ptr, shape, dtype, device, pinned, stream)
    return Array._new(root._buf, ptr, shape, dtype, device, pinned, stream, base=root)


def view_root(view: Array) -> Array:
    """The hidden root Array of an :func:`owned_view` (or ``view`` itself)."""
    return view._base if view._base is not None else view


def invalidate(view: Array) -> None:
    """Mark an :func:`owned_view` freed: later use raises ClosedError."""
    view_root(view)._buf = None


# --- kernel arguments ------------------------------------------------------------

_KINDS = ("i32", "u32", "i64", "u64", "f32", "f64")


@dataclass(frozen=True)
class KernelArg:
    """A kernel argument with an explicit C type: ``i32``, ``u32``, ``i64``,
    ``u64``, ``f32`` or ``f64``. Bare Python ints pass as ``u64`` (``i64`` when
    negative) and floats as ``f64``; wrap a value when the kernel wants another
    type, e.g. ``vg.toolkit.i32(7)``."""

    kind: str
    value: Union[int, float]

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind={self.kind!r}, expected one of {', '.join(_KINDS)}")
        if self.kind[0] in "iu" and (isinstance(self.value, bool) or not isinstance(self.value, (int, np.integer))):
            raise TypeError(f"{self.kind}({self.value!r}): expected an int")
        if self.kind[0] == "f" and (isinstance(self.value, bool) or not isinstance(self.value, (int, float, np.number))):
            raise TypeError(f"{self.kind}({self.value!r}): expected a real number")

    def __repr__(self) -> str:
        return f"{self.kind}({self.value!r})"


def i32(v: int) -> KernelArg:
    """An ``int`` argument."""
    return KernelArg("i32", v)


def u32(v: int) -> KernelArg:
    """An ``unsigned int`` argument."""
    return KernelArg("u32", v)


def i64(v: int) -> KernelArg:
    """A ``long long`` argument."""
    return KernelArg("i64", v)


def u64(v: int) -> KernelArg:
    """An ``unsigned long long`` argument."""
    return KernelArg("u64", v)


def f32(v: float) -> KernelArg:
    """A ``float`` argument."""
    return KernelArg("f32", v)


def f64(v: float) -> KernelArg:
    """A ``double`` argument."""
    return KernelArg("f64", v)


@dataclass(frozen=True)
class In:
    """In a pipeline stage's kernel arguments: the address of the stage's
    ``index``-th input buffer, in the version the iteration uses."""

    index: int = 0


@dataclass(frozen=True)
class Out:
    """In a pipeline stage's kernel arguments: the address of the stage's
    ``index``-th output buffer, in the version the iteration uses."""

    index: int = 0


_NP_KIND = {np.dtype("int32"): "i32", np.dtype("uint32"): "u32", np.dtype("int64"): "i64",
            np.dtype("uint64"): "u64", np.dtype("float32"): "f32", np.dtype("float64"): "f64"}


def _device_ptr(x: Any) -> Optional[int]:
    if isinstance(x, Array):
        x._check()
        return x.ptr
    cai = getattr(x, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        return int(cai["data"][0])
    return None


@tk_native
def build_args(name: str, args: Sequence[Any]):
    """A Go KernelArgs from Python values (see :class:`KernelArg`)."""
    k = api.NewKernelArgs()
    for i, a in enumerate(args):
        ptr = _device_ptr(a)
        if ptr is not None:
            k.Ptr(ptr)
        elif isinstance(a, KernelArg):
            getattr(k, a.kind.upper())(int(a.value) if a.kind[0] in "iu" else float(a.value))
        elif isinstance(a, In):
            k.In(check_int("In.index", a.index, 0))
        elif isinstance(a, Out):
            k.Out(check_int("Out.index", a.index, 0))
        elif isinstance(a, bool):
            raise TypeError(f"kernel {name!r} argument {i} is a bool, expected an int wrapped in u32()/i32() etc.")
        elif isinstance(a, np.generic) and a.dtype in _NP_KIND:
            kind = _NP_KIND[a.dtype]
            getattr(k, kind.upper())(a.item())
        elif isinstance(a, (int, np.integer)):
            (k.U64 if a >= 0 else k.I64)(int(a))
        elif isinstance(a, (float, np.floating)):
            k.F64(float(a))
        else:
            raise TypeError(
                f"kernel {name!r} argument {i} is {type(a).__name__}, expected a vortexgo.Array, an object "
                "with __cuda_array_interface__, an int, a float, a KernelArg (i32(...)...) or In/Out")
    return k


def _dim3(name: str, v: Union[int, Sequence[int]]) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    try:
        t = tuple(check_int(name, x, 1) for x in v)  # type: ignore[union-attr]
    except TypeError:
        raise TypeError(f"{name}={v!r}, expected an int or 1 to 3 ints") from None
    if not 1 <= len(t) <= 3:
        raise ValueError(f"{name}={v!r}, expected 1 to 3 dimensions")
    return t + (1,) * (3 - len(t))  # type: ignore[return-value]


# --- operations ---------------------------------------------------------------------


@dataclass(frozen=True)
class KernelOp:
    """A kernel of kernels/ by name, with its launch configuration.

    Args:
        name: the kernel's name (e.g. ``"scale_offset_float32"``).
        grid: blocks, an int or up to 3 ints.
        block: threads per block, an int or up to 3 ints.
        args: the arguments in order: arrays (their addresses), ints, floats,
            :class:`KernelArg` for explicit C types, :class:`In`/:class:`Out`
            for a pipeline stage's buffers.
    """

    name: str
    grid: Union[int, Sequence[int]] = 1
    block: Union[int, Sequence[int]] = 1
    args: Sequence[Any] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name={self.name!r}, expected a kernel name")
        object.__setattr__(self, "grid", _dim3("grid", self.grid))
        object.__setattr__(self, "block", _dim3("block", self.block))
        object.__setattr__(self, "args", tuple(self.args))

    @tk_native
    def _handle(self):
        k = build_args(self.name, self.args)
        return api.NewKernelOp(self.name, *self.grid, *self.block, k)

    def __repr__(self) -> str:
        return f"KernelOp({self.name!r}, grid={self.grid}, block={self.block}, args={len(self.args)})"


@dataclass(frozen=True)
class SpinOp:
    """Keep the stream busy for ``ms`` milliseconds (a one-thread kernel polling
    the GPU timer; a sleep on the CPU backend): a stage of known duration."""

    ms: float

    def __post_init__(self) -> None:
        if isinstance(self.ms, bool) or not isinstance(self.ms, (int, float)):
            raise TypeError(f"ms={self.ms!r}, expected a number of milliseconds")
        if not 0 <= self.ms <= 1e6:
            raise ValueError(f"ms={self.ms}, expected 0 <= ms <= 1e6")

    @tk_native
    def _handle(self):
        return api.NewSpinOp(float(self.ms) * 1e3)

    def __repr__(self) -> str:
        return f"SpinOp({self.ms} ms)"


def host_range(x: Any, what: str) -> tuple[int, int]:
    """(address, bytes) of host memory: a C-contiguous NumPy array or a
    host-accessible vortexgo Array (pinned, or of the CPU backend)."""
    if isinstance(x, Array):
        if not x.host_accessible:
            raise TypeError(f"{what} is device memory on {x.device.alias}, expected host memory "
                            "(a NumPy array or a pinned vortexgo Array)")
        x._check()
        return x.ptr, x.nbytes
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError(f"{what} must be C-contiguous")
        if not x.flags.writeable and what.startswith("host_dst"):
            raise ValueError(f"{what} is read-only")
        return x.ctypes.data, x.nbytes
    raise TypeError(f"{what}={type(x).__name__}, expected a numpy.ndarray or a host-accessible vortexgo.Array")


@dataclass(frozen=True, eq=False)
class UploadOp:
    """A pipeline stage op copying ``host`` into the stage's output buffer 0 (its
    whole size) on the upload stream. Use pinned host memory for a truly
    asynchronous copy. The stage keeps ``host`` alive."""

    host: Any

    def __post_init__(self) -> None:
        host_range(self.host, "host")

    @tk_native
    def _handle(self):
        ptr, n = host_range(self.host, "host")
        return api.NewCopyOp(ptr, n, True)

    def __repr__(self) -> str:
        return f"UploadOp({host_range(self.host, 'host')[1]} bytes)"


@dataclass(frozen=True, eq=False)
class DownloadOp:
    """A pipeline stage op copying the stage's input buffer 0 into ``host`` on the
    download stream. The stage keeps ``host`` alive."""

    host: Any

    def __post_init__(self) -> None:
        host_range(self.host, "host_dst")

    @tk_native
    def _handle(self):
        ptr, n = host_range(self.host, "host_dst")
        return api.NewCopyOp(ptr, n, False)

    def __repr__(self) -> str:
        return f"DownloadOp({host_range(self.host, 'host_dst')[1]} bytes)"


Op = Union[KernelOp, SpinOp, UploadOp, DownloadOp]
