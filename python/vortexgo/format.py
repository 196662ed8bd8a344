"""Formatting: placing processed A-scans into volumes (vortex's ``vortex.format``).

vortex's wiring: the engine's scan queue generates each block's markers, a
:class:`FormatPlanner` (``EngineConfig.add_formatter(planner, endpoints)``)
turns them into a format plan, and every endpoint executes the plan with its
executor (:class:`StackFormatExecutor`, :class:`RadialFormatExecutor`,
:class:`SpiralFormatExecutor`, :class:`PositionFormatExecutor`) on its stream.
"""

from __future__ import annotations

import copy as _copy
import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

from ._attrs import NoCopy, StrictAttributes, ValueList
from ._core import api
from ._validate import check_bool, check_float, check_int
from .log import is_logger
from ._errors import native
from .scan import Range

__all__ = ["FormatPlan", "Copy", "Resize", "FinishSegment", "FinishVolume", "FinishScan", "BroctFormatExecutor",
           "SampleSlice", "SimpleSlice", "NullSlice", "NullTransform", "LinearTransform",
           "StackFormatExecutorConfig", "StackFormatExecutor", "FormatPlannerConfig", "FormatPlanner",
           "RadialFormatExecutorConfig", "RadialFormatExecutor", "SpiralFormatExecutorConfig", "SpiralFormatExecutor",
           "PositionFormatExecutorConfig", "PositionFormatExecutor"]


def _reinit(h: Any, new: Any, record: dict) -> Any:
    """The Go object for ``record``: a new one (``new``, one of pyapi's constructors), or ``h``
    re-initialized in place (vortex's ``initialize`` on an object an endpoint or engine
    configuration was built with, which then sees the new configuration). InUseError while an
    engine that is not closed uses it."""
    if h is None:
        return native(new)(json.dumps(record))
    native(h.Initialize)(json.dumps(record))
    return h


@dataclass
class SampleSlice:
    """Keep samples ``start, start+step, ...`` below ``stop`` of each A-scan (vortex's
    ``SimpleSlice(start, stop, step)``); ``stop=None`` keeps through the end. Its fields
    are read-write as vortex's; each change is checked as the constructor checks them
    (a refused change leaves the slice as it was)."""

    start: int = 0
    stop: Optional[int] = None
    step: int = 1

    def __post_init__(self) -> None:
        self._check()

    def __setattr__(self, name: str, value: object) -> None:
        if name not in ("start", "stop", "step"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r} (it has start, stop, step)")
        if "step" not in self.__dict__:  # the dataclass __init__ filling the fields in
            object.__setattr__(self, name, value)
            return
        old = self.__dict__[name]
        object.__setattr__(self, name, value)
        try:
            self._check()
        except BaseException:
            object.__setattr__(self, name, old)
            raise

    def _check(self) -> None:
        d = self.__dict__
        d["start"] = check_int("SampleSlice.start", self.start, 0)
        d["step"] = check_int("SampleSlice.step", self.step, 1)
        if self.stop is not None:
            d["stop"] = check_int("SampleSlice.stop", self.stop)
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"SampleSlice.stop={self.stop}, expected None or > start ({self.start})")

    def count(self) -> int:
        """vortex's ``count()``: ``(stop - start) // step`` (needs ``stop``)."""
        if self.stop is None:
            raise ValueError("SampleSlice.count: stop=None, expected a stop")
        return (self.stop - self.start) // self.step

    def _record(self) -> dict:
        if self.stop is None:
            if (self.start, self.step) != (0, 1):
                raise ValueError(f"{self!r}: stop=None with start or step, expected a stop (SimpleSlice(start, stop, step))")
            return {"Simple": False}
        return {"Simple": True, "Start": self.start, "Stop": self.stop, "Step": self.step}

    def copy(self) -> "SampleSlice":
        """An equal, independent slice (vortex's ``copy()``)."""
        return _copy.copy(self)

    def resolve(self, samples: int) -> tuple[int, int]:
        """The half-open range kept of an A-scan of ``samples`` samples."""
        stop = samples if self.stop is None or self.stop > samples else self.stop
        return min(self.start, stop), stop


@dataclass(init=False)
class SimpleSlice(SampleSlice):
    """vortex's ``SimpleSlice``, with its constructor: ``SimpleSlice(stop)`` keeps
    samples ``[0, stop)``, ``SimpleSlice(start, stop)`` and
    ``SimpleSlice(start, stop, step)`` as Python's ``slice``; ``SimpleSlice()``
    keeps every sample (vortex's is an empty slice there, which its ``count()``
    divides by zero on). Read-write as vortex's."""

    def __init__(self, *args: int) -> None:
        if len(args) > 3:
            raise TypeError(f"SimpleSlice takes at most 3 arguments (start, stop, step), got {len(args)}")
        if len(args) == 1:
            args = (0, args[0])
        super().__init__(*args)


