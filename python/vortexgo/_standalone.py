"""What vortex's standalone ``next``/``next_async`` calls share, outside an engine
(``DAQmxIO``, ``AlazarIO``, ``AlazarAcquisition`` and ``AlazarFFTAcquisition``).

- :class:`Worker`: the stage's worker thread (vortex's one-thread worker pool):
  jobs run in submission order on one daemon thread that exists while there are
  jobs. It holds what its jobs hold (the native handle, the caller's arrays),
  never the stage, so a stage dropped with calls pending is collected, and its
  finaliser's close ends them. At interpreter exit, the stages with jobs
  pending are stopped (``at_exit``, given at construction: a stop, or a close
  where only that ends a driver call) and their jobs let finish, so no thread
  is left inside a driver call.
- :func:`call_back`: a job's end, vortex's ``callback(count, exception)``, run
  on the worker with no lock of ours held; an exception from the callback is
  logged (vortex logs it), never kills the worker.
- :func:`host_array`: a stream or buffer argument as a zero-copy NumPy view of
  host memory of one exact dtype (vortex's ``cpu_view_t`` conversion: any
  buffer of that element type; never a copy, never device memory).
- :class:`BlockCall`: one standalone ``next`` of an IO: vortex's tuple of six
  block streams checked and named to Go, then the call.
"""

from __future__ import annotations

import atexit
import collections
import logging
import threading
from typing import Any, Callable, Optional

import numpy as np

from ._core import api
from ._errors import native
from ._validate import check_int

__all__ = ["Worker", "call_back", "host_array", "BlockCall", "BLOCK_STREAMS"]


