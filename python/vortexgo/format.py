"""Formatting: placing processed A-scans into volumes (vortex's ``vortex.format``).

vortex's wiring: the engine's scan queue generates each block's markers, a
:class:`FormatPlanner` (``EngineConfig.add_formatter(planner, endpoints)``)
turns them into a format plan, and every endpoint executes the plan with its
executor (:class:`StackFormatExecutor`, :class:`RadialFormatExecutor`,
:class:`SpiralFormatExecutor`, :class:`PositionFormatExecutor`) on its stream.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

from ._core import api
from ._validate import check_bool, check_float, check_int, is_logger
from ._errors import native
from .scan import Range

__all__ = ["SampleSlice", "SimpleSlice", "NullSlice", "NullTransform", "LinearTransform",
           "StackFormatExecutorConfig", "StackFormatExecutor", "FormatPlannerConfig", "FormatPlanner",
           "RadialFormatExecutorConfig", "RadialFormatExecutor", "SpiralFormatExecutorConfig", "SpiralFormatExecutor",
           "PositionFormatExecutorConfig", "PositionFormatExecutor"]


def _stage(kind: str, record: dict) -> Any:
    return native(api.NewStage)("format", kind, json.dumps(record))


def _reinit(h: Any, kind: str, record: dict) -> Any:
    """The Go object for ``record``: a new one, or ``h`` re-initialized in place (vortex's
    ``initialize`` on an object an endpoint or engine configuration was built with, which then
    sees the new configuration). InUseError while an engine that is not closed uses it."""
    if h is None:
        return _stage(kind, record)
    h.Do("initialize", json.dumps(record), h, 0, 0)
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
class StackFormatExecutorConfig:
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
        return dataclasses.replace(self)


class StackFormatExecutor:
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
        self._h = _reinit(self._h, "StackFormatExecutor", cfg._record())
        self.config = cfg

    def _handle(self):
        if self._h is None:
            raise ValueError("StackFormatExecutor is not initialized, expected initialize(config) first")
        return self._h

    def __repr__(self) -> str:
        if self._h is None:
            return "<StackFormatExecutor (not initialized)>"
        return f"<StackFormatExecutor {self.config.sample_slice!r} {self.config.sample_transform!r}>"


class _Executor:
    """Base of the geometry executors: ``X(); x.initialize(config)`` or ``X(config)``."""

    _kind = ""
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
        self._h = _reinit(self._h, self._kind, config._record())
        self.config = config.copy()

    def _handle(self):
        if self._h is None:
            raise ValueError(f"{type(self).__name__} is not initialized, expected initialize(config) first")
        return self._h

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {'initialized' if self._h is not None else '(not initialized)'}>"


def _rng(name: str, v: Any) -> dict:
    r = v if isinstance(v, Range) else Range(*v)
    return {"Min": check_float(f"{name}.min", r.min), "Max": check_float(f"{name}.max", r.max)}


@dataclass
class RadialFormatExecutorConfig(StackFormatExecutorConfig):
    """vortex's ``RadialFormatExecutorConfig``: radial segments (lines through the origin at
    angles across ``angular_extent``, records across ``radial_extent``) rectified onto an
    ``(x, y)`` grid spanning ``x_extent`` x ``y_extent``."""

    x_extent: Any = (-1.0, 1.0)
    y_extent: Any = (-1.0, 1.0)
    radial_extent: Any = (-1.0, 1.0)
    angular_extent: Any = (0.0, math.pi)
    radial_segments_per_volume: int = 1
    radial_records_per_segment: int = 1

    def _record(self) -> dict:
        r = super()._record()
        r.update({"VolumeXYExtent": [_rng("x_extent", self.x_extent), _rng("y_extent", self.y_extent)],
                  "SegmentRTExtent": [_rng("radial_extent", self.radial_extent), _rng("angular_extent", self.angular_extent)],
                  "RadialShape": [check_int("radial_segments_per_volume", self.radial_segments_per_volume, 1),
                                  check_int("radial_records_per_segment", self.radial_records_per_segment, 1)]})
        return r


@dataclass
class SpiralFormatExecutorConfig(StackFormatExecutorConfig):
    """vortex's ``SpiralFormatExecutorConfig``: an Archimedean spiral of ``rings_per_spiral``
    rings across ``radial_extent``, ``samples_per_spiral`` samples at ``spiral_velocity``,
    rectified onto an ``(x, y)`` grid."""

    x_extent: Any = (-1.0, 1.0)
    y_extent: Any = (-1.0, 1.0)
    radial_extent: Any = (0.0, 1.0)
    rings_per_spiral: int = 1
    samples_per_spiral: int = 1
    spiral_velocity: float = 1.0

    def _record(self) -> dict:
        r = super()._record()
        r.update({"VolumeXYExtent": [_rng("x_extent", self.x_extent), _rng("y_extent", self.y_extent)],
                  "SegmentExtent": _rng("radial_extent", self.radial_extent),
                  "SpiralShape": [check_int("rings_per_spiral", self.rings_per_spiral, 1),
                                  check_int("samples_per_spiral", self.samples_per_spiral, 1)],
                  "SpiralVelocity": check_float("spiral_velocity", self.spiral_velocity)})
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
        t = [[check_float("transform", float(v)) for v in row] for row in self.transform]
        if len(t) != 2 or any(len(row) != 3 for row in t):
            raise ValueError(f"transform={self.transform!r}, expected 2x3")
        r.update({"Transform": t, "UseTargetPosition": check_bool("use_target_position", self.use_target_position),
                  "Channels": [check_int("channels[0]", self.channels[0], 0), check_int("channels[1]", self.channels[1], 0)]})
        return r


class RadialFormatExecutor(_Executor):
    """vortex's ``RadialFormatExecutor`` (for :class:`~vortexgo.endpoint.RadialDeviceTensorEndpointInt8` and its siblings)."""

    _kind, _config_cls = "RadialFormatExecutor", RadialFormatExecutorConfig


