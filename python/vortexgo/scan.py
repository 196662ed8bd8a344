"""Scan patterns: vortex's Generate stage (``vortex.scan``).

Names, config fields, defaults and reprs are vortex's::

    cfg = RasterScanConfig()
    cfg.bscans_per_volume = 100
    cfg.ascans_per_bscan = 500
    scan = RasterScan()
    scan.initialize(cfg)
    buf = numpy.empty((1000, cfg.channels_per_sample))
    markers = MarkerList()
    n = scan.next(markers, buf)      # the next 1000 galvo samples

The patterns, the inactive paths between segments, the limit checks and the
scan queue run in the Go core (gosrc/scan, whose package doc lists the
deliberate differences from vortex); this module holds the configs as
Python objects, type-checks what is set, and hands a config to Go as one
JSON record, where it is validated once (``ValueError`` naming vortex's
field). The Go side of each call is gosrc/pyapi/scan.go. See docs/scan.md.
"""

from __future__ import annotations

import copy as _copy
import json
import math
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np

from ._attrs import NoCopy, StrictAttributes, ValueList, unknown_attribute
from ._core import api
from ._errors import VortexError, native
from ._validate import INT64_MAX, check_bool, check_callable, check_float, check_int
from .marker import Flags, FlagsList, MarkerList, ScanBoundary, _check_marker, _from_records, _signed, _to_records

__all__ = [
    "Range", "Limits", "limits", "warp", "inactive_policy",
    "XYWaypoints", "RasterWaypoints", "RadialWaypoints", "SpiralWaypoints",
    "SequentialPattern", "RepeatedPattern", "RepeatOrder", "RepeatPack", "RepeatFlags",
    "Segment", "SegmentList",
    "RasterScanConfig", "RepeatedRasterScanConfig", "RadialScanConfig", "RepeatedRadialScanConfig",
    "SpiralScanConfig", "FreeformScanConfig",
    "RasterScan", "RepeatedRasterScan", "RadialScan", "RepeatedRadialScan", "SpiralScan", "FreeformScan",
    "ScanQueue",
]

_U64 = 2**64 - 1


def _num(v: float) -> str:
    """vortex's number format in reprs: integral values without ``.0``."""
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e16 else repr(float(v))


@native
def _config(kind: str, record: Optional[dict] = None) -> Any:
    """A Go config or pattern of ``kind`` (pyapi's ``New<kind>``): ``record`` None keeps vortex's defaults."""
    return getattr(api, "New" + kind)("" if record is None else json.dumps(record, allow_nan=False))


@native
def _call(f: Callable, *args: Any) -> Any:
    """A Go call whose errors become vortexgo's (for calls among Python code that must not be translated)."""
    return f(*args)


@native
def _fetch(f: Callable[[int, int], int], dtype: Any = np.float64) -> Optional[np.ndarray]:
    """An array result ``f(dst, n)`` in hostmem.Record's convention (written when it fits, its length
    returned either way): asked for its length, then written into a new array; None when ``f`` says -1
    (unknown)."""
    buf = np.empty(0, dtype=dtype)
    while True:
        k = f(buf.ctypes.data, buf.size)
        if k < 0:
            return None
        if k <= buf.size:
            return buf[:k]
        buf = np.empty(k, dtype=dtype)


def _markers(f: Callable[[int, int], int]) -> MarkerList:
    """Markers from ``f(dst, n)`` writing their int64 rows (:func:`_fetch`)."""
    return _from_records(_fetch(f, np.int64).reshape(-1, 8))  # type: ignore[union-attr]


def _segments_of(out: str) -> "SegmentList":
    """Segments from Go's JSON list of them."""
    return _segments(json.loads(out))


# ---------------------------------------------------------------- values


class _Length(float):
    """A float that can also be called: Range.length is vortex's property and was vortexgo's method."""

    def __call__(self) -> float:
        return float(self)


class Range:
    """A closed interval ``[min, max]`` (vortex's ``vortex.Range``); ``min > max`` runs backwards."""

    __slots__ = ("_min", "_max")

    def __init__(self, min: float = 0.0, max: float = 0.0) -> None:  # noqa: A002 - vortex's names
        self.min, self.max = min, max

    @property
    def min(self) -> float:
        """The start of the interval."""
        return self._min

    @min.setter
    def min(self, v: float) -> None:
        # +-inf is vortex's unbounded end (its default Range); a field that needs a
        # finite range says so where the range is used.
        self._min = check_float("Range.min", v, finite=False)

    @property
    def max(self) -> float:
        """The end of the interval."""
        return self._max

    @max.setter
    def max(self, v: float) -> None:
        self._max = check_float("Range.max", v, finite=False)

    @staticmethod
    def symmetric(value: float) -> "Range":
        """``Range(-value, value)``."""
        v = check_float("Range.symmetric(value)", value)
        return Range(-v, v)

    @property
    def length(self) -> float:
        """``max - min`` (negative for a backwards range): a property, as vortex's
        (``r.length``); calling it (``r.length()``, vortexgo's earlier form) works too."""
        return _Length(self._max - self._min)

    def contains(self, value: float) -> bool:
        """True when ``value`` lies within the interval (either direction)."""
        lo, hi = sorted((self._min, self._max))
        return lo <= check_float("value", value) <= hi

    def copy(self) -> "Range":
        """A copy."""
        return Range(self._min, self._max)

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "Range":
        return self.copy()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Range) and (other._min, other._max) == (self._min, self._max)

    def __repr__(self) -> str:
        return f"Range({_num(self._min)}, {_num(self._max)})"

    def _go(self) -> dict:
        return {"Min": self._min, "Max": self._max}

    @staticmethod
    def _from(r: dict) -> "Range":
        return Range(r["Min"], r["Max"])


def _range(name: str, v: Any) -> Range:
    """A finite Range whose length is finite too (positions are computed from it:
    ``Range(-1e308, 1e308)`` would make every position NaN)."""
    if isinstance(v, (tuple, list)) and len(v) == 2:
        v = Range(check_float(f"{name}[0]", v[0]), check_float(f"{name}[1]", v[1]))
    if not isinstance(v, Range):
        raise TypeError(f"{name}={v!r:.60}, expected a vortexgo.Range")
    check_float(f"{name}.min", v.min)
    check_float(f"{name}.max", v.max)
    if not math.isfinite(v.max - v.min) or abs(v.max - v.min) > 1e300:
        raise ValueError(f"{name}={v!r}, expected a range of finite length (|max - min| <= 1e300)")
    return v


