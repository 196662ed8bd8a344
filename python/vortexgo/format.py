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

from ._attrs import NoCopy, StrictAttributes
from ._core import api
from ._validate import check_bool, check_float, check_int
from .log import is_logger
from ._errors import native
from .scan import Range

__all__ = ["SampleSlice", "SimpleSlice", "NullSlice", "NullTransform", "LinearTransform",
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


@dataclass(frozen=True)
class SampleSlice:
    """Keep samples ``start, start+step, ...`` below ``stop`` of each A-scan (vortex's
    ``SimpleSlice(start, stop, step)``); ``stop=None`` keeps through the end."""

    start: int = 0
    stop: Optional[int] = None
    step: int = 1

    def __post_init__(self) -> None:
        # A frozen dataclass: normalise through object.__setattr__.
        object.__setattr__(self, "start", check_int("SampleSlice.start", self.start, 0))
        object.__setattr__(self, "step", check_int("SampleSlice.step", self.step, 1))
        if self.stop is not None:
            object.__setattr__(self, "stop", check_int("SampleSlice.stop", self.stop))
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

    def resolve(self, samples: int) -> tuple[int, int]:
        """The half-open range kept of an A-scan of ``samples`` samples."""
        stop = samples if self.stop is None or self.stop > samples else self.stop
        return min(self.start, stop), stop


@dataclass(frozen=True, init=False)  # frozen like its base: no stray attributes either
class SimpleSlice(SampleSlice):
    """vortex's ``SimpleSlice``, with its constructor: ``SimpleSlice(stop)`` keeps
    samples ``[0, stop)``, ``SimpleSlice(start, stop)`` and
    ``SimpleSlice(start, stop, step)`` as Python's ``slice``; ``SimpleSlice()``
    keeps every sample (vortex's is an empty slice there, which its ``count()``
    divides by zero on). Immutable, unlike vortex's."""

    def __init__(self, *args: int) -> None:
        if len(args) > 3:
            raise TypeError(f"SimpleSlice takes at most 3 arguments (start, stop, step), got {len(args)}")
        if len(args) == 1:
            args = (0, args[0])
        super().__init__(*args)


def NullSlice() -> SampleSlice:
    """vortex's ``NullSlice()``: every sample."""
    return SampleSlice()


@dataclass(frozen=True)
class NullTransform:
    """vortex's ``NullTransform()``: samples unchanged."""

    def _record(self) -> dict:
        return {"Linear": False}


@dataclass(frozen=True)
class LinearTransform:
    """vortex's ``LinearTransform(scale, offset)``: ``scale * x + offset``."""

    scale: float = 1.0
    offset: float = 0.0

    def _record(self) -> dict:
        return {"Linear": True, "Scale": check_float("LinearTransform.scale", self.scale),
                "Offset": check_float("LinearTransform.offset", self.offset)}


@dataclass
class StackFormatExecutorConfig(StrictAttributes):
    """Configuration of a :class:`StackFormatExecutor` (vortex's fields).

    Attributes:
        sample_slice: the samples kept (:class:`SampleSlice`); default keeps all.
        sample_transform: :class:`NullTransform` (default) or :class:`LinearTransform`.
        erase_after_volume: vortex's field (vortex 0.5.1 never reads it).
    """

    sample_slice: SampleSlice = field(default_factory=SampleSlice)
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
        self.config = StackFormatExecutorConfig()
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
        self.config = cfg

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
        self.config = self._config_cls()
        if config is not None:
            self.initialize(config)

    @native
    def initialize(self, config: Any) -> None:
        """Validate and adopt ``config`` (ValueError naming the field)."""
        if not isinstance(config, self._config_cls):
            raise TypeError(f"config={config!r}, expected a {self._config_cls.__name__}")
        self._h = _reinit(self._h, self._new_go, config._record())
        self.config = config.copy()

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


@dataclass
class FormatPlannerConfig(StrictAttributes):
    """vortex's ``FormatPlannerConfig``: the volume the planner fills and how.

    ``segments_per_volume`` and ``records_per_segment`` must be set (vortex's default is
    unbounded; an executor allocates the volume they describe). ``mask`` filters boundaries
    and events by their flags; ``flip_reversed`` loads reversed segments back to front;
    ``strip_inactive`` drops inactive records; ``adapt_shape`` grows the shape instead of
    truncating.
    """

    segments_per_volume: int = 0
    records_per_segment: int = 0
    mask: int = (1 << 64) - 1
    flip_reversed: bool = True
    strip_inactive: bool = True
    adapt_shape: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        return (self.segments_per_volume, self.records_per_segment)

    @shape.setter
    def shape(self, v: Sequence[int]) -> None:
        self.segments_per_volume, self.records_per_segment = _pair(
            "FormatPlannerConfig.shape", v, "(segments_per_volume, records_per_segment)")

    def copy(self) -> "FormatPlannerConfig":
        """An independent copy (vortex's ``copy()``); ``copy.copy``/``deepcopy``/pickle work too."""
        return _copy.deepcopy(self)

    def _record(self) -> dict:
        mask = getattr(self.mask, "value", self.mask)  # a marker.Flags or an int
        return {"Shape": [check_int("FormatPlannerConfig.segments_per_volume", self.segments_per_volume, 1),
                          check_int("FormatPlannerConfig.records_per_segment", self.records_per_segment, 1)],
                "Mask": check_int("FormatPlannerConfig.mask", mask, 0, (1 << 64) - 1),
                "FlipReversed": check_bool("flip_reversed", self.flip_reversed),
                "StripInactive": check_bool("strip_inactive", self.strip_inactive),
                "AdaptShape": check_bool("adapt_shape", self.adapt_shape)}


class FormatPlanner(_Executor):
    """vortex's ``FormatPlanner``: turns each block's markers into the format plan that
    ``EngineConfig.add_formatter(planner, endpoints)``'s endpoints execute."""

    _config_cls = FormatPlannerConfig

    def _new_go(self, record: str) -> Any:
        return api.NewFormatPlanner(record)

    @native
    def reset(self) -> None:
        """Forget the segment, volume and scan in progress, as at the start of a stream
        (vortex's ``reset``). The planner keeps its state across engine sessions (as
        vortex's): reset it before starting a session that begins a new scan."""
        self._handle().Reset()

    @property
    def segments_per_volume(self) -> int:
        return self.config.segments_per_volume

    @property
    def records_per_segment(self) -> int:
        return self.config.records_per_segment
