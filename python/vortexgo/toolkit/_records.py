"""The one record format of the toolkit's Go calls, read in one place.

Go writes results as float64 records into a buffer the caller provides
(``fn(address, capacity) -> count``) and reads lists from an int64 buffer
(``address, count``): no text to format in Go and parse here. See
gosrc/pyapi/pipeline.go."""

from __future__ import annotations

import array
import struct
from typing import Callable, Iterable

from .._errors import native

__all__ = ["records", "words", "float_bits", "tk_native"]

#: Error translation of the toolkit's Go calls (KeyError for unknown op
#: ids is one of the tags _errors.translate knows).
tk_native = native


@tk_native
def records(fn: Callable[..., int], *args: int, capacity: int = 8) -> list[float]:
    """Call ``fn(*args, address, capacity)`` and return the records it wrote,
    retrying once with the size it asked for when they did not fit."""
    buf = array.array("d", bytes(8 * capacity))
    k = fn(*args, buf.buffer_info()[0], capacity)
    if k > capacity:
        buf = array.array("d", bytes(8 * k))
        k = fn(*args, buf.buffer_info()[0], k)
    return buf[:k].tolist()


def words(values: Iterable[int]) -> array.array:
    """An int64 buffer for a Go list argument; pass ``*buf.buffer_info()``
    (address, count) and keep ``buf`` referenced across the call."""
    return array.array("q", values)


_D = struct.Struct("d")
_Q = struct.Struct("q")


def float_bits(v: float) -> int:
    """The IEEE-754 bits of ``v`` as an int64 (how floats travel in words)."""
    return _Q.unpack(_D.pack(v))[0]