class Limits:
    """One axis's motion limits (vortex's ``scan.Limits``): position range, velocity and acceleration."""

    __slots__ = ("_position", "_velocity", "_acceleration")

    def __init__(self, position: Optional[Range] = None, velocity: float = 100.0, acceleration: float = 10_000.0) -> None:
        self.position = Range(-10.0, 10.0) if position is None else position
        self.velocity, self.acceleration = velocity, acceleration

    @property
    def position(self) -> Range:
        """The allowed positions."""
        return self._position

    @position.setter
    def position(self, v: Range) -> None:
        self._position = _range("Limits.position", v)

    @property
    def velocity(self) -> float:
        """The largest speed, units per second."""
        return self._velocity

    @velocity.setter
    def velocity(self, v: float) -> None:
        self._velocity = check_float("Limits.velocity", v)

    @property
    def acceleration(self) -> float:
        """The largest acceleration, units per second squared."""
        return self._acceleration

    @acceleration.setter
    def acceleration(self, v: float) -> None:
        self._acceleration = check_float("Limits.acceleration", v)

    def copy(self) -> "Limits":
        """A copy."""
        return Limits(self._position.copy(), self._velocity, self._acceleration)

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "Limits":
        return self.copy()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Limits) and self._go() == other._go()

    def __repr__(self) -> str:
        return f"Limits(position={self._position!r}, velocity={float(self._velocity)!r}, acceleration={float(self._acceleration)!r})"

    def _go(self) -> dict:
        return {"Position": self._position._go(), "Velocity": self._velocity, "Acceleration": self._acceleration}

    @staticmethod
    def _from(r: dict) -> "Limits":
        return Limits(Range._from(r["Position"]), r["Velocity"], r["Acceleration"])


class _Namespace:
    """A plain module-like namespace (vortex's submodules ``warp``, ``limits``, ``inactive_policy``)."""

    def __init__(self, name: str, **items: Any) -> None:
        self.__name__ = name
        self.__dict__.update(items)

    def __repr__(self) -> str:
        return f"<namespace {self.__name__}: {', '.join(k for k in self.__dict__ if not k.startswith('_'))}>"


# ---------------------------------------------------------------- warps


class _Warp(StrictAttributes):
    """A map between galvo and sample coordinates; waypoints are made in sample coordinates."""

    _kind = 0
    _fields: tuple = ()

    def _go(self) -> dict:
        return {"Kind": self._kind, "Factor": getattr(self, "factor", 0.0),
                "GalvoLensSpacing": getattr(self, "galvo_lens_spacing", 0.0), "Scale": getattr(self, "scale", 0.0)}

    def _map(self, op: str, values: Any) -> Any:
        a = np.asarray(values, dtype=np.float64)
        if a.size > 1 << 24:
            raise ValueError(f"{type(self).__name__}.{op}: {a.size} values, expected at most {1 << 24}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{type(self).__name__}.{op}: values not finite, expected finite positions")
        r = self._go()
        h = _call(api.NewScanWarp, r["Kind"], r["Factor"], r["GalvoLensSpacing"], r["Scale"])
        out = a.flatten()
        if out.size:
            _call(h.Forward if op == "forward" else h.Inverse, out.ctypes.data, out.size)
        return float(out[0]) if a.ndim == 0 else out.reshape(a.shape)

    def forward(self, values: Any) -> Any:
        """Galvo coordinates to sample coordinates (a float or an array of the same shape)."""
        return self._map("forward", values)

    def inverse(self, values: Any) -> Any:
        """Sample coordinates to galvo coordinates."""
        return self._map("inverse", values)

    def copy(self) -> "_Warp":
        """A copy."""
        return _copy.copy(self)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._go() == self._go()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        if not self._fields:
            return type(self).__name__
        return f"{type(self).__name__}({', '.join(f'{f}={_num(getattr(self, f))}' for f in self._fields)})"


class NoWarp(_Warp):
    """Positions pass unchanged."""

    _kind = 0


class Angular(_Warp):
    """Sample angle = galvo angle x ``factor`` (default 2: a mirror doubles the angle)."""

    _kind, _fields = 1, ("factor",)

    def __init__(self, factor: float = 2.0) -> None:
        self.factor = factor

    def __setattr__(self, k: str, v: Any) -> None:
        if k not in self._fields:
            raise unknown_attribute(self, k)
        object.__setattr__(self, k, check_float(f"Angular.{k}", v))


class Telecentric(_Warp):
    """Sample position = ``galvo_lens_spacing`` x tan(galvo angle x ``scale``)."""

    _kind, _fields = 2, ("galvo_lens_spacing", "scale")

    def __init__(self, galvo_lens_spacing: float = 100.0, scale: float = 2 * math.pi / 180) -> None:
        self.galvo_lens_spacing, self.scale = galvo_lens_spacing, scale

    def __setattr__(self, k: str, v: Any) -> None:
        if k not in self._fields:
            raise unknown_attribute(self, k)
        object.__setattr__(self, k, check_float(f"Telecentric.{k}", v))


warp = _Namespace("vortexgo.scan.warp", NoWarp=NoWarp, Angular=Angular, Telecentric=Telecentric)

_WARPS = {0: NoWarp, 1: Angular, 2: Telecentric}


def _warp_from(r: dict) -> _Warp:
    cls = _WARPS[r["Kind"]]
    if cls is Angular:
        return Angular(r["Factor"])
    if cls is Telecentric:
        return Telecentric(r["GalvoLensSpacing"], r["Scale"])
    return NoWarp()


# ---------------------------------------------------------------- inactive policies


class _Policy(StrictAttributes):
    _kind = 0

    def copy(self) -> "_Policy":
        """A copy."""
        return _copy.copy(self)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._go() == self._go()  # type: ignore[attr-defined]

    def _go(self) -> dict:
        return {"Kind": self._kind, "InterSegmentSamples": getattr(self, "inter_segment_samples", 0),
                "InterVolumeSamples": getattr(self, "inter_volume_samples", 0)}


class MinimumDynamicLimited(_Policy):
    """The shortest inactive path within the limits, entering each segment at its velocity (the default)."""

    _kind = 0

    def __repr__(self) -> str:
        return "MinimumDynamicLimited()"


class _Fixed(_Policy):
    def __init__(self, inter_segment_samples: int = 100, inter_volume_samples: int = 100) -> None:
        self.inter_segment_samples, self.inter_volume_samples = inter_segment_samples, inter_volume_samples

    def __setattr__(self, k: str, v: Any) -> None:
        if k not in ("inter_segment_samples", "inter_volume_samples"):
            raise unknown_attribute(self, k)
        object.__setattr__(self, k, check_int(f"{type(self).__name__}.{k}", v, 0, 1 << 27))

    def set_samples(self, samples: int) -> None:
        """Set both lengths."""
        self.inter_segment_samples = self.inter_volume_samples = samples

    def __repr__(self) -> str:
        return f"{type(self).__name__}(inter_segment_samples={self.inter_segment_samples}, inter_volume_samples={self.inter_volume_samples})"


class FixedDynamicLimited(_Fixed):
    """Inactive paths of a fixed number of samples, planned within the limits."""

    _kind = 1


class FixedLinear(_Fixed):
    """Straight lines of a fixed number of samples (ignores velocity and the limits)."""

    _kind = 2


inactive_policy = _Namespace("vortexgo.scan.inactive_policy", MinimumDynamicLimited=MinimumDynamicLimited,
                             FixedDynamicLimited=FixedDynamicLimited, FixedLinear=FixedLinear)
