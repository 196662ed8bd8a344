"""The digital strobes the engine's Generate stage writes beside the waveform for the IOs
(vortex's ``engine`` strobes: :class:`SampleStrobe`, :class:`SegmentStrobe` ...)."""

from __future__ import annotations

import enum
from typing import Any, Optional

from .._attrs import StrictAttributes, ValueList
from .._validate import check_int
from ..marker import Flags


class Polarity(StrictAttributes, enum.IntEnum):
    """What an active strobe drives its line to (vortex's ``engine.Polarity``)."""

    Low = 0
    High = 1

    def __str__(self) -> str:
        return f"Polarity.{self.name}"


def _polarity(name: str, v: Any) -> Polarity:
    if isinstance(v, bool) or not isinstance(v, (int, Polarity)) or int(v) not in (0, 1):
        raise ValueError(f"{name}={v!r}, expected Polarity.Low or Polarity.High")
    return Polarity(int(v))


# Fields of a strobe: (name, type check). The bounds (line < 32, spans) are
# gosrc/engine/strobe.go's, checked when the engine's configuration is
# validated, naming the strobe and the field.
_STROBE_CHECKS = {
    "line": check_int,
    "divisor": check_int,
    "phase": check_int,
    "duration": check_int,
    "delay": check_int,
    "polarity": _polarity,
    "flags": lambda n, v: _strobe_flags(n, v),
}


def _strobe_flags(name: str, v: Any) -> Flags:
    if not isinstance(v, Flags):
        raise TypeError(f"{name}={v!r}, expected a vortexgo.marker.Flags")
    return Flags(v.value)


class _Strobe:
    """A digital strobe the engine's Generate stage writes per sample for the IOs
    (bit ``line`` of each word of ``EngineConfig.strobes``' output, vortex's strobes)."""

    _kind = 0
    _fields: tuple = ()

    def __setattr__(self, k: str, v: Any) -> None:
        if k not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no field {k!r}, expected one of {self._fields}")
        object.__setattr__(self, k, _STROBE_CHECKS[k](f"{type(self).__name__}.{k}", v))

    def _record(self) -> dict:
        """gosrc/engine.Strobe's fields."""
        return {"Kind": self._kind, "Line": self.line, "Polarity": int(self.polarity), "Duration": self.duration,
                "Divisor": getattr(self, "divisor", 0), "Phase": getattr(self, "phase", 0),
                "Delay": getattr(self, "delay", 0), "Flags": getattr(self, "flags", Flags()).value}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._record() == self._record()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)}' for f in self._fields)})"


class SampleStrobe(_Strobe):
    """Active at the samples ``s`` with ``(s + phase) % divisor < duration`` (vortex's
    ``SampleStrobe(line=0, divisor=2, polarity=Polarity.High, duration=1, phase=0)``)."""

    _kind, _fields = 0, ("line", "divisor", "polarity", "duration", "phase")

    def __init__(self, line: int = 0, divisor: int = 2, polarity: Polarity = Polarity.High, duration: int = 1,
                 phase: int = 0) -> None:
        self.line, self.divisor, self.polarity, self.duration, self.phase = line, divisor, polarity, duration, phase


class _MarkerStrobe(_Strobe):
    _fields = ("line", "polarity", "duration", "delay", "flags")

    def __init__(self, line: int = 0, polarity: Polarity = Polarity.High, duration: int = 10, delay: int = 0,
                 flags: Optional[Flags] = None) -> None:
        self.line, self.polarity, self.duration, self.delay = line, polarity, duration, delay
        self.flags = Flags.all() if flags is None else flags


class SegmentStrobe(_MarkerStrobe):
    """Active ``duration`` samples from ``delay`` samples after each SegmentBoundary whose flags
    match ``flags`` (vortex's ``SegmentStrobe(line=0, polarity=High, duration=10, delay=0, flags=all)``)."""

    _kind = 1


class VolumeStrobe(_MarkerStrobe):
    """As :class:`SegmentStrobe`, at each VolumeBoundary."""

    _kind = 2


class ScanStrobe(_MarkerStrobe):
    """As :class:`SegmentStrobe`, at each ScanBoundary (the lead marker has no flags: none there)."""

    _kind = 3


class EventStrobe(_MarkerStrobe):
    """As :class:`SegmentStrobe`, at each Event marker."""

    _kind = 4


class StrobeList(ValueList):
    """A list of strobes (vortex's ``engine.StrobeList``)."""


def _default_strobes() -> StrobeList:
    """vortex's ``EngineConfig().strobes``."""
    return StrobeList([SampleStrobe(0, 2), SampleStrobe(1, 1000, Polarity.High, 10),
                       SampleStrobe(2, 1000, Polarity.Low, 10), SegmentStrobe(3), VolumeStrobe(4)])


