"""vortexgo: streaming GPU pipelines from Python, with a Go core.

All GPU work is asynchronous; CUDA resources (streams, events, device and
pinned buffers, locked tensors) are handed to Python through the standard
protocols (``__cuda_array_interface__``, DLPack, ``__cuda_stream__``) so CuPy,
PyTorch, JAX or Numba chain work on them with no copies and no stalls. The
same API runs on a CPU backend when there is no GPU.
"""

from __future__ import annotations

from ._errors import (
    ClosedError,
    CudaError,
    ForkError,
    InternalError,
    InUseError,
    LockError,
    MemoryBudgetError,
    VortexError,
)
from ._device import (
    Device,
    cpu_threads,
    cuda_unavailable_reason,
    devices,
    get_device,
    is_cuda_available,
    set_cpu_threads,
    synchronize_device,
)
from ._stream import (
    Event,
    Stream,
    current_stream,
    default_stream,
    synchronize,
    synchronize_event,
    synchronize_stream,
)
from ._array import SUPPORTED_DTYPES, Array, copy, empty, from_numpy, full, zeros
from ._tensor import DeviceTensor, TensorView
from ._graph import Graph, ScopedCapture, capture_launch
from ._kernels import cast, scale_offset

__version__ = "0.1.0"

__all__ = [
    "VortexError", "CudaError", "ClosedError", "LockError", "InUseError", "InternalError", "MemoryBudgetError",
    "ForkError",
    "Device", "devices", "get_device", "is_cuda_available", "cuda_unavailable_reason", "synchronize_device",
    "cpu_threads", "set_cpu_threads",
    "Stream", "Event", "current_stream", "default_stream",
    "synchronize", "synchronize_stream", "synchronize_event",
    "Array", "empty", "zeros", "full", "from_numpy", "copy", "SUPPORTED_DTYPES",
    "DeviceTensor", "TensorView",
    "Graph", "ScopedCapture", "capture_launch",
    "cast", "scale_offset",
]

# --- the acquisition engine (vortex's module names: vortexgo.engine, .acquire,
# .process, .scan, .format, .storage) ---
from .acquire import (
    FileAcquisition,
    FileAcquisitionConfig,
    NullAcquisition,
    NullAcquisitionConfig,
    SimulatedAcquisition,
    SimulatedAcquisitionConfig,
)
from .process import CopyProcessor, CPUProcessor, CUDAProcessor, NullProcessor, ProcessorConfig
from .scan import Range, RasterScan, RasterScanConfig
from .format import SampleSlice, SimpleSlice, StackFormatExecutor, StackFormatExecutorConfig
from .storage import SimpleStackConfig, SimpleStackFloat32, SimpleStackHeader, SimpleStackInt8, SimpleStackUInt16
from .engine import (
    AscanStackEndpoint,
    Engine,
    EngineConfig,
    EngineEvent,
    EngineStatus,
    NullEndpoint,
    SpectraStackDeviceTensorEndpointUInt16,
    SpectraStackEndpoint,
    StackDeviceTensorEndpointFloat32,
    StackDeviceTensorEndpointInt8,
    StackDeviceTensorEndpointUInt16,
    StackHostTensorEndpointFloat32,
    StackHostTensorEndpointInt8,
    StackHostTensorEndpointUInt16,
    StageTiming,
)

__all__ += [
    "SimulatedAcquisition", "SimulatedAcquisitionConfig", "FileAcquisition", "FileAcquisitionConfig",
    "NullAcquisition", "NullAcquisitionConfig",
    "ProcessorConfig", "CPUProcessor", "CUDAProcessor", "NullProcessor", "CopyProcessor",
    "Range", "RasterScan", "RasterScanConfig", "SampleSlice", "SimpleSlice", "StackFormatExecutor", "StackFormatExecutorConfig",
    "SimpleStackConfig", "SimpleStackHeader", "SimpleStackInt8", "SimpleStackUInt16", "SimpleStackFloat32",
    "Engine", "EngineConfig", "EngineEvent", "EngineStatus", "StageTiming",
    "StackDeviceTensorEndpointInt8", "StackDeviceTensorEndpointUInt16", "StackDeviceTensorEndpointFloat32",
    "StackHostTensorEndpointInt8", "StackHostTensorEndpointUInt16", "StackHostTensorEndpointFloat32",
    "SpectraStackDeviceTensorEndpointUInt16", "AscanStackEndpoint", "SpectraStackEndpoint", "NullEndpoint",
]

# --- vortex's marker and log modules, and its logger helpers at the top level ---
from . import log, marker, memory
from .log import get_console_logger, get_file_logger, get_python_logger

__all__ += ["log", "marker", "get_console_logger", "get_file_logger", "get_python_logger"]

# --- async toolkit: triple buffering, coordinator, pipeline stages, readback, pools, budget (issue 4) ---
from . import toolkit
from .toolkit import (
    AsyncCoordinator,
    BufferPool,
    CompletedOp,
    DownloadOp,
    GpuPipelineStage,
    KernelOp,
    ManagedGpuContext,
    MemoryUsage,
    PipelineStageManager,
    PipelineStats,
    Readback,
    ReadbackHandle,
    SpinOp,
    TripleBuffer,
    UploadOp,
    copy_peer,
    memory_usage,
    readback,
    set_memory_budget,
)

__all__ += [
    "toolkit", "TripleBuffer", "AsyncCoordinator", "CompletedOp", "PipelineStageManager", "GpuPipelineStage",
    "PipelineStats", "ManagedGpuContext", "KernelOp", "SpinOp", "UploadOp", "DownloadOp",
    "readback", "Readback", "ReadbackHandle", "BufferPool", "set_memory_budget", "memory_usage", "MemoryUsage",
    "copy_peer",
]

# --- vortex's vortex.simple: SimpleEngine over simulated hardware (issue 9) ---
from . import simple
from .simple import SimpleEngine, SimpleEngineConfig

__all__ += ["simple", "SimpleEngine", "SimpleEngineConfig"]

# `from __future__ import annotations` binds the name here; it is no part of the API.
del annotations