_POLICIES = {0: MinimumDynamicLimited, 1: FixedDynamicLimited, 2: FixedLinear}


def _policy_from(r: dict) -> _Policy:
    cls = _POLICIES[r["Kind"]]
    return cls() if cls is MinimumDynamicLimited else cls(r["InterSegmentSamples"], r["InterVolumeSamples"])


limits = _Namespace("vortexgo.scan.limits",
                    ThorLabs_GVS_5mm=Limits(Range(-12.5, 12.5), 8e3, 5e6),
                    ScannerMax_Saturn_5B=Limits(Range(-27.5, 27.5), 80e3, 25e6))

# ---------------------------------------------------------------- repeat strategies


class _Repeat:
    _kind = 0

    def __init__(self, flags: Optional[Flags] = None) -> None:
        self.flags = Flags.all() if flags is None else flags

    def __setattr__(self, k: str, v: Any) -> None:
        if k != "flags":
            raise unknown_attribute(self, k)
        if not isinstance(v, Flags):
            raise TypeError(f"{type(self).__name__}.{k}={v!r}, expected a vortexgo.marker.Flags")
        object.__setattr__(self, k, v)

    def copy(self) -> "_Repeat":
        """A copy."""
        return type(self)(_copy.copy(self.flags))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._go() == self._go()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(flags={self.flags!r})"

    def _go(self) -> dict:
        return {"Kind": self._kind, "Flags": self.flags.value, "FlagList": None}


class RepeatOrder(_Repeat):
    """Repeats stored in acquisition order (ABCABC), each marked with ``flags``."""

    _kind = 0


class RepeatPack(_Repeat):
    """A segment's repeats stored together (AABBCC), each marked with ``flags`` (the default)."""

    _kind = 1


class RepeatFlags(_Repeat):
    """Repeat i marked with ``flags[i]`` and stored in the same place (route repeats by flags)."""

    _kind = 2

    def __init__(self, flags: Optional[Iterable[Flags]] = None) -> None:
        self.flags = FlagsList() if flags is None else flags

    def __setattr__(self, k: str, v: Any) -> None:
        if k != "flags":
            raise unknown_attribute(self, k)
        items = list(v) if isinstance(v, (list, tuple)) else None
        if items is None or not all(isinstance(f, Flags) for f in items):
            raise TypeError(f"RepeatFlags.{k}={v!r}, expected a list of vortexgo.marker.Flags")
        object.__setattr__(self, k, FlagsList(items))

    def copy(self) -> "RepeatFlags":
        return RepeatFlags([_copy.copy(f) for f in self.flags])

    def _go(self) -> dict:
        return {"Kind": 2, "Flags": 0, "FlagList": [f.value for f in self.flags]}


def _repeat_from(r: dict) -> _Repeat:
    if r["Kind"] == 2:
        return RepeatFlags([Flags(v) for v in r["FlagList"] or []])
    return (RepeatOrder if r["Kind"] == 0 else RepeatPack)(Flags(r["Flags"]))


# ---------------------------------------------------------------- segments


def _positions(name: str, v: Any, channels: Optional[int] = None, empty: bool = False) -> np.ndarray:
    """``v`` as a (samples, channels) float64 copy; ``empty`` allows zero samples (a Segment holds
    them, as vortex's; the scan that plays it refuses them)."""
    a = np.array(v, dtype=np.float64, copy=True)
    least = 0 if empty else 1
    if a.ndim != 2 or a.shape[0] < least or not 1 <= a.shape[1] <= 64 or (channels and a.shape[1] != channels):
        raise ValueError(f"{name}: shape {a.shape}, expected (samples >= {least}, channels in 1..64)")
    if a.size > 1 << 27 or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected at most 2**27 finite values")
    return a


class Segment(StrictAttributes):
    """One active segment (vortex's ``scan.Segment``): sample positions and the markers starting it.

    A new segment holds no samples (``position`` is an empty ``(0, 2)`` array), as vortex's; a
    ``(0, channels)`` array may be assigned too. A scan refuses a segment without samples where it
    is used (``initialize``, or a change of its segments), naming the segment."""

    def __init__(self) -> None:
        self._position = np.zeros((0, 2))
        self.entry_delta: Optional[np.ndarray] = None
        self.exit_delta: Optional[np.ndarray] = None
        self._markers = MarkerList()

    @property
    def position(self) -> np.ndarray:
        """The (samples, channels) float64 positions (``(0, 2)`` in a new segment)."""
        return self._position

    @position.setter
    def position(self, v: Any) -> None:
        self._position = _positions("Segment.position", v, empty=True)

    @property
    def markers(self) -> MarkerList:
        """Markers at the segment's start (samples relative to its first sample)."""
        return self._markers

    @markers.setter
    def markers(self, v: Iterable) -> None:
        self._markers = MarkerList(v)

    @property
    def entry_position(self) -> np.ndarray:
        """The first sample's position (vortex's read-only property); VortexError without samples."""
        return self._end(0, "entry")

    @property
    def exit_position(self) -> np.ndarray:
        """The last sample's position (vortex's read-only property); VortexError without samples."""
        return self._end(-1, "exit")

    def _end(self, i: int, which: str) -> np.ndarray:
        if len(self._position) == 0:
            raise VortexError(f"Segment.position: no samples, cannot take the {which} position")
        return self._position[i].copy()

    def _delta(self, d: Optional[np.ndarray], a: int, b: int) -> np.ndarray:
        if d is not None:
            return np.asarray(d, dtype=np.float64)
        if len(self._position) < 2:
            raise ValueError("Segment: fewer than two samples and no delta, expected entry_delta/exit_delta or two samples")
        return self._position[b] - self._position[a]

    def entry_velocity(self, samples_per_second: float) -> np.ndarray:
        """The velocity entering the segment (``entry_delta`` or the first difference) x rate."""
        return self._delta(self.entry_delta, 0, 1) * check_float("samples_per_second", samples_per_second, 0)

    def exit_velocity(self, samples_per_second: float) -> np.ndarray:
        """The velocity leaving the segment x rate."""
        return self._delta(self.exit_delta, -2, -1) * check_float("samples_per_second", samples_per_second, 0)

    def copy(self) -> "Segment":
        """A deep copy."""
        return _copy.deepcopy(self)

    def __repr__(self) -> str:
        n, ch = self._position.shape
        return f"Segment({n} samples x {ch} channels, {len(self._markers)} markers)"

    def _go(self, name: str) -> dict:
        # an empty position goes to Go, whose scan refuses it naming the segment (vortex's check)
        p = _positions(f"{name}.position", self._position, empty=True)
        deltas = []
        for k in ("entry_delta", "exit_delta"):
            d = getattr(self, k)
            deltas.append(None if d is None else np.asarray(d, dtype=np.float64).ravel().tolist())
        return {"Position": p.ravel().tolist(), "Channels": p.shape[1], "EntryDelta": deltas[0],
                "ExitDelta": deltas[1], "Markers": _to_records(self._markers).tolist()}

    @staticmethod
    def _from(w: dict) -> "Segment":
        s = Segment()
        ch = w["Channels"]
        s._position = np.asarray(w["Position"] or [], dtype=np.float64).reshape(-1, ch)  # null: no samples
        s.entry_delta = None if w["EntryDelta"] is None else np.asarray(w["EntryDelta"], dtype=np.float64)
        s.exit_delta = None if w["ExitDelta"] is None else np.asarray(w["ExitDelta"], dtype=np.float64)
        s._markers = _from_records(np.asarray(w["Markers"] or [], dtype=np.int64).reshape(-1, 8))
        return s


