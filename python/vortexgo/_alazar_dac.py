"""The galvo DAC's output channel (vortex's ``vortex.io.alazar.AnalogChannel``).

Kept apart from :mod:`vortexgo.alazar` and :mod:`vortexgo.io`, which both
export it, so that neither imports the other for it.
"""

from __future__ import annotations

from typing import Any

from ._attrs import Config
from ._validate import check_float, check_int
from .scan import Range

__all__ = ["AnalogChannel"]


class AnalogChannel(Config):
    """One output of an AlazarTech board's galvo DAC (vortex's
    ``vortex.io.alazar.AnalogChannel``), for :class:`~vortexgo.io.AlazarIOConfig`:
    ``AnalogChannel(logical_units_per_physical_unit=1.0, stream=0, channel=0, park=0)``.

    It plays column ``channel`` of block stream ``stream`` (vortex's
    ``Block.StreamIndex``: ``GalvoTarget``, 1, is the one AlazarIO plays), a value divided
    by ``logical_units_per_physical_unit`` being volts, clipped to ``limits``
    (default ``Range(-5, 5)``, the DAC's span). ``park`` is where the output rests while
    the DAC does not play, in stream units like a sample.
    """

    __slots__ = ("_stream", "_channel", "_park", "_scale", "_limits")

    def __init__(self, logical_units_per_physical_unit: float = 1.0, stream: int = 0, channel: int = 0,
                 park: float = 0) -> None:
        self.logical_units_per_physical_unit = logical_units_per_physical_unit
        self.stream = stream
        self.channel = channel
        self.park = park
        self._limits = Range(-5.0, 5.0)

    @property
    def stream(self) -> int:
        """The block stream played (vortex's ``Block.StreamIndex``)."""
        return self._stream

    @stream.setter
    def stream(self, v: Any) -> None:
        self._stream = check_int("AnalogChannel.stream", v, 0)

    @property
    def channel(self) -> int:
        """The column of the stream played."""
        return self._channel

    @channel.setter
    def channel(self, v: Any) -> None:
        self._channel = check_int("AnalogChannel.channel", v, 0)

    @property
    def park(self) -> float:
        """The resting position while the DAC does not play, in stream units."""
        return self._park

    @park.setter
    def park(self, v: Any) -> None:
        self._park = check_float("AnalogChannel.park", v)

    @property
    def logical_units_per_physical_unit(self) -> float:
        """How many stream units make one volt (a stream value divided by this is the voltage)."""
        return self._scale

    @logical_units_per_physical_unit.setter
    def logical_units_per_physical_unit(self, v: Any) -> None:
        f = check_float("AnalogChannel.logical_units_per_physical_unit", v)
        if f == 0:
            raise ValueError("AnalogChannel.logical_units_per_physical_unit=0, expected a non-zero number")
        self._scale = f

    @property
    def limits(self) -> Range:
        """The output's range in volts (default ``Range(-5, 5)``); outputs are clipped to it."""
        return self._limits

    @limits.setter
    def limits(self, v: Any) -> None:
        if not isinstance(v, Range):
            if isinstance(v, (tuple, list)) and len(v) == 2:
                v = Range(*v)
            else:
                raise TypeError(f"AnalogChannel.limits={v!r}, expected a Range")
        self._limits = Range(v.min, v.max)

    def _record(self) -> dict:
        return {"Stream": self.stream, "Channel": self.channel, "Park": self.park,
                "LogicalUnitsPerPhysicalUnit": self.logical_units_per_physical_unit,
                "Min": self.limits.min, "Max": self.limits.max}

    def __eq__(self, other: object) -> bool:
        return type(other) is AnalogChannel and self._record() == other._record()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment] - mutable, like vortex's

    def __repr__(self) -> str:
        return (f"AnalogChannel({self.logical_units_per_physical_unit}, stream={self.stream}, "
                f"channel={self.channel}, park={self.park})")
