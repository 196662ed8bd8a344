"""Operations of the async toolkit: kernels by name, timed spins and host
copies, with their typed arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from .._array import Array
from .._core import api
from .._validate import INT64_MAX, check_float, check_int
from ._records import float_bits, tk_native, words

__all__ = [
    "KernelArg", "i32", "u32", "i64", "u64", "f32", "f64", "In", "Out",
    "KernelOp", "SpinOp", "UploadOp", "DownloadOp", "Op", "host_range", "device_range",
]

# Argument kinds of gosrc/pipeline/args.go (DecodeArgs).
_ARRAY, _IN, _OUT = 0, 7, 8
_STAGE_KERNEL, _STAGE_SPIN, _STAGE_UPLOAD, _STAGE_DOWNLOAD = range(4)  # pipeline.StageOpKind
_KINDS = {"i32": 1, "u32": 2, "i64": 3, "u64": 4, "f32": 5, "f64": 6}
_RANGE = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, INT64_MAX), "u64": (0, INT64_MAX)}


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
        if self.kind[0] in "iu":
            lo, hi = _RANGE[self.kind]
            object.__setattr__(self, "value", check_int(f"{self.kind}()", self.value, lo, hi))
        else:
            object.__setattr__(self, "value", check_float(f"{self.kind}()", self.value, finite=False))

    def _word(self) -> int:
        return self.value if self.kind[0] in "iu" else float_bits(self.value)  # type: ignore[return-value]

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

    def __post_init__(self) -> None:
        check_int("In.index", self.index, 0, 2**31 - 1)


@dataclass(frozen=True)
class Out:
    """In a pipeline stage's kernel arguments: the address of the stage's
    ``index``-th output buffer, in the version the iteration uses."""

    index: int = 0

    def __post_init__(self) -> None:
        check_int("Out.index", self.index, 0, 2**31 - 1)


_NP_KIND = {np.dtype("int32"): "i32", np.dtype("uint32"): "u32", np.dtype("int64"): "i64",
            np.dtype("uint64"): "u64", np.dtype("float32"): "f32", np.dtype("float64"): "f64"}


def device_range(x: Any, what: str) -> Optional[tuple[int, int]]:
    """(address, bytes) of a vortexgo Array or a CUDA array, else None."""
    if isinstance(x, Array):
        x._check()
        return x.ptr, x.nbytes
    cai = getattr(x, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        n = int(np.prod(cai["shape"])) * np.dtype(cai["typestr"]).itemsize
        return int(cai["data"][0]), n
    return None


def _encode(name: str, args: Sequence[Any]) -> list[int]:
    out: list[int] = []
    for i, a in enumerate(args):
        r = device_range(a, f"argument {i}")
        if r is not None:
            out += (_ARRAY, r[0], r[1])
        elif isinstance(a, KernelArg):
            out += (_KINDS[a.kind], a._word())
        elif isinstance(a, (In, Out)):
            out += (_IN if isinstance(a, In) else _OUT, a.index)
        elif isinstance(a, (bool, np.bool_)):
            raise TypeError(f"kernel {name!r} argument {i} is a bool, expected an int wrapped in u32()/i32() etc.")
        elif isinstance(a, np.generic) and a.dtype in _NP_KIND:
            k = KernelArg(_NP_KIND[a.dtype], a.item())
            out += (_KINDS[k.kind], k._word())
        elif isinstance(a, (int, np.integer)):
            k = KernelArg("u64" if a >= 0 else "i64", int(a))
            out += (_KINDS[k.kind], k._word())
        elif isinstance(a, (float, np.floating)):
            out += (_KINDS["f64"], float_bits(float(a)))
        else:
            raise TypeError(
                f"kernel {name!r} argument {i} is {type(a).__name__}, expected a vortexgo.Array, an object "
                "with __cuda_array_interface__, an int, a float, a KernelArg (i32(...)...) or In/Out")
    return out


def _dim3(name: str, v: Union[int, Sequence[int]]) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        raise TypeError(f"{name}={v!r}, expected an int or 1 to 3 ints")
    t = tuple(check_int(name, x, 1, 2**32 - 1) for x in v)  # type: ignore[union-attr]
    if not 1 <= len(t) <= 3:
        raise ValueError(f"{name}={v!r}, expected 1 to 3 dimensions")
    return t + (1,) * (3 - len(t))  # type: ignore[return-value]


# The elementwise kernels (kernels/elementwise.cu): pointers first, then
# the element count n. Go refuses an n past a sized argument too
# (pipeline.CheckKernelArgs); checking here names the arrays' Python sizes
# before anything is built.
_ELEMENTWISE = re.compile(r"^(fill|scale_offset|cast)_([a-z0-9]+?)(?:_([a-z0-9]+))?$")


def _check_n(name: str, args: Sequence[Any]) -> None:
    m = _ELEMENTWISE.match(name)
    if m is None:
        return
    try:
        if m.group(1) == "cast":
            elems = [np.dtype(m.group(3)).itemsize, np.dtype(m.group(2)).itemsize]
        else:
            elems = [np.dtype(m.group(2)).itemsize] * (1 if m.group(1) == "fill" else 2)
    except TypeError:
        return
    if len(args) <= len(elems):
        return
    n = args[len(elems)]
    n = n.value if isinstance(n, KernelArg) and n.kind[0] in "iu" else n
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        return
    for i, elem in enumerate(elems):
        r = device_range(args[i], f"argument {i}")
        if r is not None and int(n) > r[1] // elem:
            raise ValueError(f"kernel {name!r}: n={int(n)} elements, but argument {i} holds {r[1]} bytes "
                             f"({r[1] // elem} elements of {elem} bytes)")


@dataclass(frozen=True)
class KernelOp:
    """A kernel of kernels/ by name, with its launch configuration.

    For the elementwise kernels (``fill_*``, ``scale_offset_*``, ``cast_*``)
    an element count ``n`` larger than an array argument is refused with a
    ValueError naming ``n`` and the sizes, here and again before each
    launch (stage buffers, :class:`In`/:class:`Out`, are checked at launch).

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
        _check_n(self.name, self.args)

    @tk_native
    def _handle(self):
        _check_n(self.name, self.args)  # arrays may have been replaced or freed since
        w = words((*self.grid, *self.block, *_encode(self.name, self.args)))  # referenced across the call
        return api.NewStageOp(_STAGE_KERNEL, self.name, *w.buffer_info())

    def __repr__(self) -> str:
        return f"KernelOp({self.name!r}, grid={self.grid}, block={self.block}, args={len(self.args)})"


@dataclass(frozen=True)
class SpinOp:
    """Keep the stream busy for ``ms`` milliseconds (a one-thread kernel polling
    the GPU timer; a sleep on the CPU backend): a stage of known duration."""

    ms: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "ms", check_float("ms", self.ms, 0, 1e6))

    @tk_native
    def _handle(self):
        w = words((round(self.ms * 1e6),))  # ns
        return api.NewStageOp(_STAGE_SPIN, "", *w.buffer_info())

    def __repr__(self) -> str:
        return f"SpinOp({self.ms:g} ms)"


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
        w = words(host_range(self.host, "host"))
        return api.NewStageOp(_STAGE_UPLOAD, "", *w.buffer_info())

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
        w = words(host_range(self.host, "host_dst"))
        return api.NewStageOp(_STAGE_DOWNLOAD, "", *w.buffer_info())

    def __repr__(self) -> str:
        return f"DownloadOp({host_range(self.host, 'host_dst')[1]} bytes)"


Op = Union[KernelOp, SpinOp, UploadOp, DownloadOp]