class SpiralFormatExecutor(_Executor):
    """vortex's ``SpiralFormatExecutor`` (for the spiral device tensor endpoints)."""

    _kind, _config_cls = "SpiralFormatExecutor", SpiralFormatExecutorConfig


class PositionFormatExecutor(_Executor):
    """vortex's ``PositionFormatExecutor`` (for :class:`~vortexgo.endpoint.PositionDeviceTensorEndpointInt8` and its siblings)."""

    _kind, _config_cls = "PositionFormatExecutor", PositionFormatExecutorConfig


@dataclass
class FormatPlannerConfig:
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
        self.segments_per_volume, self.records_per_segment = v

    def copy(self) -> "FormatPlannerConfig":
        return dataclasses.replace(self)

    def _record(self) -> dict:
        mask = int(getattr(self.mask, "value", self.mask))
        return {"Shape": [check_int("FormatPlannerConfig.segments_per_volume", self.segments_per_volume, 1),
                          check_int("FormatPlannerConfig.records_per_segment", self.records_per_segment, 1)],
                "Mask": check_int("FormatPlannerConfig.mask", mask, 0, (1 << 64) - 1),
                "FlipReversed": check_bool("flip_reversed", self.flip_reversed),
                "StripInactive": check_bool("strip_inactive", self.strip_inactive),
                "AdaptShape": check_bool("adapt_shape", self.adapt_shape)}


class FormatPlanner(_Executor):
    """vortex's ``FormatPlanner``: turns each block's markers into the format plan that
    ``EngineConfig.add_formatter(planner, endpoints)``'s endpoints execute."""

    _kind, _config_cls = "FormatPlanner", FormatPlannerConfig

    @native
    def reset(self) -> None:
        """Forget the segment, volume and scan in progress, as at the start of a stream
        (vortex's ``reset``). The planner keeps its state across engine sessions (as
        vortex's): reset it before starting a session that begins a new scan."""
        self._handle().Do("reset", "", self._handle(), 0, 0)

    @property
    def segments_per_volume(self) -> int:
        return self.config.segments_per_volume

    @property
    def records_per_segment(self) -> int:
        return self.config.records_per_segment
