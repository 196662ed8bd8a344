"""Argument validators shared by every module: one place that turns a bad
value into an error naming the argument and the value expected.

Each validator returns the normalised value. ``name`` is what the user wrote
(``"shape"``, ``"EngineConfig.records_per_block"``); messages read
``name=<value>, expected <what>`` so a user sees what to change.

Integers that cross into Go are bounded here: Go's int is 64-bit, and an
unbounded Python int would otherwise fail inside gopy with CPython's
"int too big to convert", which names nothing.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Iterable, Optional

import numpy as np

__all__ = [
    "INT64_MAX",
    "MAX_ELEMENTS",
    "check_int",
    "check_float",
    "check_timeout",
    "check_bool",
    "check_shape",
    "check_native_order",
    "check_callable",
]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
#: Largest element count of any one allocation (2**48 elements, 256 TiB of
#: bytes at one byte each): far above any real device, far below int64
#: overflow of byte sizes, so a product of dimensions is bounded before a
#: byte size is computed.
MAX_ELEMENTS = 2**48


def _repr(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def check_int(name: str, v: Any, lo: Optional[int] = None, hi: Optional[int] = INT64_MAX) -> int:
    """An integer (bools refused) within ``[lo, hi]``; Go's int64 at most by default."""
    if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
        try:
            if isinstance(v, bool):
                raise TypeError
            v = operator.index(v)
        except TypeError:
            raise TypeError(f"{name}={_repr(v)}, expected an int") from None
    v = int(v)
    # Without a lower bound, Go's int64 is still one: an int below it would
    # reach gopy and fail there with a message that names nothing.
    low = lo if lo is not None else INT64_MIN
    if v < low:
        raise ValueError(f"{name}={v}, expected an int >= {low}")
    if hi is not None and v > hi:
        raise ValueError(f"{name}={v}, expected an int <= {hi}")
    return v


def check_float(name: str, v: Any, lo: Optional[float] = None, hi: Optional[float] = None,
                finite: bool = True) -> float:
    """A real number (bools refused), finite unless ``finite=False``, within ``[lo, hi]``."""
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name}={_repr(v)}, expected a number")
    f = float(v)
    if math.isnan(f) or (finite and math.isinf(f)):
        raise ValueError(f"{name}={f}, expected a finite number")
    if lo is not None and f < lo:
        raise ValueError(f"{name}={f}, expected a number >= {lo}")
    if hi is not None and f > hi:
        raise ValueError(f"{name}={f}, expected a number <= {hi}")
    return f


#: Longest timeout accepted, in seconds (about 3.4 years): Go durations are
#: int64 nanoseconds, and anything longer means "forever" anyway (pass None).
MAX_TIMEOUT_S = 1e8


def check_timeout(name: str, v: Any) -> Optional[float]:
    """``None`` (wait forever) or seconds >= 0 (finite, at most ``MAX_TIMEOUT_S``)."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name}={_repr(v)}, expected seconds (a number >= 0) or None to wait forever")
    f = float(v)
    if math.isnan(f) or f < 0 or f > MAX_TIMEOUT_S:
        raise ValueError(
            f"{name}={f}, expected seconds between 0 and {MAX_TIMEOUT_S:g}, or None to wait forever")
    return f


def check_bool(name: str, v: Any) -> bool:
    """A bool (or NumPy bool)."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name}={_repr(v)}, expected True or False")
    return bool(v)


def check_shape(name: str, shape: Any, max_elements: int = MAX_ELEMENTS) -> tuple[int, ...]:
    """An int or a sequence of ints >= 0, whose product is at most ``max_elements``.

    Floats are refused rather than truncated (``(2, 1.5)`` is a mistake, not
    ``(2, 1)``).
    """
    if isinstance(shape, (numbers.Integral, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
        raise TypeError(f"{name}={_repr(shape)}, expected an int or a sequence of ints")
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (numbers.Integral, np.integer)):
            raise TypeError(f"{name}={_repr(shape)}, expected an int or a sequence of ints")
        d = int(d)
        if d < 0:
            raise ValueError(f"{name}={_repr(tuple(shape))}, expected dimensions >= 0")
        dims.append(d)
    n = 1
    for d in dims:
        n *= d
    if n > max_elements:
        raise ValueError(f"{name}={tuple(dims)} has {n} elements, expected at most {max_elements}")
    return tuple(dims)


def check_native_order(name: str, dtype: np.dtype) -> np.dtype:
    """Refuse byte-swapped dtypes: the Go core computes in native order and
    would silently read big-endian data as little-endian."""
    if not dtype.isnative:
        raise ValueError(
            f"{name} has dtype {dtype.str} (non-native byte order), expected native order: "
            f"convert with arr.astype(arr.dtype.newbyteorder('='))")
    return dtype


def check_callable(name: str, v: Any, allow_none: bool = True) -> Any:
    """A callable (or None when allowed)."""
    if v is None and allow_none:
        return None
    if not callable(v):
        raise TypeError(f"{name}={_repr(v)}, expected a callable{' or None' if allow_none else ''}")
    return v
