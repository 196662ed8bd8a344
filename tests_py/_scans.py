"""vortex's wiring for the engine tests: ``engine.scan_queue`` feeds the Generate stage and a
``FormatPlanner`` turns the markers into the plan that the endpoints execute.

:func:`index_raster` is a raster whose records line up with the acquisition's: its first
segment starts at the origin (so the queue emits no lead-in sample) and every inactive path
is 0 samples long (``FixedLinear(0, 0)``), so record ``r`` of the run is A-scan ``r % A`` of
B-scan ``r // A`` -- the layout ``SimulatedAcquisition`` synthesises its volumes in, which lets
the tests compare formatted volumes with the source.

Callback arguments follow vortex: ``volume_idx`` is the volume's index in its scan (0 for a
raster) and ``scan_idx`` the sequence number of the queue's ScanBoundary marker, so
:func:`queue_volumes` appends volume ``i`` with ``ScanBoundary(sequence=i)``: ``scan_idx``
then numbers the volumes.
"""

from __future__ import annotations

from typing import Any

from vortexgo import scan as vs
from vortexgo.acquire import record_raster
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.marker import ScanBoundary


def index_raster(ascans: int, bscans: int, *, bidirectional: bool = False, loop: bool = False) -> vs.RasterScan:
    """A raster of ``bscans`` B-scans of ``ascans`` A-scans, one record per sample, no inactive records."""
    return record_raster(ascans, bscans, bidirectional=bidirectional, loop=loop)


def planner(ascans: int, bscans: int) -> FormatPlanner:
    """The planner of an :func:`index_raster`'s volumes."""
    return FormatPlanner(FormatPlannerConfig(bscans, ascans))


def queue_volumes(engine: Any, ascans: int, bscans: int, volumes: int, *, bidirectional: bool = False) -> None:
    """Queue ``volumes`` one-volume scans on ``engine.scan_queue``, scan ``i`` marked with sequence
    ``i`` (the run completes when the queue is empty), or, for ``volumes=0``, a looping raster
    that runs until the engine is stopped."""
    if volumes == 0:
        engine.scan_queue.append(index_raster(ascans, bscans, bidirectional=bidirectional, loop=True))
        return
    scan = index_raster(ascans, bscans, bidirectional=bidirectional)
    for i in range(volumes):
        engine.scan_queue.append(scan, marker=ScanBoundary(0, i))
