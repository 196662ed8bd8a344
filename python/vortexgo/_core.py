"""Loads the gopy-built Go core (vortexgo/_native) once.

The extension links only libc (gopy -dynamic-link), so it imports on machines
without CUDA; CUDA itself is dlopen'd lazily by the Go core.
"""

from __future__ import annotations

import os

try:
    from ._native import pyapi as api  # type: ignore[attr-defined]
    from ._native import _gocore as _ext  # type: ignore[attr-defined]
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "vortexgo's Go core is not built: run `make build` (or `pip install .`) "
        f"first ({exc})"
    ) from exc


def _configure_cufft() -> None:
    """Point the Go core at pip's nvidia-cufft when it is installed.

    cuFFT is dlopen'd by Go; the library may live in a wheel rather than the
    system path, and cuda-pathfinder knows where. Runs once at import; a
    missing package is fine (the Go side then tries the system names and
    reports every name it tried if none loads).
    """
    if os.environ.get("VORTEXGO_CUFFT_PATH"):
        return
    try:
        from cuda import pathfinder  # type: ignore[import-not-found]

        lib = pathfinder.load_nvidia_dynamic_lib("cufft")
        path = getattr(lib, "abs_path", None)
        if path:
            # Go keeps its own copy of the environment: set it there.
            api.SetEnv("VORTEXGO_CUFFT_PATH", path)
    except Exception:
        pass


_configure_cufft()

# The fast path (gosrc/pyapi/fast.go): the extension's functions called
# directly, ints in, int status out; -1 means "repeat through the method API
# for the full error".
fast_record = _ext.pyapi_FastRecord
fast_wait_event = _ext.pyapi_FastWaitEvent
fast_query_event = _ext.pyapi_FastQueryEvent
fast_query_stream = _ext.pyapi_FastQueryStream
fast_sync_stream = _ext.pyapi_FastSyncStream
fast_sync_event = _ext.pyapi_FastSyncEvent
fast_copy = _ext.pyapi_FastCopy
fast_fill = _ext.pyapi_FastFill
fast_scale_offset = _ext.pyapi_FastScaleOffset
DTYPE_CODES = {name: api.DTypeCode(name) for name in
               ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64", "complex64")}

__all__ = ["api", "DTYPE_CODES"]