@dataclass(init=False, repr=False, eq=False)
class NullSlice(SampleSlice):
    """vortex's ``NullSlice()``: every sample (the default ``sample_slice``); it has no fields to set."""

    def __init__(self) -> None:
        super().__init__()

    def __setattr__(self, name: str, value: object) -> None:
        if "step" in self.__dict__:
            raise AttributeError(f"NullSlice has no field {name!r} to set: every sample is kept "
                                 "(SimpleSlice(start, stop, step) keeps a range)")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return "NullSlice"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SampleSlice) and (other.start, other.stop, other.step) == (0, None, 1)

    def __hash__(self) -> int:
        return hash((0, None, 1))


@dataclass(frozen=True)
class NullTransform:
    """vortex's ``NullTransform()``: samples unchanged."""

    def copy(self) -> "NullTransform":
        """An equal transform (vortex's ``copy()``)."""
        return NullTransform()

    def __repr__(self) -> str:
        return "NullTransform"

    def _record(self) -> dict:
        return {"Linear": False}


@dataclass(slots=True)  # read-write as vortex's, no stray attributes
class LinearTransform:
    """vortex's ``LinearTransform(scale, offset)``: ``scale * x + offset``."""

    scale: float = 1.0
    offset: float = 0.0

    def copy(self) -> "LinearTransform":
        """An equal transform (vortex's ``copy()``)."""
        return LinearTransform(self.scale, self.offset)

    def _record(self) -> dict:
        return {"Linear": True, "Scale": check_float("LinearTransform.scale", self.scale),
                "Offset": check_float("LinearTransform.offset", self.offset)}


@dataclass
class StackFormatExecutorConfig(StrictAttributes):
    """Configuration of a :class:`StackFormatExecutor` (vortex's fields).

    Attributes:
        sample_slice: the samples kept (:class:`SimpleSlice`); default :class:`NullSlice` keeps all.
        sample_transform: :class:`NullTransform` (default) or :class:`LinearTransform`.
        erase_after_volume: vortex's field (vortex 0.5.1 never reads it).
    """

    sample_slice: SampleSlice = field(default_factory=NullSlice)
    sample_transform: Union[NullTransform, LinearTransform] = field(default_factory=NullTransform)
    erase_after_volume: bool = False

    def _record(self) -> dict:
        if not isinstance(self.sample_slice, SampleSlice):
            raise TypeError(f"sample_slice={self.sample_slice!r}, expected a SimpleSlice or NullSlice()")
        if not isinstance(self.sample_transform, (NullTransform, LinearTransform)):
            raise TypeError(f"sample_transform={self.sample_transform!r}, expected a NullTransform or LinearTransform")
        return {"SampleSlice": self.sample_slice._record(), "SampleTransform": self.sample_transform._record(),
                "EraseAfterVolume": check_bool("erase_after_volume", self.erase_after_volume)}

    def copy(self) -> "StackFormatExecutorConfig":
        """An independent copy (vortex's ``copy()``); ``copy.copy``/``deepcopy``/pickle work too."""
        return _copy.deepcopy(self)


class StackFormatExecutor(NoCopy, StrictAttributes):
    """Places the planner's copies into ``(segments, records, samples)`` volumes (vortex's
    executor): ``StackFormatExecutor(); sfe.initialize(config)`` or ``StackFormatExecutor(config)``."""

    def __init__(self, config: Optional[StackFormatExecutorConfig] = None, **fields: Any) -> None:
        self._h = None
        self._config = StackFormatExecutorConfig()
        if config is not None or fields:
            self.initialize(config, **fields)

    @native
    def initialize(self, config: Optional[StackFormatExecutorConfig] = None, **fields: Any) -> None:
        """Validate and adopt ``config``; ``fields`` override its attributes."""
        if config is not None and not isinstance(config, StackFormatExecutorConfig):
            raise TypeError(f"config={config!r}, expected a StackFormatExecutorConfig")
        cfg = dataclasses.replace(config) if config is not None else StackFormatExecutorConfig()
        for k, v in fields.items():
            if not hasattr(cfg, k):
                raise TypeError(f"StackFormatExecutor: unknown field {k!r}")
            setattr(cfg, k, v)
        self._h = _reinit(self._h, api.NewStackFormatExecutor, cfg._record())
        self._config = cfg

    @property
    def config(self) -> StackFormatExecutorConfig:
        """The adopted configuration (vortex's read-only ``config``; ``initialize`` changes it)."""
        return self._config

    def _handle(self):
        if self._h is None:
            raise ValueError("StackFormatExecutor is not initialized, expected initialize(config) first")
        return self._h

    def __repr__(self) -> str:
        if self._h is None:
            return "<StackFormatExecutor (not initialized)>"
        return f"<StackFormatExecutor {self.config.sample_slice!r} {self.config.sample_transform!r}>"


