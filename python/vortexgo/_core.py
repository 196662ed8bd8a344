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
# directly, ints in, int status out; -1 means "repeat through the method
# path for the full error": stream_op(code, stream id, event id), one call
# for every operation, with the codes below (fast.go's op* constants).
fast_record = _ext.pyapi_FastRecord
fast_wait_event = _ext.pyapi_FastWaitEvent
fast_query_event = _ext.pyapi_FastQueryEvent
fast_query_stream = _ext.pyapi_FastQueryStream
fast_sync_stream = _ext.pyapi_FastSyncStream
fast_sync_event = _ext.pyapi_FastSyncEvent
stream_op = api.StreamOp
# The engine dispatcher's call per batch (pyapi.FastNextEvents): the
# engine's registry id, the record buffer's address, its size in records
# and the wait in ms, then 1 to spin before parking (0: park at once, after the C
# wait on the event ring); raises (a ClosedError once the engine is closed).
fast_next_events = _ext.pyapi_FastNextEvents
OP_RECORD, OP_WAIT_EVENT, OP_SYNC_STREAM, OP_QUERY_STREAM, OP_SYNC_EVENT, OP_QUERY_EVENT = range(6)

# The C fast path (python/vortexgo/_fastcall.c, gosrc/cuda/fastpath.h): CUDA
# streams and events, named by their FastID, without entering Go. Same
# status convention; ids of 0 (CPU objects, borrowed streams) always give -1.
# Without the extension (a failed C build) every c_* call gives -1 and the Go
# fast path above answers instead.
def _no_c(*_ids: int) -> int:
    return -1


try:
    from ._native import _fastcall as _c  # type: ignore[attr-defined]

    HAVE_C_FAST_PATH = bool(_c.init(api.FastAPI()))
except ImportError:
    _c = None
    HAVE_C_FAST_PATH = False
if HAVE_C_FAST_PATH:
    c_event_record = _c.event_record
    c_event_query = _c.event_query
    c_event_sync = _c.event_synchronize
    c_stream_sync = _c.stream_synchronize
    c_stream_wait = _c.stream_wait_event
    c_stream_query = _c.stream_query
else:
    c_event_record = c_event_query = c_event_sync = _no_c
    c_stream_sync = c_stream_wait = c_stream_query = _no_c

# The extension's C base types of Stream and Event (see _stream.py): their
# per-call methods run in C and try the C fast path, then the Go fast path
# bound here, then the object's pure-Python method. None without the
# extension (or with a build older than them): _stream.py then uses its
# pure-Python bases, which behave the same, one Python frame slower. They
# work without the shim's table too (HAVE_C_FAST_PATH False): the Go path
# answers then.
StreamBase = getattr(_c, "StreamBase", None)
EventBase = getattr(_c, "EventBase", None)
if StreamBase is not None and EventBase is not None:
    _c.bind(fast_record, fast_wait_event, fast_query_event, fast_query_stream, fast_sync_stream, fast_sync_event)
else:
    StreamBase = EventBase = None
HAVE_C_METHODS = StreamBase is not None

# The dispatcher's hot loop in C (_fastcall.c run_events; Engine._run_batch):
# None without the extension, with a build older than it, or with a record
# layout other than the engine's, and the Python loop runs every record.
run_events = getattr(_c, "run_events", None)
ring_next = getattr(_c, "ring_next", None)
EVENT_FIELDS = getattr(_c, "EVENT_FIELDS", 0)

DTYPE_CODES = {name: api.DTypeCode(name) for name in
               ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64", "complex64")}

__all__ = ["api", "DTYPE_CODES", "HAVE_C_FAST_PATH", "HAVE_C_METHODS"]


def _refuse_go_copy(self, *_a):
    # A copy of a gopy wrapper shares its handle, and each copy's __del__
    # releases it: the original (the process's default device, a stage) would
    # be freed under its owner. One wrapper owns one handle (DESIGN.md 7).
    raise TypeError(f"a Go handle ({type(self).__name__}) cannot be copied or pickled: "
                    "share the object that owns it instead")


def _guard_go_handles() -> None:
    from ._native import go as _go  # type: ignore[attr-defined]

    for name in ("__copy__", "__deepcopy__", "__reduce_ex__", "__reduce__"):
        setattr(_go.GoClass, name, _refuse_go_copy)


_guard_go_handles()
