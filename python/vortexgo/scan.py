"""Scan patterns: where each acquired A-scan belongs (vortex's ``vortex.scan``).

A :class:`RasterScan` visits ``bscans_per_volume`` lines of ``ascans_per_bscan``
A-scans each; with ``bidirectional_segments`` every other line runs right to
left and is flipped back into place by the formatter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from ._validate import check_int

__all__ = ["RasterScanConfig", "RasterScan"]


def _check_int(owner: str, name: str, value: Any, lo: int) -> int:
    return check_int(f"{owner}.{name}", value, lo)


@dataclass
class RasterScanConfig:
    """A raster pattern.

    Attributes:
        ascans_per_bscan: A-scans along one B-scan (the fast axis).
        bscans_per_volume: B-scans in one volume (the slow axis).
        bidirectional_segments: odd B-scans are acquired right to left.
        volumes: how many volumes the scan lasts; 0 repeats it forever
            (vortex's ``loop = True``).
    """

    ascans_per_bscan: int = 500
    bscans_per_volume: int = 500
    bidirectional_segments: bool = False
    volumes: int = 1

    @property
    def loop(self) -> bool:
        """True when the scan repeats forever (``volumes == 0``)."""
        return self.volumes == 0

    @loop.setter
    def loop(self, value: bool) -> None:
        if value:
            self.volumes = 0
        elif self.volumes == 0:
            self.volumes = 1

    @property
    def records_per_volume(self) -> int:
        """A-scans in one volume."""
        return self.ascans_per_bscan * self.bscans_per_volume

    @property
    def shape(self) -> tuple[int, int]:
        """(bscans_per_volume, ascans_per_bscan)."""
        return (self.bscans_per_volume, self.ascans_per_bscan)

    def validate(self) -> None:
        """Raise ValueError (or TypeError) naming the first bad field."""
        _check_int("RasterScanConfig", "ascans_per_bscan", self.ascans_per_bscan, 1)
        _check_int("RasterScanConfig", "bscans_per_volume", self.bscans_per_volume, 1)
        _check_int("RasterScanConfig", "volumes", self.volumes, 0)
        if not isinstance(self.bidirectional_segments, bool):
            raise TypeError(f"RasterScanConfig.bidirectional_segments={self.bidirectional_segments!r}, expected a bool")

    def copy(self) -> "RasterScanConfig":
        """A copy of this configuration."""
        return dataclasses.replace(self)


class RasterScan:
    """A raster scan pattern; hand it to a :class:`vortexgo.format.StackFormatExecutor`.

    ``RasterScan(config)`` or ``RasterScan(); scan.initialize(config)``
    (vortex's spelling); keyword arguments set config fields directly:
    ``RasterScan(ascans_per_bscan=256, bscans_per_volume=128)``.
    """

    def __init__(self, config: Optional[RasterScanConfig] = None, **fields: Any) -> None:
        self.config: RasterScanConfig = RasterScanConfig()
        if config is not None or fields:
            self.initialize(config, **fields)

    def initialize(self, config: Optional[RasterScanConfig] = None, **fields: Any) -> None:
        """Validate and adopt ``config`` (copied), with ``fields`` overriding its attributes."""
        if config is not None and not isinstance(config, RasterScanConfig):
            raise TypeError(f"config={config!r}, expected a RasterScanConfig")
        cfg = (config or RasterScanConfig()).copy()
        for k, v in fields.items():
            if not hasattr(cfg, k):
                raise TypeError(f"RasterScan: unknown field {k!r}")
            setattr(cfg, k, v)
        cfg.validate()
        self.config = cfg

    def __repr__(self) -> str:
        c = self.config
        vol = "forever" if c.volumes == 0 else f"{c.volumes} volume{'s' if c.volumes != 1 else ''}"
        bi = ", bidirectional" if c.bidirectional_segments else ""
        return f"<RasterScan {c.bscans_per_volume} x {c.ascans_per_bscan}{bi}, {vol}>"