class SegmentList(ValueList):
    """A list of :class:`Segment` (vortex's ``scan.SegmentList``)."""

    def __repr__(self) -> str:
        return f"SegmentList({list.__repr__(self)})"


def _segments(ws: Optional[list]) -> SegmentList:
    return SegmentList(Segment._from(w) for w in ws or [])


# ---------------------------------------------------------------- config fields


class _Field:
    """A typed config attribute stored under its Go field name (gosrc/scan's structs)."""

    def __init__(self, go: str, check: Callable[[str, Any], Any], default: Callable[[], Any],
                 to_go: Callable[[Any], Any] = lambda v: v, from_go: Callable[[Any], Any] = lambda v: v,
                 doc: str = "") -> None:
        self.go, self.check, self.default, self.to_go, self.from_go = go, check, default, to_go, from_go
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        return self if obj is None else obj._v[self.name]

    def __set__(self, obj: Any, v: Any) -> None:
        obj._v[self.name] = self.check(f"{type(obj).__name__}.{self.name}", v)


def _int(lo: int = 0) -> Callable[[str, Any], int]:
    return lambda n, v: check_int(n, v, lo, INT64_MAX)


def _float(n: str, v: Any) -> float:
    return check_float(n, v)


def _offset(n: str, v: Any) -> np.ndarray:
    if not isinstance(v, (list, tuple, np.ndarray)):
        raise TypeError(f"{n}={v!r}, expected two finite numbers (x, y)")
    try:
        a = np.array(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{n}={v!r}, expected two finite numbers (x, y)") from None
    if a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{n}={v!r}, expected two finite numbers (x, y)")
    return a


def _instance(cls: type, what: str) -> Callable[[str, Any], Any]:
    def check(n: str, v: Any) -> Any:
        if not isinstance(v, cls):
            raise TypeError(f"{n}={v!r}, expected {what}")
        return v
    return check


def _limits_list(n: str, v: Any) -> list:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, Limits) for x in v):
        raise TypeError(f"{n}={v!r}, expected a list of vortexgo.scan.Limits")
    if len(v) > 64:
        raise ValueError(f"{n}: {len(v)} limits, expected one per channel (at most 64)")
    return list(v)


def _pattern_list(n: str, v: Any) -> SegmentList:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, Segment) for x in v):
        raise TypeError(f"{n}={v!r}, expected a list of vortexgo.scan.Segment")
    return SegmentList(v)


def _xy_fields(volume: Callable[[], Range], segment: Callable[[], Range], shape: tuple[int, int]) -> dict:
    return dict(
        offset=_Field("Offset", _offset, lambda: np.zeros(2), lambda a: [float(a[0]), float(a[1])], np.asarray,
                      "The scan's origin (x, y)."),
        angle=_Field("Angle", _float, lambda: 0.0, doc="Rotation about ``offset``, radians counter-clockwise."),
        volume_extent=_Field("VolumeExtent", _range, volume, Range._go, Range._from,
                             "The range crossed from segment to segment (``extents[0]``)."),
        segment_extent=_Field("SegmentExtent", _range, segment, Range._go, Range._from,
                              "The range each segment crosses (``extents[1]``, alias ``bscan_extent``)."),
        segments_per_volume=_Field("SegmentsPerVolume", _int(), lambda: shape[0],
                                   doc="Segments per volume (``shape[0]``, alias ``bscans_per_volume``)."),
        samples_per_segment=_Field("SamplesPerSegment", _int(), lambda: shape[1],
                                   doc="Samples per segment (``shape[1]``, alias ``ascans_per_bscan``)."),
        warp=_Field("Warp", _instance(_Warp, "a vortexgo.scan.warp (NoWarp, Angular, Telecentric)"), NoWarp,
                    lambda w: w._go(), _warp_from, "Maps the waypoints into galvo coordinates."),
    )


class _alias:
    """vortex's second name of a field; errors name the one used."""

    def __init__(self, target: str, doc: str) -> None:
        self.target, self.__doc__ = target, doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        return self if obj is None else obj._v[self.target]

    def __set__(self, obj: Any, v: Any) -> None:
        f = getattr(type(obj), self.target)
        obj._v[self.target] = f.check(f"{type(obj).__name__}.{self.name}", v)


class _Configurable(StrictAttributes):
    """Attributes from _Field descriptors; copy, equality, vortex's repr, the Go record."""

    _kind = ""
    _extras: tuple = ()

    def __init__(self, **fields: Any) -> None:
        self._v: Dict[str, Any] = {f.name: f.default() for f in self._fields()}
        if self._kind:  # the Go core's defaults (vortex's), so the two never drift apart
            self._load(json.loads(_call(_config(self._kind).JSON)))
        for k, v in fields.items():
            if not hasattr(type(self), k) or k.startswith("_"):
                raise TypeError(f"{type(self).__name__}: unknown field {k!r}")
            setattr(self, k, v)

    @classmethod
    def _fields(cls) -> List[_Field]:
        seen: Dict[str, _Field] = {}
        for c in reversed(cls.__mro__):
            for k, v in vars(c).items():
                if isinstance(v, _Field):
                    seen[k] = v
                elif k in seen:  # a subclass without the field (RepeatedPattern's flags)
                    del seen[k]
        return list(seen.values())

    def copy(self):
        """A deep copy (vortex's ``copy()``)."""
        return _copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and json.dumps(self._record()) == json.dumps(other._record())  # type: ignore[attr-defined]

    def _record(self) -> dict:
        """The JSON record of gosrc/scan's struct (Go field names)."""
        return {f.go: f.to_go(self._v[f.name]) for f in self._fields()}

    def _load(self, r: dict) -> None:
        for f in self._fields():
            if f.go in r:
                self._v[f.name] = f.check(f"{type(self).__name__}.{f.name}", f.from_go(r[f.go]))

    def _repr_items(self) -> List[tuple[str, Any]]:
        names = {f.name for f in self._fields()} | set(self._extras)
        items = []
        for k in sorted(names):
            v = getattr(self, k)
            if isinstance(v, np.ndarray):
                v = "[" + ", ".join(_num(x) for x in v) + "]"
            elif isinstance(v, bool):
                v = "true" if v else "false"
            elif isinstance(v, float):
                v = _num(v) if k == "angle" else repr(v)
            elif isinstance(v, Segment) or isinstance(v, list) and v and isinstance(v[0], Segment):
                v = f"[{len(v)} segments]"
            items.append((k, v))
        return items

    def __repr__(self) -> str:
        body = ",\n  ".join(f"{k}={v!s}" if isinstance(v, str) else f"{k}={v!r}" for k, v in self._repr_items())
        return f"{type(self).__name__}({body}\n)"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


