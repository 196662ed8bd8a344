"""The Go core (vortexgo/_native): loaded at its first use, and fenced off in
children of ``fork()``.

The extension links only libc (gopy -dynamic-link), so it imports on machines
without CUDA; CUDA itself is dlopen'd lazily by the Go core.

**Loaded at first use.** Loading the extension starts the Go runtime and its
threads. ``import vortexgo`` does not: the first call that needs Go does
(:func:`load`, reached through :data:`api` and :data:`_ext`). So a process
that imports vortexgo but never uses it stays single-threaded and forks like
any other, and multiprocessing's forkserver, which imports the main script
(and so vortexgo) in its server before forking each worker, hands its
workers a process without a Go runtime: they load their own.

**Fork.** The Go runtime and the CUDA driver do not survive ``fork()``: the
child has one thread, and any call into Go waits forever for threads that
are gone (gopy's gc hook did so at the child's first collection). Once the
runtime was loaded, a forked child therefore never enters Go: at the fork
(``os.register_at_fork``) every entry into the extension is replaced by one
that raises :class:`~vortexgo.ForkError`, gopy's gc hook and reference
counting become no-ops, and finalizers release nothing (the memory is the
parent's). ``_fastcall`` forgets the shim's table through ``pthread_atfork``.
Python code in the child that does not use vortexgo behaves normally.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import weakref
from typing import Any, Callable

from ._errors import ForkError

# --- the C fast path: loaded at import (it starts no thread) ---------------
#
# python/vortexgo/_fastcall.c, gosrc/cuda/fastpath.h: CUDA streams and events,
# named by their registry id (the one id of every path), without entering Go.
# Status convention: 0 done / not ready, 1 ready, -1 "repeat through the next
# path"; ids the registry does not publish for C (CPU objects, borrowed
# streams, 0) and every call before the Go core hands the shim's table over
# (load()) give -1. Without the extension (a failed C build) every c_* call
# gives -1 and the Go fast path answers instead.
try:
    from ._native import _fastcall as _c  # type: ignore[attr-defined]
except ImportError:
    _c = None


def _no_c(*_ids: int) -> int:
    return -1


if _c is not None:
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
# bound at load(), then the object's pure-Python method. None without the
# extension (or with a build older than them): _stream.py then uses its
# pure-Python bases, which behave the same, one Python frame slower.
StreamBase = getattr(_c, "StreamBase", None)
EventBase = getattr(_c, "EventBase", None)
if StreamBase is None or EventBase is None:
    StreamBase = EventBase = None
HAVE_C_METHODS = StreamBase is not None

# The dispatcher's hot loop in C (_fastcall.c run_events; Engine._run_batch):
# None without the extension, with a build older than it, or with a record
# layout other than the engine's, and the Python loop runs every record.
run_events = getattr(_c, "run_events", None)
ring_next = getattr(_c, "ring_next", None)
EVENT_FIELDS = getattr(_c, "EVENT_FIELDS", 0)

# The Go fast path's operation codes (gosrc/pyapi/fast.go's op* constants):
# stream_op(code, stream id, event id) is one call for every operation.
OP_RECORD, OP_WAIT_EVENT, OP_SYNC_STREAM, OP_QUERY_STREAM, OP_SYNC_EVENT, OP_QUERY_EVENT = range(6)

#: The Go core's dtype codes by NumPy name, filled by load(): only objects
#: made by the Go core use them, so it is loaded by then.
DTYPE_CODES: dict[str, int] = {}

# HAVE_C_FAST_PATH (True when the C fast path adopted the shim's table) is
# set by load(); reading it loads the Go core (__getattr__ below).

# --- the Go core: loaded at first use ---------------------------------------

_lock = threading.RLock()
_modules: dict[str, Any] = {}
#: The pid that loaded the Go runtime (0: not loaded in this process's line).
_loaded_by = 0


class _Extension:
    """Stands for one of the extension's modules until it is loaded.

    An attribute read loads the extension (once) and stores what it read in
    the instance's dictionary, so every later read is a plain dictionary hit:
    nothing on the hot path pays for the laziness.
    """

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(load()[self._name], attr)
        object.__setattr__(self, attr, value)
        return value

    def __repr__(self) -> str:
        state = "loaded" if _modules else "not loaded"
        return f"<vortexgo Go core module {self._name!r} ({state})>"


#: gopy's wrapper module of gosrc/pyapi: ``api.Device(...)``, ``api.Object``...
api: Any = _Extension("pyapi")
#: The extension itself: its C functions, called directly on hot paths.
_ext: Any = _Extension("_gocore")


def _late(name: str) -> Callable[..., Any]:
    """A module-level Go fast function, bound for real by load()."""

    def call(*args: Any) -> Any:
        load()
        return globals()[name](*args)

    call.__name__ = name
    return call


# The Go fast path (gosrc/pyapi/fast.go): the extension's functions called
# directly, ints in, int status out; -1 means "repeat through the method
# path for the full error". Each is reached only through an object the Go
# core made, so load() has replaced these with the extension's own.
fast_record = _late("fast_record")
fast_wait_event = _late("fast_wait_event")
fast_query_event = _late("fast_query_event")
fast_query_stream = _late("fast_query_stream")
fast_sync_stream = _late("fast_sync_stream")
fast_sync_event = _late("fast_sync_event")
stream_op = _late("stream_op")
# The engine dispatcher's call per batch (pyapi.FastNextEvents): the
# engine's registry id, the record buffer's address, its size in records
# and the wait in ms, then 1 to spin before parking (0: park at once, after
# the C wait on the event ring); raises (a ClosedError once the engine is closed).
fast_next_events = _late("fast_next_events")


def __getattr__(name: str) -> Any:
    # PEP 562: names that exist only once the Go core is loaded.
    if name == "HAVE_C_FAST_PATH":
        load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def loaded() -> bool:
    """True once this process loaded the Go core (a forked child: False)."""
    return bool(_modules) and _loaded_by == os.getpid()


def load() -> dict[str, Any]:
    """Load the Go core once and return its modules ("pyapi", "_gocore").

    Raises :class:`~vortexgo.ForkError` in a child of ``fork()`` whose parent
    had loaded it.
    """
    if _modules:
        return _modules
    with _lock:
        if _modules:
            return _modules
        if _loaded_by and _loaded_by != os.getpid():
            raise _fork_error()
        restore = _lower_timer_slack()
        try:
            from ._native import _gocore as ext  # type: ignore[attr-defined]
            from ._native import pyapi  # type: ignore[attr-defined]
        except ImportError as exc:  # pragma: no cover - only on a broken install
            raise ImportError(
                "vortexgo's Go core is not built: run `make build` (or `pip install .`) "
                f"first ({exc})"
            ) from exc
        finally:
            restore()
        _adopt(pyapi, ext)
        _modules.update(pyapi=pyapi, _gocore=ext)
        return _modules


#: The environment variable that sets the timer slack of the Go core's threads, in nanoseconds
#: (read once, when the core loads): unset, TIMER_SLACK_NS; 0 leaves the system's default.
TIMER_SLACK_ENV = "VORTEXGO_TIMER_SLACK_NS"
#: The Go core's threads' timer slack unless TIMER_SLACK_ENV says otherwise. Why: a thread of
#: Go's scheduler that steals a goroutine another thread just readied (the engine's stages handing
#: blocks to one another while the sender keeps running: a poller, the acquire loop submitting
#: the next block) first sleeps 3 us, and Linux stretches a normal thread's sleep by its timer
#: slack, 50 us by default. With 1 ns the hand-over that waited for that steal took about 8 us
#: instead of 26 at vortex's 4 blocks / preload 2 (the H200 VM, profiler marks), and 256- and
#: 512-record blocks 1-10% less time, 32 / 16 level (issue 29, docs/bench.md "Timer slack, the
#: pool polled").
TIMER_SLACK_NS = 1
_PR_SET_TIMERSLACK, _PR_GET_TIMERSLACK = 29, 30
_MAX_TIMER_SLACK_NS = 1_000_000_000


def _timer_slack_ns() -> int:
    """TIMER_SLACK_ENV's value; a bad one is a warning naming the variable, and the default."""
    v = os.environ.get(TIMER_SLACK_ENV, "")
    if v == "":
        return TIMER_SLACK_NS
    try:
        ns = int(v)
        if not 0 <= ns <= _MAX_TIMER_SLACK_NS:
            raise ValueError(v)
    except ValueError:
        import warnings

        warnings.warn(f"{TIMER_SLACK_ENV}={v!r}: expected an integer number of nanoseconds in "
                      f"[0, {_MAX_TIMER_SLACK_NS}] (0: the system's default); using {TIMER_SLACK_NS}",
                      RuntimeWarning, stacklevel=4)
        return TIMER_SLACK_NS
    return ns


