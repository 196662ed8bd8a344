"""Element-wise kernels of kernels/ (PTX on CUDA, Go on the CPU backend)."""

from __future__ import annotations

from typing import Any, Optional

from ._array import OP_CAST, OP_SCALE_OFFSET, Array, _check_stream, _norm_dtype, empty, order_after, run_op
from ._core import DTYPE_CODES
from ._stream import Stream, current_stream
from ._validate import check_float

__all__ = ["cast", "scale_offset"]


def _args(x: Any, out: Any, stream: Optional[Stream]) -> Stream:
    """Check ``x`` and ``out`` and order the stream after ``x``'s producer.
    The operation then holds both memories in Go for its duration, so a
    concurrent ``free()`` cannot free them under it."""
    if not isinstance(x, Array):
        raise TypeError(f"x={type(x).__name__}, expected a vortexgo.Array")
    x._check()
    if out is not None:
        if not isinstance(out, Array):
            raise TypeError(f"out={type(out).__name__}, expected a vortexgo.Array or None")
        out._check()
        if out.device != x.device:
            raise ValueError(f"out is on {out.device.alias}, expected {x.device.alias} (x's device)")
    s = _check_stream(stream, x.device) or current_stream(x.device)
    order_after(s, x.stream)
    return s


def cast(x: Array, dtype: Any, *, out: Optional[Array] = None, stream: Optional[Stream] = None) -> Array:
    """Convert ``x`` to ``dtype``, asynchronously. Float to integer rounds to nearest
    (ties to even) and saturates to the target range."""
    s = _args(x, out, stream)
    dt = _norm_dtype(dtype)
    if out is None:
        out = empty(x.shape, dt, x.device, pinned=x.pinned, stream=s)
    elif out.size != x.size or out.dtype != dt:
        raise ValueError(f"out has {out.size} {out.dtype.name}, expected {x.size} {dt.name}")
    if x.size:
        run_op(OP_CAST, s, out._mid, out.ptr, x._mid, x.ptr, x.size, DTYPE_CODES[dt.name], DTYPE_CODES[x.dtype.name])
    out.stream = s
    return out


def scale_offset(x: Array, scale: float, offset: float = 0.0, *, out: Optional[Array] = None,
                 stream: Optional[Stream] = None) -> Array:
    """``out = x * scale + offset`` element-wise, asynchronously (``out`` may be ``x``)."""
    s = _args(x, out, stream)
    scale, offset = check_float("scale", scale, finite=False), check_float("offset", offset, finite=False)
    if out is None:
        out = empty(x.shape, x.dtype, x.device, pinned=x.pinned, stream=s)
    elif out.size != x.size or out.dtype != x.dtype:
        raise ValueError(f"out has {out.size} {out.dtype.name}, expected {x.size} {x.dtype.name}")
    if x.size:
        code = DTYPE_CODES[x.dtype.name]
        run_op(OP_SCALE_OFFSET, s, out._mid, out.ptr, x._mid, x.ptr, x.size, code, code, scale, offset)
    out.stream = s
    return out