class _XY(_Configurable):
    bscan_extent = _alias("segment_extent", "vortex's alias of ``segment_extent``.")
    ascans_per_bscan = _alias("samples_per_segment", "vortex's alias of ``samples_per_segment``.")
    bscans_per_volume = _alias("segments_per_volume", "vortex's alias of ``segments_per_volume``.")
    _extras = ("bscan_extent", "ascans_per_bscan", "bscans_per_volume", "extents", "shape")

    @property
    def extents(self) -> List[Range]:
        """``[volume_extent, segment_extent]``."""
        return [self.volume_extent, self.segment_extent]

    @extents.setter
    def extents(self, v: Sequence[Range]) -> None:
        if not isinstance(v, (list, tuple)) or len(v) != 2:
            raise TypeError(f"{type(self).__name__}.extents={v!r}, expected [volume_extent, segment_extent]")
        self.volume_extent, self.segment_extent = v

    @property
    def shape(self) -> List[int]:
        """``[segments_per_volume, samples_per_segment]``."""
        return [self.segments_per_volume, self.samples_per_segment]

    @shape.setter
    def shape(self, v: Sequence[int]) -> None:
        if not isinstance(v, (list, tuple)) or len(v) != 2:
            raise TypeError(f"{type(self).__name__}.shape={v!r}, expected [segments_per_volume, samples_per_segment]")
        self.segments_per_volume, self.samples_per_segment = v

    def _go_kind(self) -> str:
        return self._kind

    def to_waypoints(self) -> np.ndarray:
        """The (segments, samples, 2) positions of every active sample, after the inverse warp."""
        buf = _fetch(_config(self._go_kind(), self._record()).ToWaypoints)
        return buf.reshape(self.segments_per_volume, self.samples_per_segment, 2)  # type: ignore[union-attr]

    def _set(self, method: str, *args: Any) -> None:
        """Run the Go config's setter ``method`` and load the fields it set."""
        h = _config(self._go_kind(), self._record())
        _call(getattr(h, method), *args)
        self._load(json.loads(_call(h.JSON)))


def _xy_class(name: str, doc: str, kind: str, fields: dict, base: type = _XY, extra: Optional[dict] = None) -> type:
    ns: Dict[str, Any] = {"__doc__": doc, "_kind": kind, "__module__": __name__}
    ns.update(fields)
    ns.update(extra or {})
    return type(name, (base,), ns)


XYWaypoints = _xy_class("XYWaypoints", "A 2D grid of waypoints: offset, angle, extents, shape and warp.",
                        "RasterScanConfig", _xy_fields(lambda: Range(-1, 1), lambda: Range(-2, 2), (10, 500)))
RasterWaypoints = _xy_class(
    "RasterWaypoints", "Segments along y, stepping along x (vortex's defaults: 10 x 500 over [-1, 1] x [-2, 2]).",
    "RasterScanConfig", {}, XYWaypoints)


class RadialWaypoints(XYWaypoints):  # type: ignore[misc, valid-type]
    """Segments along the radius (segment_extent), stepping in angle (volume_extent, radians)."""

    _kind = "RadialScanConfig"

    def set_half_evenly_spaced(self, n: int) -> None:
        """``n`` segments evenly over half a turn (crossing the origin, they cover the disc once)."""
        self._set("SetHalfEvenlySpaced", check_int("n", n, 1, 1 << 27))

    def set_evenly_spaced(self, n: int) -> None:
        """``n`` segments evenly over a full turn."""
        self._set("SetEvenlySpaced", check_int("n", n, 1, 1 << 27))

    def set_aiming(self) -> None:
        """Two orthogonal segments (an aiming cross)."""
        self._set("SetAiming")


class SpiralWaypoints(XYWaypoints):  # type: ignore[misc, valid-type]
    """An Archimedean spiral from inner_radius to outer_radius, timed at constant angular
    velocity, constant linear velocity, or the hybrid of both."""

    _kind = "SpiralScanConfig"
    angular_velocity = _Field("AngularVelocity", _float, lambda: 0.0, doc="CAV rate, radians per second.")
    linear_velocity = _Field("LinearVelocity", _float, lambda: 0.0, doc="CLV rate, units per second.")
    acceleration_limit = _Field("AccelerationLimit", _float, lambda: 0.0, doc="Slows a CLV spiral near its centre when > 0.")
    rings_per_spiral = _Field("RingsPerSpiral", _int(), lambda: 10, doc="Number of turns.")
    _extras = _XY._extras + ("inner_radius", "outer_radius", "radial_pitch")

    inner_radius = property(lambda self: self.volume_extent.min,
                            lambda self, v: setattr(self.volume_extent, "min", v), doc="``volume_extent.min``.")
    outer_radius = property(lambda self: self.volume_extent.max,
                            lambda self, v: setattr(self.volume_extent, "max", v), doc="``volume_extent.max``.")

    @property
    def radial_pitch(self) -> float:
        """Radius gained per ring."""
        return (self.outer_radius - self.inner_radius) / self.rings_per_spiral if self.rings_per_spiral else math.inf

    def set_isotropic(self, samples_per_second: int) -> None:
        """A CLV spiral whose samples are as far apart along the path as the rings are apart."""
        self._set("SetIsotropic", check_int("samples_per_second", samples_per_second, 1))

    def set_hybrid(self, samples_per_second: int) -> None:
        """Size the segment of a hybrid (CAV inside, CLV outside) spiral."""
        self._set("SetHybrid", check_int("samples_per_second", samples_per_second, 1))


# ---------------------------------------------------------------- patterns


def _waypoint_list(waypoints: Any) -> tuple[List[np.ndarray], int]:
    if isinstance(waypoints, np.ndarray) and waypoints.ndim == 3:
        segs = list(waypoints)
    elif isinstance(waypoints, (list, tuple)):
        segs = list(waypoints)
    else:
        raise TypeError(f"waypoints={waypoints!r}, expected a (segments, samples, channels) array or a list of (samples, channels) arrays")
    arrays = [_positions(f"waypoints[{i}]", w) for i, w in enumerate(segs)]
    if sum(a.size for a in arrays) > 1 << 27:
        raise ValueError("waypoints: more than 2**27 values")
    chans = {a.shape[1] for a in arrays}
    if len(chans) > 1:
        raise ValueError(f"waypoints: segments of {sorted(chans)} channels, expected one channel count")
    return [a.ravel() for a in arrays], (chans.pop() if chans else 2)


class _Pattern(_Configurable):
    bidirectional_segments = _Field("BidirectionalSegments", check_bool, lambda: False, doc="Reverse every other segment.")

    def to_pattern(self, waypoints: Any) -> SegmentList:
        """The segments of one scan from one volume's waypoints (e.g. ``to_waypoints()``)."""
        wps, ch = _waypoint_list(waypoints)
        values = np.concatenate(wps) if wps else np.zeros(0)
        lens = np.array([w.size for w in wps], dtype=np.int64)
        h = _config(self._kind, self._record())
        return _segments_of(_call(h.ToPattern, values.ctypes.data, values.size, lens.ctypes.data, lens.size, ch))