class Worker:
    """One stage's worker thread: :meth:`push` queues a job, run after those
    before it. ``at_exit`` (no argument; holding no reference to the stage)
    ends the driver calls in flight; it is called at interpreter exit while
    jobs are pending."""

    def __init__(self, name: str, at_exit: Callable[[], Any]) -> None:
        self._name = name
        self._at_exit = at_exit
        self._lock = threading.Lock()
        self._jobs: collections.deque = collections.deque()
        self._thread: Optional[threading.Thread] = None

    def push(self, job: Callable[[], None]) -> None:
        """Queue ``job`` (it must not raise: :func:`call_back` reports its end)."""
        with self._lock:
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                _busy.add(self)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._thread = None
                    _busy.discard(self)
                    return
                job = self._jobs.popleft()
            job()

    @property
    def pending(self) -> int:
        """Jobs queued and not started."""
        with self._lock:
            return len(self._jobs)

    def on_worker(self) -> bool:
        """Whether the calling thread is this worker (a callback)."""
        return self._thread is threading.current_thread()

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait up to ``timeout`` seconds for the jobs to finish (at once on
        the worker itself, which cannot wait for itself); True when none is left."""
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        return self._thread is None


#: workers with jobs, stopped at interpreter exit (_stop_at_exit)
_busy: set = set()


def _stop_at_exit() -> None:
    """Stop the stages with jobs pending and let their callbacks run, before the
    interpreter finalizes (vortex's destructors stop the hardware and join their
    workers)."""
    workers = list(_busy)
    for w in workers:
        try:
            w._at_exit()
        except Exception:  # noqa: BLE001 - closed meanwhile: its calls have ended already
            pass
    for w in workers:
        w.join(5.0)


atexit.register(_stop_at_exit)


def call_back(logger: Optional[logging.Logger], callback: Callable[..., Any], n: int,
              exc: Optional[BaseException], id: int) -> None:
    """``callback(n, exc)``; an exception it raises is logged to ``logger`` (or
    ``vortexgo``'s), as vortex logs an unhandled callback exception."""
    try:
        callback(n, exc)
    except Exception:
        (logger or logging.getLogger("vortexgo")).critical("unhandled callback exception (block %d)", id,
                                                            exc_info=True)


def host_array(name: str, v: Any, dtype: Any, *, writable: bool = False) -> np.ndarray:
    """``v`` as a NumPy view of its own host memory of exactly ``dtype`` (native
    byte order): a NumPy array, or an object exporting the array interface or
    the buffer protocol (a vortexgo host array, a memoryview). TypeError for
    another type, dtype or device memory; ValueError for a read-only ``v``
    when ``writable``."""
    dt = np.dtype(dtype)
    if isinstance(v, np.ndarray):
        a = v
    elif hasattr(v, "__array_interface__") or _is_buffer(v):
        a = np.asarray(v)  # zero-copy: the caller's memory
    elif hasattr(v, "__cuda_array_interface__"):
        raise TypeError(f"{name}: a CUDA array ({type(v).__name__}), expected host memory (a NumPy {dt.name} array)")
    else:
        raise TypeError(f"{name}={type(v).__name__}, expected a NumPy {dt.name} array (the caller's memory, "
                        "never a copy)")
    if a.dtype != dt or not a.dtype.isnative:
        raise TypeError(f"{name}: dtype {a.dtype.str}, expected {dt.name} in native byte order")
    if writable and not a.flags.writeable:
        raise ValueError(f"{name}: read-only, expected a writable array")
    return a


def _is_buffer(v: Any) -> bool:
    try:
        memoryview(v)
    except TypeError:
        return False
    return True


#: vortex's block streams of an IO's standalone next, in order (Block.StreamIndex), with their
#: element types (vortex-python's engine: counter size_t, analog double, digital uint32).
BLOCK_STREAMS = (("counter", np.uint64), ("galvo target", np.float64), ("sample target", np.float64),
                 ("galvo actual", np.float64), ("sample actual", np.float64), ("strobes", np.uint32))

_TUPLE = ("counter uint64, galvo target, sample target, galvo actual, sample actual float64, "
          "strobes uint32")


class BlockCall:
    """One standalone ``next(count, streams, id)`` of the IO whose native handle is ``h``
    (its ``Next(id, count, streams)``): the arguments are checked here, ``streams`` (vortex's
    tuple of six host arrays, :data:`BLOCK_STREAMS`) named to Go without a copy, except a
    strided 2-D stream, which goes through a contiguous copy (copied back after the call
    when the IO fills it: ``filled``, the streams' indices its input channels write). The
    arrays are held until the call returns, and the call holds no reference to the IO."""

    __slots__ = ("_h", "count", "id", "_g", "_keep", "_back")

    def __init__(self, h: Any, count: Any, streams: Any, id: Any, filled: frozenset = frozenset()) -> None:
        self._h = h
        self.count = check_int("count", count, 0)
        self.id = check_int("id", id, 0)
        if not isinstance(streams, (tuple, list)):
            raise TypeError(f"streams={type(streams).__name__}, expected a tuple of 6 arrays (vortex's block "
                            f"streams: {_TUPLE})")
        if len(streams) != len(BLOCK_STREAMS):
            raise TypeError(f"streams: {len(streams)} arrays, expected 6 ({_TUPLE})")
        self._g = api.NewIOStreams()
        self._keep: list = []
        self._back: list = []
        for i, (v, (label, dt)) in enumerate(zip(streams, BLOCK_STREAMS)):
            a = host_array(f"streams[{i}] ({label})", v, dt, writable=i in filled)
            c = a
            if a.ndim == 2 and not a.flags.c_contiguous:
                c = np.ascontiguousarray(a)  # a strided view: through a copy
                if i in filled:
                    self._back.append((a, c))
            self._keep.append(c)
            if c.ndim == 2:
                native(self._g.Set)(i, c.ctypes.data, 2, c.shape[0], c.shape[1])
            else:
                native(self._g.Set)(i, 0, c.ndim, 0, 0)

    def run(self, logger: Optional[logging.Logger]) -> int:
        """The call (vortex's ``dispatching block`` logged to ``logger``); its count."""
        if logger is not None:
            logger.debug("dispatching block %d", self.id)
        n = int(native(self._h.Next)(self.id, self.count, self._g))
        for a, c in self._back:
            a[...] = c
        return n

    def outcome(self, logger: Optional[logging.Logger]) -> tuple[int, Optional[Exception]]:
        """:meth:`run` as vortex's callback arguments: ``(count, None)``, or ``(0,
        exception)`` when it raised."""
        try:
            return self.run(logger), None
        except Exception as e:  # reported to the callback, as vortex's worker does
            return 0, e
