"""The acquisition engine (vortex's ``vortex.engine``).

An :class:`Engine` runs an acquisition through processors, formatters and
endpoints, all asynchronously in Go: blocks come from a pool preallocated by
:meth:`Engine.prepare` (pinned host + device memory), stages run concurrently
with bounded queues and backpressure, and nothing is allocated on the hot
path.

Endpoints receive the formatted volumes. ``with endpoint.tensor as volume:``
takes the endpoint's lock and yields a zero-copy CuPy array (NumPy for host
and CPU endpoints); ``with endpoint.stream as stream:`` binds the stream the
formatting runs on. Endpoint callbacks (``update_callback``,
``segment_callback``, ``volume_callback``, ``scan_callback``) fire **once the
formatting is dispatched, not completed**, in order, on a Python-owned
dispatcher thread: chain GPU work on ``endpoint.stream``.

A callback that raises is logged (logger ``"vortexgo.engine"``) and counted
in :meth:`Engine.status`; the engine keeps running unless it was built with
``callback_error_policy="stop"``.
"""

# The package's modules, one concept each: config (EngineConfig, divide, cycle), strobes,
# status (what the engine reports), session (Engine's lifecycle) and dispatch (the
# dispatcher thread). Their Go side is gosrc/pyapi/engine.go.

from __future__ import annotations

from ..endpoint import (  # noqa: F401 - re-exported: vortex users import every endpoint from vortex.engine
    AscanSpiralDeviceTensorEndpointFloat32, AscanSpiralDeviceTensorEndpointInt8, AscanSpiralDeviceTensorEndpointUInt16,
    AscanStackEndpoint, BufferStrategy, NullEndpoint, PositionDeviceTensorEndpointFloat32,
    PositionDeviceTensorEndpointInt8, PositionDeviceTensorEndpointUInt16, RadialDeviceTensorEndpointFloat32,
    RadialDeviceTensorEndpointInt8, RadialDeviceTensorEndpointUInt16, SpectraPositionDeviceTensorEndpointUInt16,
    SpectraRadialDeviceTensorEndpointUInt16, SpectraSpiralDeviceTensorEndpointUInt16,
    SpectraStackDeviceTensorEndpointUInt16, SpectraStackEndpoint, SpectraStackHostTensorEndpointUInt16,
    SpectraStackTensorEndpointUInt16, SpiralDeviceTensorEndpointFloat32, SpiralDeviceTensorEndpointInt8,
    SpiralDeviceTensorEndpointUInt16, StackDeviceTensorEndpointFloat32, StackDeviceTensorEndpointInt8,
    StackDeviceTensorEndpointUInt16, StackHostTensorEndpointFloat32, StackHostTensorEndpointInt8,
    StackHostTensorEndpointUInt16, StackTensorEndpointFloat32, StackTensorEndpointInt8, StackTensorEndpointUInt16,
)
from ..alazar import acquire_alazar_clock  # noqa: F401 - vortex exports it from vortex.engine
from ..profiler import read_profiler_log  # noqa: F401 - vortexgo.engine's
from ..scan import ScanQueue  # noqa: F401 - vortex's engine.scan_queue is one
from ..source import dispersion_phasor  # noqa: F401 - vortex exports it from vortex.engine
from ..storage_endpoint import *  # noqa: F401,F403 - re-exported: vortex's storage endpoints live in vortex.engine
from ..storage_endpoint import __all__ as _storage_endpoints
from .config import EngineConfig, cycle, divide
from .dispatch import (  # noqa: F401 - the event record's layout, for the tests of the dispatcher
    _BATCH, _DONE, _ENGINE, _EVENT, _FIELDS, _JOB, _QUEUE, _QUEUE_EMPTY, _SCAN, _SEGMENT, _UPDATE, _VOLUME,
)
from .session import Engine
from .status import EngineEvent, EngineStatus, JobTiming, SessionStatus, StageTiming
from .strobes import (EventStrobe, Polarity, SampleStrobe, ScanStrobe, SegmentStrobe, StrobeList,
                      VolumeStrobe)

__all__ = [
    "EngineConfig", "Engine", "EngineStatus", "StageTiming", "EngineEvent", "ScanQueue",
    "JobTiming", "SessionStatus", "read_profiler_log", "divide", "cycle",
    "Polarity", "SampleStrobe", "SegmentStrobe", "VolumeStrobe", "ScanStrobe", "EventStrobe", "StrobeList",
    "StackDeviceTensorEndpointInt8", "StackDeviceTensorEndpointUInt16", "StackDeviceTensorEndpointFloat32",
    "StackHostTensorEndpointInt8", "StackHostTensorEndpointUInt16", "StackHostTensorEndpointFloat32",
    "SpectraStackDeviceTensorEndpointUInt16", "AscanStackEndpoint", "SpectraStackEndpoint", "NullEndpoint",
    "RadialDeviceTensorEndpointInt8", "RadialDeviceTensorEndpointUInt16", "RadialDeviceTensorEndpointFloat32",
    "SpiralDeviceTensorEndpointInt8", "SpiralDeviceTensorEndpointUInt16", "SpiralDeviceTensorEndpointFloat32",
    "AscanSpiralDeviceTensorEndpointInt8",
    "PositionDeviceTensorEndpointInt8", "PositionDeviceTensorEndpointUInt16", "PositionDeviceTensorEndpointFloat32",
    "SpectraRadialDeviceTensorEndpointUInt16", "SpectraSpiralDeviceTensorEndpointUInt16",
    "SpectraPositionDeviceTensorEndpointUInt16", "BufferStrategy", "acquire_alazar_clock",
] + _storage_endpoints

# The engine is vortexgo.engine's, the module users (and vortex scripts, through vortex.engine)
# import it from. (Its attributes' docs are in its docstring: autodoc reads ``#:`` comments from
# the source of the class's module.)
Engine.__module__ = __name__

#: vortex's name: ``Engine.Event.Exit`` and so on.
Engine.Event = EngineEvent