class SequentialPattern(_Pattern):
    """Segments in order; ``bidirectional_segments`` reverses every other one, ``bidirectional_volumes``
    appends the volume backwards; ``flags`` mark its boundary markers."""

    _kind = "SequentialPattern"
    bidirectional_volumes = _Field("BidirectionalVolumes", check_bool, lambda: False, doc="Append the volume in reverse.")
    flags = _Field("Flags", _instance(Flags, "a vortexgo.marker.Flags"), Flags.all, lambda f: f.value, Flags,
                   "Flags of the boundary markers.")


class RepeatedPattern(_Pattern):
    """Groups of ``repeat_period`` segments, each group played ``repeat_count`` times
    (stored per ``repeat_strategy``)."""

    _kind = "RepeatedPattern"
    repeat_period = _Field("RepeatPeriod", _int(), lambda: 2, doc="Segments played in order before repeating.")
    repeat_count = _Field("RepeatCount", _int(), lambda: 3, doc="Times each group is played.")
    repeat_strategy = _Field("RepeatStrategy", _instance(_Repeat, "RepeatOrder, RepeatPack or RepeatFlags"),
                             RepeatPack, lambda r: r._go(), _repeat_from, "Where repeats go and how they are flagged.")


# ---------------------------------------------------------------- scan configs

_LIMITS = _Field("Limits", _limits_list, lambda: [limits.ThorLabs_GVS_5mm.copy(), limits.ThorLabs_GVS_5mm.copy()],
                 lambda ls: [x._go() for x in ls], lambda ls: [Limits._from(x) for x in ls], "One Limits per channel.")
_SEGMENTED = dict(
    channels_per_sample=_Field("ChannelsPerSample", _int(), lambda: 2, doc="Values per sample, 2 (x and y)."),
    samples_per_second=_Field("SamplesPerSecond", _int(), lambda: 100_000, doc="Output rate."),
    loop=_Field("Loop", check_bool, lambda: True, doc="Restart the scan when it completes."),
    consolidate=_Field("Consolidate", check_bool, lambda: False, doc="vortex's buffer consolidation (no effect here)."),
    limits=_LIMITS,
    bypass_limits_check=_Field("BypassLimitsCheck", check_bool, lambda: False, doc="Skip the active segments' check."),
    inactive_policy=_Field("InactivePolicy", _instance(_Policy, "a vortexgo.scan.inactive_policy"),
                           MinimumDynamicLimited, lambda p: p._go(), _policy_from, "How segments are joined."),
)


class _ScanConfig(_Configurable):
    @property
    def sampling_interval(self) -> float:
        """``1 / samples_per_second``."""
        return 1.0 / self.samples_per_second if self.samples_per_second else math.inf

    def validate(self) -> None:
        """Validate in Go: ``ValueError`` naming the first bad field (``initialize`` does the same)."""
        _call(_config(self._kind, self._record()).Validate)

    def to_segments(self) -> SegmentList:
        """The pattern's active segments."""
        return _segments_of(_call(_config(self._kind, self._record()).ToSegments))


def _config_class(name: str, waypoints: Optional[type], pattern: type, doc: str) -> type:
    ns: Dict[str, Any] = {"__doc__": doc, "_kind": name, "__module__": __name__}
    ns.update(_SEGMENTED)
    bases = (_ScanConfig,) + ((waypoints,) if waypoints else ()) + (pattern,)
    cls = type(name, bases, ns)
    cls._extras = tuple(getattr(waypoints, "_extras", ())) + ("sampling_interval",)
    return cls


RasterScanConfig = _config_class("RasterScanConfig", RasterWaypoints, SequentialPattern,
                                 "vortex's RasterScanConfig: RasterWaypoints, SequentialPattern and the segmented scan's fields.")
RepeatedRasterScanConfig = _config_class("RepeatedRasterScanConfig", RasterWaypoints, RepeatedPattern,
                                         "vortex's RepeatedRasterScanConfig: RasterWaypoints and RepeatedPattern.")
RadialScanConfig = _config_class("RadialScanConfig", RadialWaypoints, SequentialPattern,
                                 "vortex's RadialScanConfig: RadialWaypoints and SequentialPattern.")
RepeatedRadialScanConfig = _config_class("RepeatedRadialScanConfig", RadialWaypoints, RepeatedPattern,
                                         "vortex's RepeatedRadialScanConfig: RadialWaypoints and RepeatedPattern.")
SpiralScanConfig = _config_class("SpiralScanConfig", SpiralWaypoints, SequentialPattern,
                                 "vortex's SpiralScanConfig: SpiralWaypoints and SequentialPattern.")


class FreeformScanConfig(_ScanConfig):
    """vortex's FreeformScanConfig: the segments themselves (``pattern``, e.g. from
    ``SequentialPattern().to_pattern(waypoints)``) and the segmented scan's fields."""

    _kind = "FreeformScanConfig"
    locals().update(_SEGMENTED)
    pattern = _Field("Pattern", _pattern_list, SegmentList, lambda ss: [s._go(f"FreeformScanConfig.pattern[{i}]") for i, s in enumerate(ss)],
                     _segments, "The active segments, played in order.")
    _extras = ("sampling_interval",)


# ---------------------------------------------------------------- scans


