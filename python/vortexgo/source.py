"""Swept sources and the helpers vortex users call to set up processing
(vortex's ``vortex.engine.Source``, ``vortex.engine.source`` presets,
``find_rising_edges``, ``compute_resampling`` and ``dispersion_phasor``;
``vortexgo.engine`` re-exports them under those names).

These run once, while configuring, on small arrays: plain NumPy.
"""

from __future__ import annotations

import types
from typing import Any, Optional, Sequence

import numpy as np

from ._validate import check_float, check_int

__all__ = ["Source", "source", "find_rising_edges", "compute_resampling", "dispersion_phasor"]


class Source:
    """A swept laser source: its sweep rate, k-clock edges per sweep, duty
    cycle and imaging depth, and optionally the measured clock edge times
    (``clock_edges_seconds``) that :func:`compute_resampling` uses."""

    __slots__ = ("_tps", "_edges", "_duty", "_depth", "_clock")

    def __init__(self, triggers_per_second: int = 100_000, clock_rising_edges_per_trigger: int = 1376,
                 duty_cycle: float = 0.5, imaging_depth_meters: float = 0.01) -> None:
        self.triggers_per_second = triggers_per_second
        self.clock_rising_edges_per_trigger = clock_rising_edges_per_trigger
        self.duty_cycle = duty_cycle
        self.imaging_depth_meters = imaging_depth_meters
        self._clock = np.zeros(0)

    triggers_per_second = property(lambda s: s._tps, lambda s, v: setattr(
        s, "_tps", check_int("Source.triggers_per_second", v, 0)), doc="Sweeps (A-scans) per second.")
    clock_rising_edges_per_trigger = property(lambda s: s._edges, lambda s, v: setattr(
        s, "_edges", check_int("Source.clock_rising_edges_per_trigger", v, 0)), doc="k-clock edges per sweep.")
    duty_cycle = property(lambda s: s._duty, lambda s, v: setattr(
        s, "_duty", check_float("Source.duty_cycle", v, 0.0, 1.0)), doc="Fraction of each period that sweeps.")
    imaging_depth_meters = property(lambda s: s._depth, lambda s, v: setattr(
        s, "_depth", check_float("Source.imaging_depth_meters", v, 0.0)), doc="Imaging depth in meters.")

    @property
    def clock_edges_seconds(self) -> np.ndarray:
        """Measured k-clock rising edge times within one sweep (seconds, increasing); empty if unknown."""
        return self._clock

    @clock_edges_seconds.setter
    def clock_edges_seconds(self, v: Any) -> None:
        a = np.array(v, dtype=np.float64).reshape(-1)
        if a.size and (not np.all(np.isfinite(a)) or np.any(np.diff(a) <= 0)):
            raise ValueError("Source.clock_edges_seconds: expected finite, strictly increasing times")
        self._clock = a

    @property
    def has_clock(self) -> bool:
        """True when clock edge times are set."""
        return self._clock.size > 0

    def copy(self) -> "Source":
        """An independent copy."""
        c = Source(self._tps, self._edges, self._duty, self._depth)
        c._clock = self._clock.copy()
        return c

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Source) and (self._tps, self._edges, self._duty, self._depth)
                == (other._tps, other._edges, other._duty, other._depth)
                and np.array_equal(self._clock, other._clock))

    def __repr__(self) -> str:
        # vortex's repr, including its label of the second field.
        return (f"Source(triggers_per_second={self._tps}, clock_rising_edges_per_second={self._edges}, "
                f"duty_cycle={self._duty:g}, imaging_depth_meters={self._depth:g})")


#: vortex's presets (values from vortex 0.5.1). Each access gives a copy, so
#: changing one cannot change the preset.
class _Presets(types.SimpleNamespace):
    def __getattribute__(self, name: str) -> Any:
        v = super().__getattribute__(name)
        return v.copy() if isinstance(v, Source) else v


source = _Presets(
    Axsun100k=Source(100_000, 1376, 0.50, 3.7e-3),
    Axsun200k=Source(200_000, 1024, 0.61, 3.7e-3),
    ThorlabsVCSEL400k=Source(400_000, 1024, 0.54, 0.0),
)


def find_rising_edges(signal: Any, samples_per_second: int, number_of_edges: int = 0) -> np.ndarray:
    """Times (seconds) of a sampled clock's rising zero crossings after
    removing its mean, interpolated linearly between samples; stops after
    ``number_of_edges`` when given, and raises if fewer are found."""
    sps = check_int("samples_per_second", samples_per_second, 1)
    want = check_int("number_of_edges", number_of_edges, 0)
    x = np.asarray(signal, dtype=np.float64).reshape(-1)
    x = x - x.mean() if x.size else x
    i = np.nonzero((x[:-1] < 0) & (x[1:] > 0))[0] + 1
    if want:
        i = i[:want]
    if i.size < want:
        raise RuntimeError(f"find_rising_edges: found {i.size} rising edges, expected {want}")
    frac = -x[i - 1] / (x[i] - x[i - 1])
    return (i + frac) / sps


def compute_resampling(source: Source, samples_per_second: int, samples_per_ascan: int,
                       clock_delay_samples: float = 0) -> np.ndarray:
    """Sample positions (fractional raw indices) at which a sweep that
    progresses uniformly in wavenumber is sampled, from the source's measured
    clock edges: the ``resampling_samples`` of a ProcessorConfig."""
    if not isinstance(source, Source):
        raise TypeError(f"source={source!r}, expected a vortexgo Source")
    if not source.has_clock:
        # vortex 0.5.1 crashes here; we say what is missing.
        raise ValueError("compute_resampling: source has no clock_edges_seconds, expected measured clock edge times "
                         "(find_rising_edges of a recorded k-clock)")
    sps = check_int("samples_per_second", samples_per_second, 1)
    n = check_int("samples_per_ascan", samples_per_ascan, 1, 1 << 24)
    delay = check_float("clock_delay_samples", clock_delay_samples)
    ideal = source.clock_edges_seconds
    t = np.interp(np.linspace(0, 1, n), np.linspace(0, 1, ideal.size), ideal)
    return t * float(sps) + delay


def dispersion_phasor(length: int, coeff: Sequence[float]) -> np.ndarray:
    """exp(j (c0 d^2 + c1 d^3)) with d the sample's offset from length/2:
    the phasor that cancels second- and third-order dispersion."""
    n = check_int("length", length, 0, 1 << 26)
    try:
        c0, c1 = (float(c) for c in coeff)
    except (TypeError, ValueError):
        raise TypeError(f"coeff={coeff!r}, expected two numbers (2nd and 3rd order)") from None
    d = np.arange(n, dtype=np.float64) - n / 2.0
    return np.exp(1j * (c0 * d * d + c1 * d * d * d))
