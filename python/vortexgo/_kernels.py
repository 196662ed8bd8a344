"""Element-wise kernels of kernels/ (PTX on CUDA, Go on the CPU backend)."""

from __future__ import annotations

from typing import Any, Optional

from ._array import Array, _norm_dtype, empty, order_after
from ._core import DTYPE_CODES, api, fast_scale_offset
from ._errors import native
from ._stream import Stream, current_stream

__all__ = ["cast", "scale_offset"]


def _stream_for(x: Array, stream: Optional[Stream]) -> Stream:
    s = stream if stream is not None else current_stream(x.device)
    order_after(s, x.stream)
    return s


@native
def cast(x: Array, dtype: Any, *, out: Optional[Array] = None, stream: Optional[Stream] = None) -> Array:
    """Convert ``x`` to ``dtype``, asynchronously. Float to integer rounds to nearest
    (ties to even) and saturates to the target range."""
    if not isinstance(x, Array):
        raise TypeError(f"x={type(x).__name__}, expected a vortexgo.Array")
    dt = _norm_dtype(dtype)
    s = _stream_for(x, stream)
    if out is None:
        out = empty(x.shape, dt, x.device, pinned=x.pinned, stream=s)
    elif out.size != x.size or out.dtype != dt:
        raise ValueError(f"out has {out.size} {out.dtype.name}, expected {x.size} {dt.name}")
    if x.size:
        api.Cast(s._h, out.ptr, dt.name, x.ptr, x.dtype.name, x.size)
    out.stream = s
    return out


@native
def scale_offset(x: Array, scale: float, offset: float = 0.0, *, out: Optional[Array] = None,
                 stream: Optional[Stream] = None) -> Array:
    """``out = x * scale + offset`` element-wise, asynchronously (``out`` may be ``x``)."""
    if not isinstance(x, Array):
        raise TypeError(f"x={type(x).__name__}, expected a vortexgo.Array")
    s = _stream_for(x, stream)
    if out is None:
        out = empty(x.shape, x.dtype, x.device, pinned=x.pinned, stream=s)
    elif out.size != x.size or out.dtype != x.dtype:
        raise ValueError(f"out has {out.size} {out.dtype.name}, expected {x.size} {x.dtype.name}")
    if x.size and fast_scale_offset(s._id, out.ptr, x.ptr, x.size, DTYPE_CODES[x.dtype.name],
                                    float(scale), float(offset)):
        api.ScaleOffset(s._h, out.ptr, x.ptr, x.size, x.dtype.name, float(scale), float(offset))
    out.stream = s
    return out
