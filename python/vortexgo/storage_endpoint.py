"""The storage endpoints beyond ``SimpleStack`` under their earlier module's name:
vortex's stream, HDF5, BROCT, dump and marker-log endpoints live in
:mod:`vortexgo.endpoint` (and :mod:`vortexgo.engine` re-exports them, as vortex's
``vortex.engine`` does). This module names the same classes for code that
imports them from here."""

from __future__ import annotations

from .endpoint import (AscanHDF5StackEndpoint, AscanStreamEndpoint, BroctStorageEndpoint, CounterHDF5StackEndpoint,
                       CounterStackEndpoint, CounterStackHostTensorEndpoint, CounterStreamEndpoint,
                       GalvoActualHDF5StackEndpoint, GalvoActualStackEndpoint, GalvoActualStackHostTensorEndpoint,
                       GalvoActualStreamEndpoint, GalvoTargetHDF5StackEndpoint, GalvoTargetStackEndpoint,
                       GalvoTargetStreamEndpoint, MarkerLogStorage, SampleActualHDF5StackEndpoint,
                       SampleActualStackEndpoint, SampleActualStreamEndpoint, SampleTargetHDF5StackEndpoint,
                       SampleTargetStackEndpoint, SampleTargetStreamEndpoint, SpectraHDF5StackEndpoint,
                       SpectraStreamEndpoint, StreamDumpStorage, StrobesHDF5StackEndpoint, StrobesStackEndpoint,
                       StrobesStreamEndpoint)

__all__ = [
    "AscanStreamEndpoint", "SpectraStreamEndpoint", "CounterStreamEndpoint", "GalvoTargetStreamEndpoint",
    "SampleTargetStreamEndpoint", "GalvoActualStreamEndpoint", "SampleActualStreamEndpoint", "StrobesStreamEndpoint",
    "StreamDumpStorage", "MarkerLogStorage",
    "AscanHDF5StackEndpoint", "SpectraHDF5StackEndpoint", "BroctStorageEndpoint",
    "CounterStackHostTensorEndpoint", "GalvoActualStackHostTensorEndpoint",
    "CounterStackEndpoint", "GalvoTargetStackEndpoint", "SampleTargetStackEndpoint", "GalvoActualStackEndpoint",
    "SampleActualStackEndpoint", "StrobesStackEndpoint",
    "CounterHDF5StackEndpoint", "GalvoTargetHDF5StackEndpoint", "SampleTargetHDF5StackEndpoint",
    "GalvoActualHDF5StackEndpoint", "SampleActualHDF5StackEndpoint", "StrobesHDF5StackEndpoint",
]
