"""Scan markers (vortex's ``vortex.marker``): what happens at which sample.

The Generate stage emits markers beside its waveforms: where a scan, a volume
and a segment start, where active and inactive lines begin, and user
:class:`Event` markers. The format planner reads them to decide where each
record goes, and endpoints report events to their callbacks.

Names, fields, defaults and reprs are vortex's, so code that builds or reads
markers runs unchanged; values are checked when set (a negative sample or a
flag bit past 63 is a ``ValueError`` naming the field, where vortex gives a
pybind11 ``TypeError`` or undefined behaviour).

Markers cross to the Go core as rows of one int64 record array
(:func:`_to_records` / :func:`_from_records`), the layout of
``gosrc/marker.Marker``: one copy per list, no per-marker call.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable, List, Optional, Union

import numpy as np

from ._attrs import ValueList
from ._validate import check_bool, check_int

__all__ = [
    "Flags",
    "FlagsList",
    "ScanBoundary",
    "VolumeBoundary",
    "SegmentBoundary",
    "ActiveLines",
    "InactiveLines",
    "Event",
    "Marker",
    "MarkerList",
]

_U64 = 2**64 - 1


class Flags:
    """A 64-bit flag set (vortex's ``marker.Flags``).

    A marker passes a planner's mask when their flags share a bit
    (:meth:`matches`). ``Flags()`` has no bit set; boundaries and events
    default to :meth:`all`.
    """

    __slots__ = ("_value",)

    #: Number of distinct flag bits.
    max_unique: ClassVar[int] = 64

    def __init__(self, value: int = 0) -> None:
        self._value = check_int("Flags.value", value, 0, _U64)

    @property
    def value(self) -> int:
        """The bits as an unsigned int."""
        return self._value

    @value.setter
    def value(self, v: int) -> None:
        self._value = check_int("Flags.value", v, 0, _U64)

    def set(self, index: Optional[int] = None) -> None:
        """Set bit ``index``, or every bit when no index is given."""
        if index is None:
            self._value = _U64
        else:
            self._value |= 1 << check_int("Flags.set(index)", index, 0, self.max_unique - 1)

    def clear(self, index: Optional[int] = None) -> None:
        """Clear bit ``index``, or every bit when no index is given."""
        if index is None:
            self._value = 0
        else:
            self._value &= ~(1 << check_int("Flags.clear(index)", index, 0, self.max_unique - 1)) & _U64

    def matches(self, other: "Flags") -> bool:
        """True when the two sets share at least one bit."""
        return bool(self._value & _flags("other", other)._value)

    @staticmethod
    def all() -> "Flags":
        """Every bit set."""
        return Flags(_U64)

    @staticmethod
    def none() -> "Flags":
        """No bit set."""
        return Flags(0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Flags) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __copy__(self) -> "Flags":
        return Flags(self._value)

    def copy(self) -> "Flags":
        """An independent copy (vortex's ``copy()``)."""
        return self.__copy__()

    def __deepcopy__(self, memo: Any) -> "Flags":
        return Flags(self._value)

    def __repr__(self) -> str:
        return f"Flags(value={self._value:#x})"


def _flags(name: str, v: Any) -> Flags:
    if isinstance(v, Flags):
        return v
    raise TypeError(f"{name}={v!r}, expected a vortexgo.marker.Flags")


class FlagsList(ValueList):
    """A list of :class:`Flags` (vortex's ``marker.FlagsList``)."""

    def __repr__(self) -> str:
        return f"FlagsList[{', '.join(map(repr, self))}]"


class _Marker:
    """Fields every marker has: the ``sample`` at which it takes effect."""

    __slots__ = ("_sample",)
    _kind: ClassVar[int] = 0
    _fields: ClassVar[tuple] = ("sample",)

    def __init__(self, sample: int = 0) -> None:
        self.sample = sample

    @property
    def sample(self) -> int:
        """Samples counted from the start of the stream."""
        return self._sample

    @sample.setter
    def sample(self, v: int) -> None:
        self._sample = check_int(f"{type(self).__name__}.sample", v, 0)

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values() == self._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._values())

    def __copy__(self) -> "_Marker":
        return type(self)(*self._values())

    def __deepcopy__(self, memo: Any) -> "_Marker":
        return self.__copy__()

    def copy(self) -> "_Marker":
        """An independent copy."""
        return self.__copy__()

    def __repr__(self) -> str:
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({body})"


def _counter(owner: "_Marker", name: str, v: Any) -> int:
    return check_int(f"{type(owner).__name__}.{name}", v, 0)


class ScanBoundary(_Marker):
    """The start of a scan: ``ScanBoundary(sample, sequence, volume_count_hint=0, flags=Flags.all())``."""

    __slots__ = ("_sequence", "_volume_count_hint", "_flags")
    _kind = 1
    _fields = ("sample", "sequence", "volume_count_hint", "flags")

    def __init__(self, sample: int = 0, sequence: int = 0, volume_count_hint: int = 0,
                 flags: Optional[Flags] = None) -> None:
        super().__init__(sample)
        self.sequence = sequence
        self.volume_count_hint = volume_count_hint
        self.flags = Flags.all() if flags is None else flags

    sequence = property(lambda self: self._sequence,
                        lambda self, v: setattr(self, "_sequence", _counter(self, "sequence", v)),
                        doc="Scans counted since the stream started.")
    volume_count_hint = property(lambda self: self._volume_count_hint,
                                 lambda self, v: setattr(self, "_volume_count_hint", _counter(self, "volume_count_hint", v)),
                                 doc="Volumes in this scan, 0 if unknown.")
    flags = property(lambda self: self._flags,
                     lambda self, v: setattr(self, "_flags", Flags(_flags(f"{type(self).__name__}.flags", v).value)),
                     doc="The marker's :class:`Flags`.")


class VolumeBoundary(_Marker):
    """The start of a volume.

    ``VolumeBoundary(sample, sequence, reversed)`` or
    ``VolumeBoundary(sample, sequence, index_in_scan, reversed, segment_count_hint=0, flags=Flags.all())``;
    with the three-argument form ``index_in_scan`` equals ``sequence``, as in vortex.
    """

    __slots__ = ("_sequence", "_index", "_reversed", "_hint", "_flags")
    _kind = 2
    _fields = ("sample", "sequence", "index_in_scan", "reversed", "segment_count_hint", "flags")

    def __init__(self, sample: int = 0, sequence: int = 0, *args: Any, **kw: Any) -> None:
        super().__init__(sample)
        self.sequence = sequence
        index, reversed_, hint, flags = _boundary_args(self, sequence, "index_in_scan", "segment_count_hint", args, kw)
        self.index_in_scan = index
        self.reversed = reversed_
        self.segment_count_hint = hint
        self.flags = flags

    sequence = property(lambda self: self._sequence,
                        lambda self, v: setattr(self, "_sequence", _counter(self, "sequence", v)),
                        doc="Volumes counted since the stream started.")
    index_in_scan = property(lambda self: self._index,
                             lambda self, v: setattr(self, "_index", _counter(self, "index_in_scan", v)),
                             doc="The volume's index within its scan.")
    reversed = property(lambda self: self._reversed,
                        lambda self, v: setattr(self, "_reversed", check_bool("VolumeBoundary.reversed", v)),
                        doc="True when the volume is traversed backwards.")
    segment_count_hint = property(lambda self: self._hint,
                                  lambda self, v: setattr(self, "_hint", _counter(self, "segment_count_hint", v)),
                                  doc="Segments in this volume, 0 if unknown.")
    flags = ScanBoundary.flags


class SegmentBoundary(_Marker):
    """The start of a segment (a B-scan of a raster scan).

    ``SegmentBoundary(sample, sequence, reversed)`` or
    ``SegmentBoundary(sample, sequence, index_in_volume, reversed, record_count_hint=0, flags=Flags.all())``.
    """

    __slots__ = ("_sequence", "_index", "_reversed", "_hint", "_flags")
    _kind = 3
    _fields = ("sample", "sequence", "index_in_volume", "reversed", "record_count_hint", "flags")

    def __init__(self, sample: int = 0, sequence: int = 0, *args: Any, **kw: Any) -> None:
        super().__init__(sample)
        self.sequence = sequence
        index, reversed_, hint, flags = _boundary_args(self, sequence, "index_in_volume", "record_count_hint", args, kw)
        self.index_in_volume = index
        self.reversed = reversed_
        self.record_count_hint = hint
        self.flags = flags

    sequence = property(lambda self: self._sequence,
                        lambda self, v: setattr(self, "_sequence", _counter(self, "sequence", v)),
                        doc="Segments counted since the stream started.")
    index_in_volume = property(lambda self: self._index,
                               lambda self, v: setattr(self, "_index", _counter(self, "index_in_volume", v)),
                               doc="The segment's index within its volume.")
    reversed = property(lambda self: self._reversed,
                        lambda self, v: setattr(self, "_reversed", check_bool("SegmentBoundary.reversed", v)),
                        doc="True when the segment is traversed backwards.")
    record_count_hint = property(lambda self: self._hint,
                                 lambda self, v: setattr(self, "_hint", _counter(self, "record_count_hint", v)),
                                 doc="Records in this segment, 0 if unknown.")
    flags = ScanBoundary.flags


def _boundary_args(owner: _Marker, sequence: int, index_name: str, hint_name: str,
                   args: tuple, kw: dict) -> tuple:
    """vortex's two boundary signatures: (sample, sequence, reversed) and
    (sample, sequence, index, reversed, hint=0, flags=all)."""
    cls = type(owner).__name__
    names = (index_name, "reversed", hint_name, "flags")
    if len(args) == 1 and not kw.keys() & {index_name, hint_name, "flags"}:
        # The short form: the only positional argument is ``reversed``.
        return sequence, args[0], 0, Flags.all()
    if len(args) > 4:
        raise TypeError(f"{cls}() takes at most 6 arguments ({len(args) + 2} given)")
    values = dict(zip(names, args))
    for k, v in kw.items():
        if k not in names:
            raise TypeError(f"{cls}() got an unexpected keyword argument {k!r}")
        if k in values:
            raise TypeError(f"{cls}() got multiple values for argument {k!r}")
        values[k] = v
    return (values.get(index_name, sequence), values.get("reversed", False),
            values.get(hint_name, 0), values.get("flags", Flags.all()))


class ActiveLines(_Marker):
    """From ``sample`` on, records belong in the output."""

    __slots__ = ()
    _kind = 4


class InactiveLines(_Marker):
    """From ``sample`` on, records are flyback or transition (dropped by the
    planner unless it keeps inactive lines)."""

    __slots__ = ()
    _kind = 5


class Event(_Marker):
    """A user event: ``Event(sample=0, id=0, flags=Flags.all())``, reported to
    endpoints' ``event_callback(sample, id)``."""

    __slots__ = ("_id", "_flags")
    _kind = 6
    _fields = ("sample", "id", "flags")

    def __init__(self, sample: int = 0, id: int = 0, flags: Optional[Flags] = None) -> None:  # noqa: A002 (vortex's name)
        super().__init__(sample)
        self.id = id
        self.flags = Flags.all() if flags is None else flags

    id = property(lambda self: self._id,
                  lambda self, v: setattr(self, "_id", check_int("Event.id", v, 0, _U64)),
                  doc="The event's id.")
    flags = ScanBoundary.flags


#: Any marker type.
Marker = Union[ScanBoundary, VolumeBoundary, SegmentBoundary, ActiveLines, InactiveLines, Event]
_KINDS = {c._kind: c for c in (ScanBoundary, VolumeBoundary, SegmentBoundary, ActiveLines, InactiveLines, Event)}


class MarkerList(ValueList):
    """A list of markers (vortex's ``marker.MarkerList``); only markers may be added."""

    def __init__(self, markers: Iterable[Marker] = ()) -> None:
        super().__init__(_check_marker("MarkerList item", m) for m in markers)

    def append(self, m: Marker) -> None:  # type: ignore[override]
        super().append(_check_marker("MarkerList.append(marker)", m))

    def extend(self, ms: Iterable[Marker]) -> None:  # type: ignore[override]
        super().extend(_check_marker("MarkerList.extend item", m) for m in ms)

    def insert(self, i: Any, m: Marker) -> None:  # type: ignore[override]
        super().insert(i, _check_marker("MarkerList.insert(marker)", m))

    def __setitem__(self, i: Any, v: Any) -> None:
        if isinstance(i, slice):
            v = [_check_marker("MarkerList item", m) for m in v]
        else:
            v = _check_marker("MarkerList item", v)
        super().__setitem__(i, v)

    def __iadd__(self, ms: Iterable[Marker]) -> "MarkerList":  # type: ignore[override]
        self.extend(ms)
        return self

    def __repr__(self) -> str:
        return f"MarkerList[{', '.join(map(repr, self))}]"


def _check_marker(name: str, m: Any) -> Marker:
    if isinstance(m, _Marker) and type(m)._kind in _KINDS:
        return m  # type: ignore[return-value]
    raise TypeError(f"{name}={m!r}, expected a vortexgo.marker marker (ScanBoundary, VolumeBoundary, "
                    "SegmentBoundary, ActiveLines, InactiveLines or Event)")


# The record layout of gosrc/marker.Marker, one int64 row per marker. Flags
# and ids are unsigned 64-bit in vortex: they travel as the int64 with the
# same bits.
RECORD_FIELDS = ("kind", "sample", "sequence", "index", "count_hint", "id", "flags", "reversed")
_F = {name: i for i, name in enumerate(RECORD_FIELDS)}


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def _to_records(markers: Iterable[Marker]) -> np.ndarray:
    """Markers as an (n, 8) int64 array in gosrc/marker's field order."""
    ms = [_check_marker("markers item", m) for m in markers]
    out = np.zeros((len(ms), len(RECORD_FIELDS)), dtype=np.int64)
    for row, m in zip(out, ms):
        row[_F["kind"]] = m._kind
        row[_F["sample"]] = m.sample
        if isinstance(m, (ScanBoundary, VolumeBoundary, SegmentBoundary)):
            row[_F["sequence"]] = m.sequence
        if isinstance(m, ScanBoundary):
            row[_F["count_hint"]] = m.volume_count_hint
        elif isinstance(m, VolumeBoundary):
            row[_F["index"]], row[_F["reversed"]], row[_F["count_hint"]] = m.index_in_scan, m.reversed, m.segment_count_hint
        elif isinstance(m, SegmentBoundary):
            row[_F["index"]], row[_F["reversed"]], row[_F["count_hint"]] = m.index_in_volume, m.reversed, m.record_count_hint
        elif isinstance(m, Event):
            row[_F["id"]] = _signed(m.id)
        if isinstance(m, (ScanBoundary, VolumeBoundary, SegmentBoundary, Event)):
            row[_F["flags"]] = _signed(m.flags.value)
    return out


def _from_records(records: np.ndarray) -> MarkerList:
    """The inverse of :func:`_to_records`."""
    r = np.asarray(records, dtype=np.int64)
    if r.ndim != 2 or r.shape[1] != len(RECORD_FIELDS):
        raise ValueError(f"records.shape={r.shape}, expected (n, {len(RECORD_FIELDS)})")
    out: List[Marker] = []
    for row in r.tolist():
        kind, sample, seq, index, hint, id_, flags, rev = row
        flags_ = Flags(flags & _U64)
        cls = _KINDS.get(kind)
        if cls is ScanBoundary:
            out.append(ScanBoundary(sample, seq, hint, flags_))
        elif cls is VolumeBoundary:
            out.append(VolumeBoundary(sample, seq, index, bool(rev), hint, flags_))
        elif cls is SegmentBoundary:
            out.append(SegmentBoundary(sample, seq, index, bool(rev), hint, flags_))
        elif cls is Event:
            out.append(Event(sample, id_ & _U64, flags_))
        elif cls is not None:
            out.append(cls(sample))
        else:
            raise ValueError(f"records kind={kind}, expected 1..6 (gosrc/marker.Kind)")
    return MarkerList(out)