class _Executor(NoCopy, StrictAttributes):
    """Base of the geometry executors: ``X(); x.initialize(config)`` or ``X(config)``."""

    _config_cls: type = object

    def __init__(self, config: Any = None, logger: Any = None) -> None:
        self._h = None
        if is_logger(config):  # vortex's X(logger); x.initialize(x.config)
            config, logger = None, config
        self.logger = logger
        self._config = self._config_cls()
        if config is not None:
            self.initialize(config)

    @property
    def config(self) -> Any:
        """The adopted configuration (vortex's read-only ``config``; ``initialize`` changes it)."""
        return self._config

    @native
    def initialize(self, config: Any) -> None:
        """Validate and adopt ``config`` (ValueError naming the field)."""
        if not isinstance(config, self._config_cls):
            raise TypeError(f"config={config!r}, expected a {self._config_cls.__name__}")
        self._h = _reinit(self._h, self._new_go, config._record())
        self._config = config.copy()

    def _new_go(self, record: str) -> Any:  # pragma: no cover - abstract
        """The Go object of this class from its config record."""
        raise NotImplementedError

    def _handle(self):
        if self._h is None:
            raise ValueError(f"{type(self).__name__} is not initialized, expected initialize(config) first")
        return self._h

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'initialized' if self._h is not None else '(not initialized)'}>"


def _as_range(name: str, v: Any) -> Range:
    """``v`` (a Range or a (min, max) pair) as a Range; errors name the field."""
    if isinstance(v, Range):
        return v
    if isinstance(v, (tuple, list)) and len(v) == 2:
        return Range(check_float(f"{name}.min", v[0]), check_float(f"{name}.max", v[1]))
    raise TypeError(f"{name}={v!r:.60}, expected a vortexgo.scan.Range or a (min, max) pair")


def _rng(name: str, v: Any) -> dict:
    r = _as_range(name, v)
    if not (math.isfinite(r.min) and math.isfinite(r.max)):
        raise ValueError(f"{name}={r!r}, expected finite ends (vortex's default Range(-inf, inf) means unset: "
                         f"set {name.rpartition('.')[2]})")
    lo, hi = r.min, r.max
    # The kernels compute pitches as float32 (vortex's): a length beyond it is inf.
    if not math.isfinite(hi - lo) or abs(hi - lo) > 3.4e38:
        raise ValueError(f"{name}={r!r}, expected a range whose length is a finite float32 (|max - min| <= 3.4e38)")
    return {"Min": lo, "Max": hi}


def _pair(name: str, v: Any, what: str) -> tuple:
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != 2:
        raise TypeError(f"{name}={v!r:.60}, expected {what}")
    return tuple(v)


def _unbounded() -> Range:
    """vortex's default extent, ``Range(-inf, inf)``: unset, refused by ``initialize``."""
    return Range(-math.inf, math.inf)


class _XYExtent:
    """``volume_xy_extent``: vortex's pair ``(x_extent, y_extent)``, stored as the two fields."""

    @property
    def volume_xy_extent(self) -> tuple:
        """``(x_extent, y_extent)``: the Cartesian volume's extents (vortex's field; the two
        are its accessors)."""
        return (self.x_extent, self.y_extent)  # type: ignore[attr-defined]

    @volume_xy_extent.setter
    def volume_xy_extent(self, v: Any) -> None:
        x, y = _pair(f"{type(self).__name__}.volume_xy_extent", v, "(x_extent, y_extent), two Ranges")
        self.x_extent, self.y_extent = x, y  # type: ignore[attr-defined]


