"""vortexgo: streaming GPU pipelines from Python, with a Go core.

All GPU work is asynchronous; CUDA resources (streams, events, device and
pinned buffers, locked tensors) are handed to Python through the standard
protocols (``__cuda_array_interface__``, DLPack, ``__cuda_stream__``) so CuPy,
PyTorch, JAX or Numba chain work on them with no copies and no stalls. The
same API runs on a CPU backend when there is no GPU.
"""

from __future__ import annotations

from ._errors import ClosedError, CudaError, LockError, MemoryBudgetError, VortexError
from ._device import (
    Device,
    cuda_unavailable_reason,
    devices,
    get_device,
    is_cuda_available,
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
    "VortexError", "CudaError", "ClosedError", "LockError", "MemoryBudgetError",
    "Device", "devices", "get_device", "is_cuda_available", "cuda_unavailable_reason", "synchronize_device",
    "Stream", "Event", "current_stream", "default_stream",
    "synchronize", "synchronize_stream", "synchronize_event",
    "Array", "empty", "zeros", "full", "from_numpy", "copy", "SUPPORTED_DTYPES",
    "DeviceTensor", "TensorView",
    "Graph", "ScopedCapture", "capture_launch",
    "cast", "scale_offset",
]
