"""Type stubs of vortexgo.endpoint: every class its table makes, by name (the module
makes them at import; editors and type checkers read them here)."""

import enum
import logging
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ._attrs import NoCopy, StrictAttributes
from ._stream import Stream
from ._tensor import DeviceTensor
from .format import StackFormatExecutor
from .storage import MarkerLog, StreamDump

__all__ = [
    "BufferStrategy", "StackDeviceTensorEndpointInt8", "StackDeviceTensorEndpointUInt16",
    "StackDeviceTensorEndpointFloat32", "StackHostTensorEndpointInt8", "StackHostTensorEndpointUInt16",
    "StackHostTensorEndpointFloat32", "SpectraStackDeviceTensorEndpointUInt16", "AscanStackEndpoint",
    "SpectraStackEndpoint", "NullEndpoint", "RadialDeviceTensorEndpointInt8", "RadialDeviceTensorEndpointUInt16",
    "RadialDeviceTensorEndpointFloat32", "SpiralDeviceTensorEndpointInt8", "SpiralDeviceTensorEndpointUInt16",
    "SpiralDeviceTensorEndpointFloat32", "PositionDeviceTensorEndpointInt8", "PositionDeviceTensorEndpointUInt16",
    "PositionDeviceTensorEndpointFloat32", "SpectraRadialDeviceTensorEndpointUInt16",
    "SpectraSpiralDeviceTensorEndpointUInt16", "SpectraPositionDeviceTensorEndpointUInt16", "StackTensorEndpointInt8",
    "StackTensorEndpointUInt16", "StackTensorEndpointFloat32", "SpectraStackHostTensorEndpointUInt16",
    "SpectraStackTensorEndpointUInt16", "AscanSpiralDeviceTensorEndpointInt8",
    "AscanSpiralDeviceTensorEndpointUInt16", "AscanSpiralDeviceTensorEndpointFloat32", "AscanStreamEndpoint",
    "SpectraStreamEndpoint", "CounterStreamEndpoint", "GalvoTargetStreamEndpoint", "SampleTargetStreamEndpoint",
    "GalvoActualStreamEndpoint", "SampleActualStreamEndpoint", "StrobesStreamEndpoint", "StreamDumpStorage",
    "MarkerLogStorage", "AscanHDF5StackEndpoint", "SpectraHDF5StackEndpoint", "BroctStorageEndpoint",
    "CounterStackHostTensorEndpoint", "GalvoActualStackHostTensorEndpoint", "CounterStackEndpoint",
    "GalvoTargetStackEndpoint", "SampleTargetStackEndpoint", "GalvoActualStackEndpoint", "SampleActualStackEndpoint",
    "StrobesStackEndpoint", "CounterHDF5StackEndpoint", "GalvoTargetHDF5StackEndpoint",
    "SampleTargetHDF5StackEndpoint", "GalvoActualHDF5StackEndpoint", "SampleActualHDF5StackEndpoint",
    "StrobesHDF5StackEndpoint",
]

STORAGE_ENDPOINTS: tuple[str, ...]

class _EndpointTensor(DeviceTensor):
    def resize(self, shape: Any, dtype: Any = ...) -> None: ...
    def close(self) -> None: ...
    @property
    def valid(self) -> bool: ...

class _PendingTensor:
    def __init__(self, endpoint: '_TensorEndpoint') -> None: ...
    def __enter__(self) -> np.ndarray: ...
    def __exit__(self, *exc: Any) -> None: ...
    def __array__(self, dtype: Any = ..., copy: Any = ...) -> np.ndarray: ...

class _EndpointStream(Stream):
    ...

class _Endpoint(NoCopy, StrictAttributes):
    update_callback: Optional[Callable[[], Any]]
    segment_callback: Optional[Callable[[int, int, int, int], Any]]
    volume_callback: Optional[Callable[[int, int, int], Any]]
    scan_callback: Optional[Callable[[int, int], Any]]
    event_callback: Optional[Callable[[int, int], Any]]
    aggregate_segment_callback: Optional[Callable[[list[int]], Any]]
    block_segment_callback: Optional[Callable[[list[int]], Any]]
    logger: Optional[logging.Logger]
    def __init__(self) -> None: ...
    @property
    def prepared(self) -> bool: ...
    @property
    def stream(self) -> Stream: ...
    def close(self) -> None: ...

class _TensorEndpoint(_Endpoint):
    def __init__(self, executor: Optional[StackFormatExecutor] = ..., shape: Optional[Sequence[int]] = ..., logger: Optional[logging.Logger] = ...) -> None: ...
    @property
    def tensor(self) -> DeviceTensor: ...

class BufferStrategy(StrictAttributes, enum.IntEnum):
    Block = 0
    Segment = 1
    Volume = 2

class _StorageEndpoint(_Endpoint):
    buffer_strategy: BufferStrategy
    storage: Any
    def __init__(self, executor: Any = ..., storage: Any = ..., buffer_strategy: Any = ..., logger: Optional[logging.Logger] = ..., log: Optional[logging.Logger] = ...) -> None: ...
    @property
    def volumes_written(self) -> int: ...

class NullEndpoint(_Endpoint):
    def __init__(self, logger: Optional[logging.Logger] = ...) -> None: ...

class _BlockEndpoint(_Endpoint):
    storage: Any
    def __init__(self, storage: Any, log: Optional[logging.Logger] = ...) -> None: ...
    @property
    def prepared(self) -> bool: ...
    @property
    def stream(self) -> Any: ...
    @property
    def blocks_written(self) -> int: ...