class _Scan(NoCopy, StrictAttributes):
    """A segmented scan (vortex's ``*Scan``): ``initialize(config)``, then ``next`` or ``scan_buffer``."""

    _config_cls: type = object
    _kind = ""

    def __init__(self) -> None:
        self._h = _call(getattr(api, "New" + self._kind))
        self._config = self._config_cls()

    def _check_config(self, config: Any) -> Any:
        if not isinstance(config, self._config_cls):
            raise TypeError(f"config={config!r:.80}, expected a {self._config_cls.__name__}")
        return config

    @property
    def config(self) -> Any:
        """A copy of the active config."""
        return self._config.copy()

    def initialize(self, config: Any) -> None:
        """Validate ``config`` (``ValueError`` naming the field), build its pattern and restart at the origin."""
        cfg = self._check_config(config).copy()
        _call(self._h.Initialize, json.dumps(cfg._record(), allow_nan=False))
        self._config = cfg

    def change(self, config: Any, restart: bool = False, event_id: int = 0) -> None:
        """Switch to ``config`` without a discontinuity: the segment being played finishes, then an
        inactive path leads into the new pattern (at its first segment when ``restart``); an Event
        marker with ``event_id`` marks where. On error nothing changes."""
        cfg = self._check_config(config).copy()
        rec = json.dumps(cfg._record(), allow_nan=False)
        _call(self._h.Change, rec, check_bool("restart", restart), _signed(check_int("event_id", event_id, 0, _U64)))
        self._config = cfg

    def restart(self, sample: Optional[int] = None, position: Any = None, velocity: Any = None,
                include_start: bool = True) -> None:
        """Start again at sample 0 from the origin at rest, or continue from ``(sample, position, velocity)``."""
        if sample is None:
            _call(self._h.Restart)
            return
        ch = self._config.channels_per_sample
        p, v = (np.asarray(x, dtype=np.float64).ravel() for x in (position, velocity))
        if p.shape != (ch,) or v.shape != (ch,) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
            raise ValueError(f"restart: position and velocity of {p.size} and {v.size} values, expected {ch} finite each")
        _call(self._h.RestartAt, check_int("sample", sample, 0), p.ctypes.data, p.size, v.ctypes.data, v.size,
              check_bool("include_start", include_start))

    def prepare(self, count: Optional[int] = None) -> None:
        """Buffer the whole pass (or ``count`` samples ahead), so that ``next`` allocates nothing."""
        if count is None:
            _call(self._h.Prepare)
        else:
            _call(self._h.PrepareCount, check_int("count", count, 0, 1 << 27))

    def next(self, markers: Any, buffer: Any = None) -> Any:
        """Fill ``buffer`` (a C-contiguous float64 array of shape (n, channels_per_sample)) with the next
        n samples and append their markers to ``markers``; returns the samples written (fewer than n
        when a scan without ``loop`` ends). vortex's one-argument form ``next(buffer)`` returns
        ``(count, markers)``."""
        if buffer is None:
            ms = MarkerList()
            return self.next(ms, markers), ms
        if not isinstance(markers, list):
            raise TypeError(f"markers={markers!r:.60}, expected a vortexgo.marker.MarkerList")
        ch = self._config.channels_per_sample
        if not isinstance(buffer, np.ndarray):
            raise TypeError(f"buffer={type(buffer).__name__}, expected a numpy.ndarray of float64")
        if buffer.dtype != np.float64 or buffer.ndim != 2 or buffer.shape[1] != ch:
            raise ValueError(f"buffer: {buffer.dtype} array of shape {buffer.shape}, expected float64 of shape (n, {ch})")
        if not buffer.flags.c_contiguous or not buffer.flags.writeable:
            raise ValueError("buffer: expected a writeable C-contiguous array (numpy.ascontiguousarray)")
        h = self._h
        count = _call(h.Next, buffer.ctypes.data if buffer.size else 0, buffer.size, buffer.shape[0])
        ms = _markers(h.Markers)
        if ms:
            markers.extend(ms)
        return count

    def scan_buffer(self) -> np.ndarray:
        """One whole pass of the pattern: (samples, channels) float64."""
        buf = _fetch(self._h.ScanBuffer)
        return buf.reshape(-1, self._h.Channels())  # type: ignore[union-attr]

    def scan_markers(self) -> MarkerList:
        """The markers of one pass, samples counted from its first sample."""
        return _markers(self._h.ScanMarkers)

    def scan_segments(self) -> SegmentList:
        """The active segments of the pattern."""
        return _segments_of(_call(self._h.ScanSegments))

    def __repr__(self) -> str:
        c = self._config
        shape = f" {c.bscans_per_volume} x {c.ascans_per_bscan}" if hasattr(c, "bscans_per_volume") else \
            f" {len(c.pattern)} segments"
        bi = ", bidirectional" if getattr(c, "bidirectional_segments", False) else ""
        loop = ", loop" if c.loop else ""
        return f"<{type(self).__name__}{shape}{bi}{loop} at {c.samples_per_second} samples/s>"


def _scan_class(name: str, cfg: type) -> type:
    return type(name, (_Scan,), {"__doc__": f"vortex's {name}: a segmented scan of a {cfg.__name__}.",
                                 "_config_cls": cfg, "_kind": name, "__module__": __name__})


RasterScan = _scan_class("RasterScan", RasterScanConfig)
RepeatedRasterScan = _scan_class("RepeatedRasterScan", RepeatedRasterScanConfig)
RadialScan = _scan_class("RadialScan", RadialScanConfig)
RepeatedRadialScan = _scan_class("RepeatedRadialScan", RepeatedRadialScanConfig)
SpiralScan = _scan_class("SpiralScan", SpiralScanConfig)
FreeformScan = _scan_class("FreeformScan", FreeformScanConfig)

# ---------------------------------------------------------------- scan queue


class _QueueEvent(int):
    _names = ("Start", "Finish", "Interrupt", "Abort")

    def __repr__(self) -> str:
        return f"ScanQueue.Event.{self._names[self]}"

    __str__ = __repr__


