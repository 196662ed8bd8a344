"""Reading a state record that Go writes into a caller's buffer.

Each record is a flat Go struct declared once in gosrc/pyapi/records.go;
``go generate ./gosrc/pyapi`` writes :mod:`vortexgo._layouts`, one
:class:`Layout` per record. A binding method takes ``(address, nbytes)``,
writes the record when it fits and returns its size either way."""

from __future__ import annotations

import array
import struct
from typing import Any, Callable, NamedTuple

__all__ = ["Layout"]


class Layout:
    """The fields of one record: names in order and struct codes ("q"
    int64, "d" float64), native byte order, no padding."""

    __slots__ = ("name", "names", "_struct", "_row")

    def __init__(self, name: str, fields: tuple[tuple[str, str], ...]) -> None:
        self.name = name
        self.names = tuple(f for f, _ in fields)
        self._struct = struct.Struct("=" + "".join(c for _, c in fields))
        self._row: Any = NamedTuple(name.title().replace("_", ""), [(f, int if c == "q" else float) for f, c in fields])

    @property
    def size(self) -> int:
        """Bytes of one record."""
        return self._struct.size

    def read(self, fn: Callable[..., int], *args: Any) -> Any:
        """Call ``fn(*args, address, nbytes)`` and return the record it
        wrote as a named tuple (fields by name)."""
        buf = array.array("B", bytes(self._struct.size))
        size = fn(*args, buf.buffer_info()[0], len(buf))
        if size != self._struct.size:  # a stale generated module: go generate ./gosrc/pyapi
            raise RuntimeError(f"{self.name}: Go wrote {size} bytes, the layout reads {self._struct.size}")
        return self._row._make(self._struct.unpack(buf))

    def read_rows(self, fn: Callable[..., int], *args: Any, capacity: int = 8) -> list[Any]:
        """Call ``fn(*args, address, nbytes)``, which writes any number of
        records one after another, and return them, retrying once with the
        size it asked for when they did not fit."""
        buf = array.array("B", bytes(self._struct.size * capacity))
        size = fn(*args, buf.buffer_info()[0], len(buf))
        if size > len(buf):
            buf = array.array("B", bytes(size))
            size = fn(*args, buf.buffer_info()[0], len(buf))
        return [self._row._make(r) for r in self._struct.iter_unpack(memoryview(buf)[:size])]
