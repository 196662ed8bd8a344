"""The argument lists of the toolkit's Go calls, written in one place.

Go reads lists from an int64 buffer (``address, count``); the results it
writes are named records (:mod:`vortexgo._layouts`, declared in
gosrc/pyapi/records.go): no text to format in Go and parse here."""

from __future__ import annotations

import array
import struct
from typing import Iterable

from .._errors import native

__all__ = ["words", "float_bits", "tk_native"]

#: Error translation of the toolkit's Go calls (KeyError for unknown op
#: ids is one of the tags _errors.translate knows).
tk_native = native


def words(values: Iterable[int]) -> array.array:
    """An int64 buffer for a Go list argument; pass ``*buf.buffer_info()``
    (address, count) and keep ``buf`` referenced across the call."""
    return array.array("q", values)


_D = struct.Struct("d")
_Q = struct.Struct("q")


def float_bits(v: float) -> int:
    """The IEEE-754 bits of ``v`` as an int64 (how floats travel in words)."""
    return _Q.unpack(_D.pack(v))[0]