@dataclass
class RadialFormatExecutorConfig(_XYExtent, StackFormatExecutorConfig):
    """vortex's ``RadialFormatExecutorConfig``: radial segments (lines through the origin at
    angles across ``angular_extent``, records across ``radial_extent``) rectified onto an
    ``(x, y)`` grid spanning ``x_extent`` x ``y_extent``.

    vortex's paired fields work too: ``volume_xy_extent = (x_extent, y_extent)``,
    ``segment_rt_extent = (radial_extent, angular_extent)`` and ``radial_shape =
    (radial_segments_per_volume, radial_records_per_segment)``. Extents are Ranges (a
    ``(min, max)`` pair is taken as one).

    Defaults are vortex's: every extent ``Range(-inf, inf)`` and both counts 0, i.e.
    unset: ``initialize`` refuses them naming the field until they are set.
    """

    x_extent: Any = field(default_factory=_unbounded)
    y_extent: Any = field(default_factory=_unbounded)
    radial_extent: Any = field(default_factory=_unbounded)
    angular_extent: Any = field(default_factory=_unbounded)
    radial_segments_per_volume: int = 0
    radial_records_per_segment: int = 0

    @property
    def segment_rt_extent(self) -> tuple:
        """``(radial_extent, angular_extent)``: the scan's extents (vortex's field)."""
        return (self.radial_extent, self.angular_extent)

    @segment_rt_extent.setter
    def segment_rt_extent(self, v: Any) -> None:
        r, t = _pair("RadialFormatExecutorConfig.segment_rt_extent", v, "(radial_extent, angular_extent), two Ranges")
        self.radial_extent, self.angular_extent = r, t

    @property
    def radial_shape(self) -> tuple:
        """``(radial_segments_per_volume, radial_records_per_segment)`` (vortex's field)."""
        return (self.radial_segments_per_volume, self.radial_records_per_segment)

    @radial_shape.setter
    def radial_shape(self, v: Any) -> None:
        a, b = _pair("RadialFormatExecutorConfig.radial_shape", v,
                     "(radial_segments_per_volume, radial_records_per_segment)")
        self.radial_segments_per_volume, self.radial_records_per_segment = a, b

    def _record(self) -> dict:
        r = super()._record()
        n = "RadialFormatExecutorConfig."
        r.update({"VolumeXYExtent": [_rng(n + "x_extent", self.x_extent), _rng(n + "y_extent", self.y_extent)],
                  "SegmentRTExtent": [_rng(n + "radial_extent", self.radial_extent),
                                      _rng(n + "angular_extent", self.angular_extent)],
                  "RadialShape": [check_int(n + "radial_segments_per_volume", self.radial_segments_per_volume, 1),
                                  check_int(n + "radial_records_per_segment", self.radial_records_per_segment, 1)]})
        return r


@dataclass
class SpiralFormatExecutorConfig(_XYExtent, StackFormatExecutorConfig):
    """vortex's ``SpiralFormatExecutorConfig``: an Archimedean spiral of ``rings_per_spiral``
    rings across ``radial_extent``, ``samples_per_spiral`` samples at ``spiral_velocity``,
    rectified onto an ``(x, y)`` grid.

    vortex's paired fields work too: ``volume_xy_extent = (x_extent, y_extent)``,
    ``segment_extent`` (the same Range as ``radial_extent``) and ``spiral_shape =
    (rings_per_spiral, samples_per_spiral)``.

    Defaults are vortex's (unset): extents ``Range(-inf, inf)``, counts 0 and
    ``spiral_velocity`` 0; ``initialize`` refuses them naming the field.
    """

    x_extent: Any = field(default_factory=_unbounded)
    y_extent: Any = field(default_factory=_unbounded)
    radial_extent: Any = field(default_factory=_unbounded)
    rings_per_spiral: int = 0
    samples_per_spiral: int = 0
    spiral_velocity: float = 0.0

    @property
    def segment_extent(self) -> Any:
        """vortex's field behind ``radial_extent`` (one Range, two names)."""
        return self.radial_extent

    @segment_extent.setter
    def segment_extent(self, v: Any) -> None:
        self.radial_extent = v

    @property
    def spiral_shape(self) -> tuple:
        """``(rings_per_spiral, samples_per_spiral)`` (vortex's field)."""
        return (self.rings_per_spiral, self.samples_per_spiral)

    @spiral_shape.setter
    def spiral_shape(self, v: Any) -> None:
        a, b = _pair("SpiralFormatExecutorConfig.spiral_shape", v, "(rings_per_spiral, samples_per_spiral)")
        self.rings_per_spiral, self.samples_per_spiral = a, b

    def _record(self) -> dict:
        r = super()._record()
        n = "SpiralFormatExecutorConfig."
        r.update({"VolumeXYExtent": [_rng(n + "x_extent", self.x_extent), _rng(n + "y_extent", self.y_extent)],
                  "SegmentExtent": _rng(n + "radial_extent", self.radial_extent),
                  "SpiralShape": [check_int(n + "rings_per_spiral", self.rings_per_spiral, 1),
                                  check_int(n + "samples_per_spiral", self.samples_per_spiral, 1)],
                  "SpiralVelocity": check_float(n + "spiral_velocity", self.spiral_velocity)})
        return r