def _lower_timer_slack() -> Callable[[], None]:
    """Set this thread's timer slack for the Go core's threads to inherit (Linux: a thread
    starts with its creator's, and the core's runtime starts its threads from the loading one,
    then from its own), and return what puts this thread's back. Elsewhere, or with 0, a no-op."""
    ns = _timer_slack_ns() if sys.platform.startswith("linux") else 0
    if ns == 0:
        return lambda: None
    import ctypes

    def prctl(option: int, arg: int) -> int:
        # prctl is variadic: every argument as the kernel reads it, an unsigned long
        zero = ctypes.c_ulong(0)
        return int(libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), zero, zero, zero))

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        old = prctl(_PR_GET_TIMERSLACK, 0)
        if old <= 0 or prctl(_PR_SET_TIMERSLACK, ns) != 0:
            return lambda: None  # a sandbox that refuses prctl: the default slack, as before
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return lambda: None

    def restore() -> None:
        prctl(_PR_SET_TIMERSLACK, old)

    return restore


def _adopt(pyapi: Any, ext: Any) -> None:
    """One-time set-up of a freshly loaded Go core."""
    global _loaded_by, HAVE_C_FAST_PATH
    _loaded_by = os.getpid()
    HAVE_C_FAST_PATH = False
    g = globals()
    g.update(
        fast_record=ext.pyapi_FastRecord,
        fast_wait_event=ext.pyapi_FastWaitEvent,
        fast_query_event=ext.pyapi_FastQueryEvent,
        fast_query_stream=ext.pyapi_FastQueryStream,
        fast_sync_stream=ext.pyapi_FastSyncStream,
        fast_sync_event=ext.pyapi_FastSyncEvent,
        stream_op=pyapi.StreamOp,
        fast_next_events=ext.pyapi_FastNextEvents,
    )
    _configure_cufft(pyapi)
    threads_from_environ(pyapi)
    if _c is not None:
        HAVE_C_FAST_PATH = bool(_c.init(pyapi.FastAPI()))
        if HAVE_C_METHODS:
            _c.bind(ext.pyapi_FastRecord, ext.pyapi_FastWaitEvent, ext.pyapi_FastQueryEvent,
                    ext.pyapi_FastQueryStream, ext.pyapi_FastSyncStream, ext.pyapi_FastSyncEvent)
    _DECREF[0] = ext.DecRef
    go = sys.modules.get(pyapi.__name__.rpartition(".")[0] + ".go")
    for mod in (pyapi, go):
        for cls in vars(mod).values() if mod is not None else ():
            if isinstance(cls, type) and "__del__" in vars(cls):
                cls.__del__ = _release_handle
    if go is not None:
        for name in ("__copy__", "__deepcopy__", "__reduce_ex__", "__reduce__"):
            setattr(go.GoClass, name, _refuse_go_copy)
    DTYPE_CODES.update({name: pyapi.DTypeCode(name) for name in
                        ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64", "complex64")})


# gopy's wrappers release their Go handle in __del__ through their module's
# global `_gocore`. At interpreter exit modules are cleared newest first, and
# the Go core, loaded at first use, is newer than the modules whose globals
# hold its objects (a cached device), so that global could already be None.
# _release_handle reaches DecRef through a default argument instead, which
# no module clearing touches; a forked child swaps it for a no-op.
_DECREF: list[Callable[[int], Any]] = [lambda _h: None]


def _release_handle(self: Any, _decref: list = _DECREF) -> None:
    _decref[0](self.handle)


def _refuse_go_copy(self: Any, *_a: Any) -> Any:
    # A copy of a gopy wrapper shares its handle, and each copy's __del__
    # releases it: the original (the process's default device, a stage) would
    # be freed under its owner. One wrapper owns one handle (DESIGN.md 7).
    raise TypeError(f"a Go handle ({type(self).__name__}) cannot be copied or pickled: "
                    "share the object that owns it instead")


def _configure_cufft(pyapi: Any) -> None:
    """Point the Go core at pip's nvidia-cufft when it is installed.

    cuFFT is dlopen'd by Go; the library may live in a wheel rather than the
    system path, and cuda-pathfinder knows where. A missing package is fine
    (the Go side then tries the system names and reports every name it tried
    if none loads).
    """
    if os.environ.get("VORTEXGO_CUFFT_PATH"):
        return
    try:
        from cuda import pathfinder  # type: ignore[import-not-found]

        lib = pathfinder.load_nvidia_dynamic_lib("cufft")
        path = getattr(lib, "abs_path", None)
        if path:
            # Go keeps its own copy of the environment: set it there.
            pyapi.SetEnv("VORTEXGO_CUFFT_PATH", path)
    except Exception:
        pass


def threads_from_environ(pyapi: Any) -> bool:
    """Apply ``GOMAXPROCS`` as it is now in ``os.environ``; True when it was set and applied.

    The Go runtime reads it once, from the environment the process started with (a shared
    library's runtime is handed the start-up environment, not today's): a notebook's
    ``os.environ["GOMAXPROCS"] = "4"`` before the first use, or a Dask nanny's ``env=``
    (applied inside the worker after it started), would be missed. A value Go would not take
    is left to Go's own reading, as it would be at start-up."""
    v = os.environ.get("GOMAXPROCS", "").strip()
    if not v.isdigit() or not 1 <= int(v) <= 4096:
        return False
    pyapi.SetCPUThreads(int(v))
    return True


# --- fork --------------------------------------------------------------------


def forked() -> bool:
    """True in a child of ``fork()`` whose parent had loaded the Go core:
    vortexgo calls there raise :class:`~vortexgo.ForkError`."""
    return bool(_loaded_by) and _loaded_by != os.getpid()


def _fork_error() -> ForkError:
    return ForkError(
        f"vortexgo cannot run in this process: it is a child of fork() (pid {os.getpid()}) "
        f"of a process that had started vortexgo's Go runtime (pid {_loaded_by}), and neither the Go "
        "runtime nor the CUDA driver survives fork(). Start the workers that use vortexgo with "
        "multiprocessing's 'spawn' or 'forkserver' method (multiprocessing.get_context('spawn'), "
        "or set_start_method('spawn') under `if __name__ == \"__main__\":`)."
    )


def _refuse(name: str) -> Callable[..., Any]:
    def refused(*_args: Any, **_kw: Any) -> Any:
        raise _fork_error()

    refused.__name__ = name
    return refused


def _quiet(*_args: Any, **_kw: Any) -> None:
    return None


# Reference counting and gopy's gc hook: no-ops in the child, so objects it
# inherited are collected without entering Go (what they hold is the parent's).
_QUIET = frozenset({"IncRef", "DecRef", "RequestGC", "NumHandles"})


def _after_fork_in_child() -> None:
    """Fence the Go core off in a forked child (os.register_at_fork).

    Only what this process reached: nothing to do when the parent never
    loaded the Go core, and then the child may load its own.
    """
    if not _modules:
        return
    ext, pyapi = _modules["_gocore"], _modules["pyapi"]
    _modules.clear()
    _DECREF[0] = _quiet
    # gopy's hooks (go.py's and pyapi.py's) would enter Go at the next collection.
    gc.callbacks[:] = [cb for cb in gc.callbacks
                       if not getattr(cb, "__module__", "").startswith(__package__ + "._native")]
    for name in dir(ext):
        if name.startswith("__") or not callable(getattr(ext, name, None)):
            continue
        setattr(ext, name, _quiet if name in _QUIET else _refuse(name))
    # Module-level functions of gopy's wrapper (pyapi.StreamOp, pyapi.Device...)
    # were captured by name: replace them where callers look them up.
    for name in dir(pyapi):
        value = getattr(pyapi, name, None)
        if not name.startswith("_") and callable(value) and not isinstance(value, type):
            setattr(pyapi, name, _refuse(name))
    # Finalizers (weakref.finalize: handles' releases, run when their object
    # is collected or at exit) would enter Go: what they release is the
    # parent's, so the child drops them. finalize keeps them in a private
    # registry; without it (another Python) the entries above still refuse.
    for fin in list(getattr(weakref.finalize, "_registry", {})):
        info = fin.peek()
        if info is not None and _ours(info[1]):
            fin.detach()
    for proxy in (api, _ext):
        for attr in list(vars(proxy)):
            if attr != "_name":
                delattr(proxy, attr)
    g = globals()
    for name in ("fast_record", "fast_wait_event", "fast_query_event", "fast_query_stream", "fast_sync_stream",
                 "fast_sync_event", "stream_op", "fast_next_events"):
        g[name] = _refuse(name)


def _ours(func: Any) -> bool:
    """True for a function or bound method of vortexgo's (or gopy's wrappers')."""
    owner = getattr(func, "__self__", None)
    mod = getattr(func, "__module__", None) or getattr(type(owner), "__module__", "") or ""
    return mod == __package__ or mod.startswith(__package__ + ".")


os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = ["api", "load", "loaded", "forked", "DTYPE_CODES", "HAVE_C_FAST_PATH", "HAVE_C_METHODS"]
