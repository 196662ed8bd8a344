"""Formatting: placing processed A-scans into volumes (vortex's ``vortex.format``).

A :class:`StackFormatExecutor` follows a :class:`vortexgo.scan.RasterScan` and
places each block's A-scans into ``(bscans, ascans, depth)`` volumes, cropping
depth to ``sample_slice`` and flipping the return lines of a bidirectional
scan. The engine runs it on each endpoint's stream.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ._core import api
from ._validate import check_int
from ._errors import native
from .scan import RasterScan, RasterScanConfig

__all__ = ["SampleSlice", "SimpleSlice", "StackFormatExecutorConfig", "StackFormatExecutor"]


@dataclass(frozen=True)
class SampleSlice:
    """Keep samples ``[start, stop)`` of each A-scan; ``stop=None`` keeps through the end."""

    start: int = 0
    stop: Optional[int] = None

    def __post_init__(self) -> None:
        # A frozen dataclass: normalise through object.__setattr__.
        object.__setattr__(self, "start", check_int("SampleSlice.start", self.start, 0))
        if self.stop is not None:
            object.__setattr__(self, "stop", check_int("SampleSlice.stop", self.stop))
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"SampleSlice.stop={self.stop}, expected None or > start ({self.start})")

    def resolve(self, samples: int) -> tuple[int, int]:
        """The half-open range kept of an A-scan of ``samples`` samples."""
        stop = samples if self.stop is None or self.stop > samples else self.stop
        return min(self.start, stop), stop


#: vortex's name for the same thing.
SimpleSlice = SampleSlice


@dataclass
class StackFormatExecutorConfig:
    """Configuration of a :class:`StackFormatExecutor`.

    Attributes:
        scan: the :class:`~vortexgo.scan.RasterScan` (or its config) the
            A-scans follow.
        sample_slice: the depth crop (:class:`SampleSlice`); default keeps all.
    """

    scan: Union[RasterScan, RasterScanConfig, None] = None
    sample_slice: SampleSlice = field(default_factory=SampleSlice)


class StackFormatExecutor:
    """Places A-scans into ``(bscans, ascans, depth)`` volumes following a raster scan.

    ``StackFormatExecutor(config)``, ``StackFormatExecutor(scan=..., sample_slice=...)``
    or vortex's ``StackFormatExecutor(); sfe.initialize(config)``.
    """

    def __init__(self, config: Optional[StackFormatExecutorConfig] = None, **fields: Any) -> None:
        self._h = None
        self.config = StackFormatExecutorConfig()
        self.scan_config: Optional[RasterScanConfig] = None
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
        scan = cfg.scan
        if isinstance(scan, RasterScan):
            sc = scan.config
        elif isinstance(scan, RasterScanConfig):
            sc = scan.copy()
            sc.validate()
        else:
            raise TypeError(f"StackFormatExecutorConfig.scan={scan!r}, expected a RasterScan or RasterScanConfig")
        sl = cfg.sample_slice
        if not isinstance(sl, SampleSlice):
            raise TypeError(f"StackFormatExecutorConfig.sample_slice={sl!r}, expected a SampleSlice")
        self._h = api.NewStackFormatExecutor(sc.ascans_per_bscan, sc.bscans_per_volume, sc.bidirectional_segments,
                                             sc.volumes, sl.start, sl.stop or 0)
        self.config, self.scan_config = cfg, sc

    def _handle(self):
        if self._h is None:
            raise ValueError("StackFormatExecutor is not initialized, expected initialize(config) first")
        return self._h

    def volume_shape(self, samples_per_ascan: int) -> tuple[int, int, int]:
        """``(bscans, ascans, depth)`` of the volumes for A-scans of ``samples_per_ascan`` samples."""
        sc = self.scan_config
        if sc is None:
            raise ValueError("StackFormatExecutor is not initialized, expected initialize(config) first")
        start, stop = self.config.sample_slice.resolve(samples_per_ascan)
        return (sc.bscans_per_volume, sc.ascans_per_bscan, stop - start)

    def __repr__(self) -> str:
        if self.scan_config is None:
            return "<StackFormatExecutor (not initialized)>"
        sl = self.config.sample_slice
        crop = "" if sl == SampleSlice() else f" samples [{sl.start}:{'' if sl.stop is None else sl.stop}]"
        return f"<StackFormatExecutor {RasterScan(self.scan_config)!r}{crop}>"