@dataclass
class PositionFormatExecutorConfig(StackFormatExecutorConfig):
    """vortex's ``PositionFormatExecutorConfig``: each A-scan lands where its galvo position maps
    through ``transform`` (2x3); ``use_target_position`` picks the commanded position over the
    measured one; ``channels`` are the position channels holding x and y."""

    transform: Any = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    use_target_position: bool = True
    channels: Sequence[int] = (0, 1)

    def set(self, pitch: Sequence[float] = (1, 1), offset: Sequence[float] = (0, 0), angle: float = 0) -> None:
        """vortex's ``set(pitch, offset, angle)``: rotate by ``angle``, scale by ``pitch``, then offset."""
        s, c = math.sin(angle), math.cos(angle)
        self.transform = ((pitch[0] * c, -pitch[0] * s, offset[0]), (pitch[1] * s, pitch[1] * c, offset[1]))

    def _record(self) -> dict:
        r = super()._record()
        try:
            rows = [list(row) for row in self.transform]
        except TypeError:
            raise TypeError(f"PositionFormatExecutorConfig.transform={self.transform!r:.60}, expected 2x3 numbers") from None
        if len(rows) != 2 or any(len(row) != 3 for row in rows):
            raise ValueError(f"PositionFormatExecutorConfig.transform={self.transform!r:.60}, expected 2x3 numbers")
        t = [[check_float("PositionFormatExecutorConfig.transform", v) for v in row] for row in rows]
        ch = _pair("PositionFormatExecutorConfig.channels", self.channels, "two position channels (x, y)")
        r.update({"Transform": t, "UseTargetPosition": check_bool("use_target_position", self.use_target_position),
                  "Channels": [check_int("PositionFormatExecutorConfig.channels[0]", ch[0], 0, 1 << 20),
                               check_int("PositionFormatExecutorConfig.channels[1]", ch[1], 0, 1 << 20)]})
        return r


class RadialFormatExecutor(_Executor):
    """vortex's ``RadialFormatExecutor`` (for :class:`~vortexgo.endpoint.RadialDeviceTensorEndpointInt8` and its siblings)."""

    _config_cls = RadialFormatExecutorConfig

    def _new_go(self, record: str) -> Any:
        return api.NewRadialFormatExecutor(record)


class SpiralFormatExecutor(_Executor):
    """vortex's ``SpiralFormatExecutor`` (for the spiral device tensor endpoints)."""

    _config_cls = SpiralFormatExecutorConfig

    def _new_go(self, record: str) -> Any:
        return api.NewSpiralFormatExecutor(record)


class PositionFormatExecutor(_Executor):
    """vortex's ``PositionFormatExecutor`` (for :class:`~vortexgo.endpoint.PositionDeviceTensorEndpointInt8` and its siblings)."""

    _config_cls = PositionFormatExecutorConfig

    def _new_go(self, record: str) -> Any:
        return api.NewPositionFormatExecutor(record)


#: vortex's "unset" planner size (the largest size_t): a volume that never wraps, a segment never cut.
UNSET = (1 << 64) - 1


def _all_flags() -> Any:
    from .marker import Flags

    return Flags.all()


@dataclass
class FormatPlannerConfig(StrictAttributes):
    """vortex's ``FormatPlannerConfig``: the volume the planner fills and how.

    ``segments_per_volume`` and ``records_per_segment`` (together ``shape``) default to vortex's
    "unset" (``2**64 - 1``): the planner then never wraps the volume's segments nor cuts a
    segment's records, as vortex's; an endpoint built with its own ``shape`` sets the volume.
    ``mask`` (a :class:`~vortexgo.marker.Flags`, default all) filters boundaries and events by
    their flags; ``flip_reversed`` loads reversed segments back to front; ``strip_inactive``
    drops inactive records; ``adapt_shape`` grows the shape instead of truncating.
    """

    segments_per_volume: int = UNSET
    records_per_segment: int = UNSET
    mask: Any = field(default_factory=_all_flags)
    flip_reversed: bool = True
    strip_inactive: bool = True
    adapt_shape: bool = False

    @property
    def shape(self) -> list:
        """``[segments_per_volume, records_per_segment]`` (vortex's field)."""
        return [self.segments_per_volume, self.records_per_segment]

    @shape.setter
    def shape(self, v: Sequence[int]) -> None:
        self.segments_per_volume, self.records_per_segment = _pair(
            "FormatPlannerConfig.shape", v, "(segments_per_volume, records_per_segment)")

    def copy(self) -> "FormatPlannerConfig":
        """An independent copy (vortex's ``copy()``); ``copy.copy``/``deepcopy``/pickle work too."""
        return _copy.deepcopy(self)

    def _record(self) -> dict:
        mask = getattr(self.mask, "value", self.mask)  # a marker.Flags or an int

        def dim(name: str, v: Any) -> int:
            if isinstance(v, int) and not isinstance(v, bool) and v == UNSET:
                return -1  # vortex's unset size: pyapi plans it unbounded
            return check_int(f"FormatPlannerConfig.{name}", v, 1, 1 << 31)

        return {"Shape": [dim("segments_per_volume", self.segments_per_volume),
                          dim("records_per_segment", self.records_per_segment)],
                "Mask": check_int("FormatPlannerConfig.mask", mask, 0, (1 << 64) - 1),
                "FlipReversed": check_bool("flip_reversed", self.flip_reversed),
                "StripInactive": check_bool("strip_inactive", self.strip_inactive),
                "AdaptShape": check_bool("adapt_shape", self.adapt_shape)}