class ScanQueue(NoCopy, StrictAttributes):
    """Scans played one after another (vortex's ``engine.ScanQueue``): each starts from where the
    previous left off (its path in is planned from the last position and velocity), so appending or
    interrupting never jumps; an empty queue holds its last position.

    Callbacks ``callback(sample, event)`` and ``empty_callback(online_queue)`` are Python: the Go queue
    never calls them (DESIGN.md 1). It records each event as (token, sample, event); after every call
    this class takes them (``Events``) and runs the callbacks, on the calling thread, as vortex does:
    Interrupt and Abort on the thread that interrupts or clears; Start and Finish on the thread that
    generates (an engine's dispatcher while an engine plays the queue).
    ``generate`` runs ``empty_callback`` between Go calls whenever the queue ran dry part way.
    """

    Event = _Namespace("ScanQueue.Event", **{n: _QueueEvent(i) for i, n in enumerate(_QueueEvent._names)})

    def __init__(self, sample: Optional[int] = None, position: Any = None, velocity: Any = None) -> None:
        if sample is None:
            self._h = _call(api.NewScanQueue)
        else:
            s = check_int("sample", sample, 0)
            p, v = self._state("ScanQueue", position, velocity)
            self._h = _call(api.NewScanQueueAt, s, p.ctypes.data, p.size, v.ctypes.data, v.size)
        # Serialises the Go calls with the callbacks they return, so that the
        # callbacks run in the order the queue recorded them whichever thread
        # (the caller's, the engine's dispatcher) drained them; reentrant for
        # a callback that calls the queue.
        self._lock = threading.RLock()
        self._callbacks: Dict[int, Callable] = {}
        self._scans: Dict[int, Any] = {}  # the Python scans the Go queue plays, kept alive with it
        self._next_token = 1
        self._events = np.empty(3 * 64, dtype=np.int64)  # (token, sample, event) rows taken from Go
        self.empty_callback: Optional[Callable] = None

    @staticmethod
    def _state(what: str, position: Any, velocity: Any) -> tuple[np.ndarray, np.ndarray]:
        p, v = (np.asarray(x, dtype=np.float64).ravel() for x in (position, velocity))
        if p.shape != v.shape or not 1 <= p.size <= 64 or not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
            raise ValueError(f"{what}: position and velocity of {p.size} and {v.size} values, expected one finite value per channel each")
        return p, v

    @property
    def empty_callback(self) -> Optional[Callable]:
        """Called as ``empty_callback(online_queue)`` when ``generate`` finds the queue empty; it may append."""
        return self._empty

    @empty_callback.setter
    def empty_callback(self, f: Optional[Callable]) -> None:
        self._empty = check_callable("ScanQueue.empty_callback", f)
        # An engine playing the queue waits for the callback when it runs dry
        # (gosrc/scan ScanQueue.SetEmptyWanted); without one it never waits.
        self._run(self._h.SetEmptyWanted, f is not None)

    def _run(self, f: Callable, *args: Any) -> Any:
        """The Go call ``f(*args)``, then the callbacks of the events it recorded (and any before them)."""
        with self._lock:
            res = _call(f, *args)
            self._dispatch(engine=False)
            return res

    def _dispatch(self, engine: bool = True) -> None:
        """Take the recorded events from Go and run their callbacks, in order (under ``_lock``).
        ``engine`` False (after a caller's own call) takes them only through the last Interrupt or
        Abort, leaving the Start and Finish an engine's Generate recorded after them to the engine's
        dispatcher thread: vortex fires those on its Generate thread, never on the interrupting one."""
        buf = self._events
        while True:
            k = self._h.Events(buf.ctypes.data, buf.size, engine)
            # a list first: a callback that calls the queue reuses the buffer
            for token, sample, event in buf[:k].reshape(-1, 3).tolist():
                cb = self._callbacks.get(token)
                if event in (1, 3):  # Finish or Abort: the scan has left the queue
                    self._callbacks.pop(token, None)
                    self._scans.pop(token, None)
                if cb is not None:
                    cb(sample, _QueueEvent(event))
            if k < buf.size:
                return

    def _add(self, f: Callable, scan: Any, callback: Optional[Callable], marker: Optional[ScanBoundary]) -> None:
        if not isinstance(scan, _Scan):
            raise TypeError(f"scan={scan!r:.60}, expected a vortexgo.scan scan (RasterScan ... FreeformScan)")
        check_callable("callback", callback)
        row = np.zeros(0, dtype=np.int64)  # none: Go's default ScanBoundary
        if marker is not None:
            if not isinstance(_check_marker("marker", marker), ScanBoundary):
                raise TypeError(f"marker={marker!r}, expected a vortexgo.marker.ScanBoundary")
            row = _to_records([marker])[0]
        token = self._next_token
        self._next_token += 1
        self._callbacks[token] = callback  # type: ignore[assignment]
        self._scans[token] = scan
        try:
            self._run(f, scan._h, token, row.ctypes.data if row.size else 0, row.size)
        except BaseException:
            self._callbacks.pop(token, None)
            self._scans.pop(token, None)
            raise

    def append(self, scan: Any, callback: Optional[Callable] = None, marker: Optional[ScanBoundary] = None) -> None:
        """Queue ``scan`` after the others; ``callback(sample, event)`` hears its Start, Finish,
        Interrupt and Abort; ``marker`` is the ScanBoundary it starts with."""
        self._add(self._h.Append, scan, callback, marker)

    def interrupt(self, scan: Any, callback: Optional[Callable] = None, marker: Optional[ScanBoundary] = None) -> None:
        """Drop the active and queued scans and play ``scan`` next, from where the stream is."""
        self._add(self._h.Interrupt, scan, callback, marker)

    def poll_events(self) -> None:
        """Run the callbacks of events recorded while something else (the engine's Generate stage)
        played the queue; every other call does this too."""
        with self._lock:
            self._dispatch()

    def clear(self) -> None:
        """Drop the active and queued scans (their callbacks hear Abort)."""
        self._run(self._h.Clear)

    def reset(self, sample: Optional[int] = None, position: Any = None, velocity: Any = None) -> None:
        """Clear, and restart at sample 0 with the state unknown (or at ``(sample, position, velocity)``)."""
        if sample is None:
            self._run(self._h.Reset)
        else:
            s = check_int("sample", sample, 0)
            p, v = self._state("reset", position, velocity)
            self._run(self._h.ResetAt, s, p.ctypes.data, p.size, v.ctypes.data, v.size)

    def state(self) -> tuple:
        """``(sample, position, velocity)``; position and velocity None when unknown."""
        with self._lock:
            h = self._h
            state = (_call(h.Sample), _fetch(h.Position), _fetch(h.Velocity))
            self._dispatch(engine=False)
        return state

    def generate(self, markers: Any, buffer: np.ndarray, zero_order_hold: bool = True) -> tuple[int, int]:
        """Fill ``buffer`` ((n, channels) float64, C-contiguous) from the queued scans and append their
        markers; when the queue runs dry, ``empty_callback`` may append more, else ``zero_order_hold``
        holds the last position. Returns ``(scan_samples, samples_written)`` as vortex does."""
        if not isinstance(markers, list):
            raise TypeError(f"markers={markers!r:.60}, expected a vortexgo.marker.MarkerList")
        if not isinstance(buffer, np.ndarray) or buffer.dtype != np.float64 or buffer.ndim != 2 \
                or not 1 <= buffer.shape[1] <= 64 or not buffer.flags.c_contiguous or not buffer.flags.writeable:
            raise ValueError(f"buffer: expected a writeable C-contiguous float64 array of shape (n, channels), "
                             f"got {getattr(buffer, 'dtype', type(buffer).__name__)} {getattr(buffer, 'shape', '')}")
        zoh = check_bool("zero_order_hold", zero_order_hold)
        n = buffer.shape[0]
        done = scanned = 0
        for _ in range(n + 1):  # every pass but the last releases a sample or ends the loop
            if done >= n:
                break
            hold = zoh if self._empty is None else False
            samples, released = self._generate(markers, buffer[done:], hold)
            scanned += samples
            done += released
            if done >= n or self._empty is None:
                break
            before = self._next_token
            self._empty(_OnlineScanQueue(self))
            if self._next_token == before:  # nothing appended: hold (or leave) the rest
                if zoh:
                    done += self._generate(markers, buffer[done:], True)[1]
                break
        return scanned, done

    def _generate(self, markers: list, view: np.ndarray, hold: bool) -> tuple[int, int]:
        """One Go generate into ``view``: its markers appended, then ``(scan_samples, samples_written)``."""
        with self._lock:
            h = self._h
            released = _call(h.Generate, view.ctypes.data, view.size, view.shape[1], hold)
            samples, ms = h.ScanSamples(), _markers(h.Markers)  # this call's, before a callback generates
            self._dispatch()
        if ms:
            markers.extend(ms)
        return samples, released

    def __repr__(self) -> str:
        sample, pos, _ = self.state()
        return f"<ScanQueue at sample {sample}, {len(self._scans)} scan(s) held, position {None if pos is None else pos.tolist()}>"


class _OnlineScanQueue:
    """The queue as its ``empty_callback`` sees it: it can only append (vortex's OnlineScanQueue)."""

    def __init__(self, q: ScanQueue) -> None:
        self._q = q

    def append(self, scan: Any, callback: Optional[Callable] = None, marker: Optional[ScanBoundary] = None) -> None:
        """Queue ``scan`` (see :meth:`ScanQueue.append`)."""
        self._q.append(scan, callback, marker)


ScanQueue.OnlineScanQueue = _OnlineScanQueue  # type: ignore[attr-defined]