class StreamDumpStorage(_BlockEndpoint):
    def __init__(self, storage: StreamDump, lead_samples: int = ...) -> None: ...

class MarkerLogStorage(_BlockEndpoint):
    def __init__(self, storage: MarkerLog) -> None: ...

class _VolumeEndpoint(_StorageEndpoint):
    ...

class _StreamStackEndpoint(_StorageEndpoint):
    def __init__(self, executor: Any = ..., storage: Any = ..., buffer_strategy: Any = ..., log: Optional[logging.Logger] = ..., *, logger: Optional[logging.Logger] = ...) -> None: ...
    @property
    def executor(self) -> Optional[StackFormatExecutor]: ...

class _UInt64EndpointTensor(_EndpointTensor):
    @property
    def dtype(self) -> np.dtype: ...
    def view(self) -> Any: ...

class _StreamTensorEndpoint(_TensorEndpoint):
    def __init__(self, executor: Optional[StackFormatExecutor] = ..., shape: Any = ..., log: Optional[logging.Logger] = ..., *, logger: Optional[logging.Logger] = ...) -> None: ...
    @property
    def executor(self) -> Optional[StackFormatExecutor]: ...
    @property
    def tensor(self) -> Any: ...

class StackDeviceTensorEndpointInt8(_TensorEndpoint):
    ...

class StackDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class StackDeviceTensorEndpointFloat32(_TensorEndpoint):
    ...

class StackHostTensorEndpointInt8(_TensorEndpoint):
    ...

class StackHostTensorEndpointUInt16(_TensorEndpoint):
    ...

class StackHostTensorEndpointFloat32(_TensorEndpoint):
    ...

class SpectraStackDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class SpectraStackHostTensorEndpointUInt16(_TensorEndpoint):
    ...

class RadialDeviceTensorEndpointInt8(_TensorEndpoint):
    ...

class RadialDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class RadialDeviceTensorEndpointFloat32(_TensorEndpoint):
    ...

class SpectraRadialDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class SpiralDeviceTensorEndpointInt8(_TensorEndpoint):
    ...

class SpiralDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class SpiralDeviceTensorEndpointFloat32(_TensorEndpoint):
    ...

class SpectraSpiralDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class PositionDeviceTensorEndpointInt8(_TensorEndpoint):
    ...

class PositionDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class PositionDeviceTensorEndpointFloat32(_TensorEndpoint):
    ...

class SpectraPositionDeviceTensorEndpointUInt16(_TensorEndpoint):
    ...

class CounterStackHostTensorEndpoint(_StreamTensorEndpoint):
    ...

class GalvoActualStackHostTensorEndpoint(_StreamTensorEndpoint):
    ...

class AscanStackEndpoint(_StorageEndpoint):
    ...

class SpectraStackEndpoint(_StorageEndpoint):
    ...

class AscanHDF5StackEndpoint(_VolumeEndpoint):
    ...

class SpectraHDF5StackEndpoint(_VolumeEndpoint):
    ...

class BroctStorageEndpoint(_VolumeEndpoint):
    ...

class CounterStackEndpoint(_StreamStackEndpoint):
    ...

class GalvoTargetStackEndpoint(_StreamStackEndpoint):
    ...

class SampleTargetStackEndpoint(_StreamStackEndpoint):
    ...

class GalvoActualStackEndpoint(_StreamStackEndpoint):
    ...

class SampleActualStackEndpoint(_StreamStackEndpoint):
    ...

class StrobesStackEndpoint(_StreamStackEndpoint):
    ...

class CounterHDF5StackEndpoint(_StreamStackEndpoint):
    ...

class GalvoTargetHDF5StackEndpoint(_StreamStackEndpoint):
    ...

class SampleTargetHDF5StackEndpoint(_StreamStackEndpoint):
    ...

class GalvoActualHDF5StackEndpoint(_StreamStackEndpoint):
    ...

class SampleActualHDF5StackEndpoint(_StreamStackEndpoint):
    ...

class StrobesHDF5StackEndpoint(_StreamStackEndpoint):
    ...

class AscanStreamEndpoint(_BlockEndpoint):
    ...

class SpectraStreamEndpoint(_BlockEndpoint):
    ...

class CounterStreamEndpoint(_BlockEndpoint):
    ...

class GalvoTargetStreamEndpoint(_BlockEndpoint):
    ...

class SampleTargetStreamEndpoint(_BlockEndpoint):
    ...

class GalvoActualStreamEndpoint(_BlockEndpoint):
    ...

class SampleActualStreamEndpoint(_BlockEndpoint):
    ...

class StrobesStreamEndpoint(_BlockEndpoint):
    ...

StackTensorEndpointInt8 = StackHostTensorEndpointInt8
StackTensorEndpointUInt16 = StackHostTensorEndpointUInt16
StackTensorEndpointFloat32 = StackHostTensorEndpointFloat32
SpectraStackTensorEndpointUInt16 = SpectraStackHostTensorEndpointUInt16
AscanSpiralDeviceTensorEndpointInt8 = SpiralDeviceTensorEndpointInt8
AscanSpiralDeviceTensorEndpointUInt16 = SpiralDeviceTensorEndpointUInt16
AscanSpiralDeviceTensorEndpointFloat32 = SpiralDeviceTensorEndpointFloat32