class _Action(StrictAttributes):
    """Base of the format plan's actions: value objects compared field by field (vortex's ``==``)."""

    _fields: tuple = ()

    def __init__(self, **kw: Any) -> None:
        for k in self._fields:
            setattr(self, k, kw.pop(k, False if k == "reverse" else 0))
        if kw:
            raise TypeError(f"{type(self).__name__}: unknown field {next(iter(kw))!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k) for k in self._fields)

    __hash__ = None  # type: ignore[assignment] - mutable, as vortex's

    def copy(self) -> "_Action":
        """An equal, independent action."""
        return _copy.deepcopy(self)

    def __repr__(self) -> str:
        def show(v: Any) -> str:
            return ("true" if v else "false") if isinstance(v, bool) else str(v)

        return f"{type(self).__name__}({', '.join(f'{k}={show(getattr(self, k))}' for k in self._fields)})"


class Copy(_Action):
    """vortex's ``format.Copy``: load ``count`` records from block record ``block_offset`` into
    segment ``buffer_segment`` of the volume from record ``buffer_record`` (back to front when
    ``reverse``)."""

    _fields = ("count", "block_offset", "buffer_segment", "buffer_record", "reverse")
    count: int
    block_offset: int
    buffer_segment: int
    buffer_record: int
    reverse: bool

    def __init__(self) -> None:
        super().__init__()


class Resize(_Action):
    """vortex's ``format.Resize``: the planner grew the volume to ``shape`` (``adapt_shape``)."""

    def __init__(self) -> None:
        self.shape = [0, 0]

    @property
    def segments_per_volume(self) -> int:
        """``shape[0]``."""
        return self.shape[0]

    @segments_per_volume.setter
    def segments_per_volume(self, v: int) -> None:
        self.shape = [v, self.shape[1]]

    @property
    def records_per_segment(self) -> int:
        """``shape[1]``."""
        return self.shape[1]

    @records_per_segment.setter
    def records_per_segment(self, v: int) -> None:
        self.shape = [self.shape[0], v]

    def __eq__(self, other: object) -> bool:
        return type(other) is Resize and list(self.shape) == list(other.shape)  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Resize(segments_per_volume={self.shape[0]}, records_per_segment={self.shape[1]})"


class FinishSegment(_Action):
    """vortex's ``format.FinishSegment``: segment ``segment_index_buffer`` of volume ``volume_index``
    of scan ``scan_index`` is complete at ``sample``."""

    _fields = ("sample", "scan_index", "volume_index", "segment_index_buffer")
    sample: int
    scan_index: int
    volume_index: int
    segment_index_buffer: int

    def __init__(self) -> None:
        super().__init__()


class FinishVolume(_Action):
    """vortex's ``format.FinishVolume``: volume ``volume_index`` of scan ``scan_index`` is complete."""

    _fields = ("sample", "scan_index", "volume_index")
    sample: int
    scan_index: int
    volume_index: int

    def __init__(self) -> None:
        super().__init__()


class FinishScan(_Action):
    """vortex's ``format.FinishScan``: scan ``scan_index`` is complete at ``sample``."""

    _fields = ("sample", "scan_index")
    sample: int
    scan_index: int

    def __init__(self) -> None:
        super().__init__()


class _Event(_Action):
    """An Event marker passed through to the endpoints (vortex's plan carries it; vortex's Python
    names no class for it)."""

    _fields = ("sample", "id")
    sample: int
    id: int

    def __repr__(self) -> str:
        return f"Event(sample={self.sample}, id={self.id})"


_ACTIONS = (Copy, Resize, FinishSegment, FinishVolume, FinishScan, _Event)


class FormatPlan(ValueList):
    """vortex's ``format.FormatPlan``: the list of actions (:class:`Copy`, :class:`Resize`,
    :class:`FinishSegment`, :class:`FinishVolume`, :class:`FinishScan`) a planner makes of one
    block. :meth:`FormatPlanner.next` returns one; :meth:`execute` carries its copies out with an
    executor, as the engine's endpoints do."""

    def __init__(self, actions: Any = ()) -> None:
        super().__init__()
        for a in actions:
            self.append(a)

    def _check(self, a: Any) -> Any:
        if not isinstance(a, _ACTIONS):
            raise TypeError(f"FormatPlan: {a!r:.60}, expected a Copy, Resize, FinishSegment, FinishVolume or FinishScan")
        return a

    def append(self, a: Any) -> None:  # type: ignore[override]
        list.append(self, self._check(a))

    def insert(self, i: Any, a: Any) -> None:  # type: ignore[override]
        list.insert(self, i, self._check(a))

    def extend(self, items: Any) -> None:  # type: ignore[override]
        list.extend(self, [self._check(a) for a in items])

    def __setitem__(self, i: Any, v: Any) -> None:  # type: ignore[override]
        if isinstance(i, slice):
            list.__setitem__(self, i, [self._check(a) for a in v])
        else:
            list.__setitem__(self, i, self._check(v))

    def __repr__(self) -> str:
        return "FormatPlan[" + ", ".join(repr(a) for a in self) + "]"

    def execute(self, executor: Any, volume: Any, block: Any, *, sample_target: Any = None,
                sample_actual: Any = None) -> None:
        """Carry out the plan's :class:`Copy` actions (vortexgo's, the engine endpoints' loop):
        each copies ``block[block_offset:block_offset+count]`` into ``volume`` with ``executor``'s
        ``format`` (radial, spiral, position) or, for a :class:`StackFormatExecutor`, into
        ``volume[buffer_segment, buffer_record:buffer_record+count]`` with its sample slice and
        transform. Notifications and resizes are the caller's. ``block``: (records, samples);
        the position executor also takes the block's ``sample_target``/``sample_actual`` rows."""
        import numpy as np

        for a in self:
            if not isinstance(a, Copy):
                continue
            seg = block[a.block_offset:a.block_offset + a.count]
            if isinstance(executor, PositionFormatExecutor):
                executor.format(volume, sample_target[a.block_offset:a.block_offset + a.count],
                                sample_actual[a.block_offset:a.block_offset + a.count], seg, a.buffer_segment,
                                a.buffer_record, a.reverse)
            elif isinstance(executor, (RadialFormatExecutor, SpiralFormatExecutor)):
                executor.format(volume, seg, a.buffer_segment, a.buffer_record, a.reverse)
            elif isinstance(executor, StackFormatExecutor):
                cfg = executor.config
                lo, hi = cfg.sample_slice.resolve(seg.shape[1])
                rows = np.asarray(seg)[:, lo:hi:cfg.sample_slice.step]
                if a.reverse:
                    rows = rows[::-1]
                if isinstance(cfg.sample_transform, LinearTransform):
                    rows = rows * cfg.sample_transform.scale + cfg.sample_transform.offset
                volume[a.buffer_segment, a.buffer_record:a.buffer_record + a.count, :rows.shape[1]] = rows
            else:
                raise TypeError(f"FormatPlan.execute: executor={executor!r:.60}, expected a format executor")


def _plan(record: str) -> FormatPlan:
    plan = FormatPlan()
    for r in json.loads(record) or ():
        kind = r["Kind"]
        if kind == 1:
            a: Any = Copy()
            a.count, a.block_offset, a.buffer_segment, a.buffer_record, a.reverse = (
                r["Count"], r["BlockOffset"], r["BufferSegment"], r["BufferRecord"], bool(r["Reverse"]))
        elif kind == 2:
            a = Resize()
            a.shape = list(r["Shape"])
        elif kind in (3, 4, 5):
            a = (FinishSegment, FinishVolume, FinishScan)[kind - 3]()
            a.sample, a.scan_index = r["Sample"], r["ScanIndex"]
            if kind != 5:
                a.volume_index = r["VolumeIndex"]
            if kind == 3:
                a.segment_index_buffer = r["SegmentIndexBuffer"]
        else:
            a = _Event()
            a.sample, a.id = r["Sample"], r["ID"]
        list.append(plan, a)
    return plan


class FormatPlanner(_Executor):
    """vortex's ``FormatPlanner``: turns each block's markers into the format plan that
    ``EngineConfig.add_formatter(planner, endpoints)``'s endpoints execute. :meth:`next` and
    :meth:`finish` (vortexgo's; vortex's C++ names) hand the plans to Python."""

    _config_cls = FormatPlannerConfig

    def _new_go(self, record: str) -> Any:
        return api.NewFormatPlanner(record)

    @native
    def reset(self) -> None:
        """Forget the segment, volume and scan in progress, as at the start of a stream
        (vortex's ``reset``). The planner keeps its state across engine sessions (as
        vortex's): reset it before starting a session that begins a new scan."""
        self._handle().Reset()

    @native
    def next(self, block_sample: int, block_length: int, markers: Any) -> FormatPlan:
        """The plan of one block: ``block_length`` records from ``block_sample`` with its
        ``markers`` (a :class:`~vortexgo.marker.MarkerList` or list, sorted by sample, within the
        block), as the engine plans each block (vortex's C++ ``next``)."""
        from .marker import _to_records

        rows = _to_records(markers).tolist()
        return _plan(self._handle().Next(check_int("block_sample", block_sample, 0),
                                         check_int("block_length", block_length, 0, 1 << 31), json.dumps(rows)))

    @native
    def finish(self) -> FormatPlan:
        """The notifications still pending at the end of the stream (vortex's C++ ``finish``)."""
        return _plan(self._handle().Finish())

    @property
    def segments_per_volume(self) -> int:
        """The planner's segments per volume (``2**64 - 1``: unset)."""
        return self.config.segments_per_volume

    @property
    def records_per_segment(self) -> int:
        """The planner's records per segment (``2**64 - 1``: unset)."""
        return self.config.records_per_segment


class BroctFormatExecutor(StackFormatExecutor):
    """vortex's ``BroctFormatExecutor``: a :class:`StackFormatExecutor` for
    :class:`~vortexgo.endpoint.BroctStorageEndpoint` (BROCT files store each B-scan transposed,
    which the BROCT storage does as it writes)."""


def _host(name: str, a: Any, ndim: tuple) -> tuple:
    """(numpy array, device original or None) for a format() buffer; C-contiguous host memory."""
    import numpy as np

    dev = None
    if hasattr(a, "__cuda_array_interface__") and not isinstance(a, np.ndarray):
        if not hasattr(a, "get"):
            raise TypeError(f"format: {name} is a device array without .get(), expected a NumPy or CuPy array")
        dev, a = a, a.get()
    if not isinstance(a, np.ndarray):
        raise TypeError(f"format: {name}={a!r:.60}, expected a NumPy or CuPy array")
    if a.ndim not in ndim:
        raise ValueError(f"format: {name} has shape {a.shape}, expected {' or '.join(str(n) for n in ndim)} dimensions")
    return a, dev


def _format(x: "_Executor", volume_buffer: Any, segment_buffer: Any, segment_index: int, record_index: int,
            reverse: bool, target: Any = None, actual: Any = None) -> None:
    import numpy as np

    vol, vdev = _host("volume_buffer", volume_buffer, (3, 4))
    seg, _ = _host("segment_buffer", segment_buffer, (2, 3))
    if vdev is None and not vol.flags.c_contiguous:
        raise ValueError("format: volume_buffer is not C-contiguous, expected a contiguous (x, y, samples) array")
    work = vol if vdev is None else np.ascontiguousarray(vol)
    seg = np.ascontiguousarray(seg)
    v4 = tuple(work.shape) + ((1,) if work.ndim == 3 else ())
    s3 = tuple(seg.shape) + ((1,) if seg.ndim == 2 else ())
    pos = [0, 0]
    pr = pc = 0
    keep = []
    if target is not None:
        t = np.ascontiguousarray(_host("sample_target", target, (2,))[0], dtype=np.float64)
        a = np.ascontiguousarray(_host("sample_actual", actual, (2,))[0], dtype=np.float64)
        if t.shape != a.shape:
            raise ValueError(f"format: sample_target {t.shape} and sample_actual {a.shape}, expected the same shape")
        keep += [t, a]
        pos, (pr, pc) = [t.ctypes.data, a.ctypes.data], t.shape
    native(x._handle().FormatHost)(work.dtype.name, seg.dtype.name, work.ctypes.data, *v4, seg.ctypes.data, *s3,
                           pos[0], pos[1], pr, pc, check_int("segment_index", segment_index, 0),
                           check_int("record_index", record_index, 0), check_bool("reverse", reverse))
    del keep
    if vdev is not None:
        vdev.set(work)


def _format_method(self: Any, volume_buffer: Any, segment_buffer: Any, segment_index: int, record_index: int = 0,
                   reverse: bool = False) -> None:
    """vortex's ``format(volume_buffer, segment_buffer, segment_index, record_index=0, reverse=False)``:
    rectify one segment's records (``segment_buffer``, (records, samples)) into ``volume_buffer``
    ((x, y, samples)) as the engine does. Dtypes: int8 into int8, float32 into int8, uint16 into
    uint16 (vortex's) and float32 into float32. NumPy arrays are formatted in place; a CuPy array
    is formatted through host memory."""
    _format(self, volume_buffer, segment_buffer, segment_index, record_index, reverse)


RadialFormatExecutor.format = _format_method  # type: ignore[attr-defined]
SpiralFormatExecutor.format = _format_method  # type: ignore[attr-defined]


def _position_format(self: Any, volume_buffer: Any, sample_target: Any, sample_actual: Any, segment_buffer: Any,
                     segment_index: int, record_index: int = 0, reverse: bool = False) -> None:
    """vortex's ``format(volume_buffer, sample_target, sample_actual, segment_buffer, segment_index,
    record_index=0, reverse=False)``: each of ``segment_buffer``'s records lands where its row of
    ``sample_target`` (or ``sample_actual``, by ``use_target_position``) maps through the config's
    transform. ``segment_index``, ``record_index`` and ``reverse`` are accepted and unused, as vortex's."""
    _format(self, volume_buffer, segment_buffer, segment_index, record_index, reverse, sample_target, sample_actual)


PositionFormatExecutor.format = _position_format  # type: ignore[attr-defined]
