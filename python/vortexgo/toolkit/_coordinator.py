"""AsyncCoordinator: uploads, compute and downloads on three streams ordered by events."""

from __future__ import annotations

import array
import json
import threading
from typing import Any, Callable, Iterable, NamedTuple, Optional, Union

import numpy as np

from .._core import _ext, api
from .._device import Device, DeviceLike, get_device
from .._errors import Closeable, ClosedError, release_on_collect
from .._stream import Stream
from .._validate import check_bool, check_int, check_timeout
from ._ops import DownloadOp, KernelOp, SpinOp, UploadOp, device_range, host_range
from .._layouts import COORDINATOR
from ._records import tk_native, words

__all__ = ["AsyncCoordinator", "CompletedOp", "ComputeCallable", "BorrowedStream", "coordinator_options", "timeout_us"]

ComputeCallable = Callable[[Stream], Any]

# The fast path (registry ids; gosrc/pyapi/pipeline.go): no method lookup,
# no wrapper, -1 means "repeat through the method path for the full error".
# _ext.pyapi_FastExternal(step, coordinator id, op id) runs one step of an
# external op (pipeline.ExternalStep codes below); api.External is its method
# path. _ext.pyapi_FastPoll(coordinator id, address, size) takes completions.
# (_ext is read per call: the Go core loads at first use, _core.py.)
_BEGIN, _END, _TRACK = range(3)
_POLL_CAP = 512  # records per Poll call; more wait for the next call
_TYPES = ("compute", "upload", "download", "?")  # pipeline.OpType
_STAGE_OPS = frozenset((KernelOp, SpinOp, UploadOp, DownloadOp))


def coordinator_options(upload: Any, compute: Any, download: Any, **more: Any) -> str:
    """A pipeline.CoordinatorOptions record of the three stream priorities and ``more``."""
    return json.dumps({"UploadPriority": check_int("upload_priority", upload),
                       "ComputePriority": check_int("compute_priority", compute),
                       "DownloadPriority": check_int("download_priority", download), **more})


def timeout_us(name: str, timeout: Any) -> int:
    """A validated timeout in seconds (None: forever) as Go's microseconds (-1: forever)."""
    t = check_timeout(name, timeout)
    return -1 if t is None else int(round(t * 1e6))


class BorrowedStream(Stream):
    """A stream owned by a toolkit object (a coordinator's or a readback pool's):
    usable like any :class:`vortexgo.Stream` until its owner closes, then
    every use raises ClosedError (its registry id was borrowed from the
    owner's). Closing it is the owner's job, so :meth:`close` refuses."""

    __slots__ = ()

    def close(self) -> None:
        """Refused: the owner (coordinator, context or readback pool) closes this stream."""
        raise ValueError("this stream belongs to a toolkit object; close that object instead")

    def __repr__(self) -> str:
        return f"<Stream {self.device.alias} borrowed from {type(self._owner).__name__}>"


def borrowed(device: Device, handle, owner: Any) -> BorrowedStream:
    return BorrowedStream._wrap(device, handle, owner, release=False)  # type: ignore[return-value]


class CompletedOp(NamedTuple):
    """One completed operation, as reported by :meth:`AsyncCoordinator.poll`.

    ``gpu_ms`` is the time between the op's start and end events on its stream
    (-1 if it was not measured: ``timing=False``, or a failed query); ``error``
    is set when the op failed after it was queued (a callable that raised).
    A named tuple: poll() builds one per op, and that is the cheapest record."""

    id: int
    type: str
    name: str
    gpu_ms: float
    error: Optional[str] = None
    nbytes: int = 0


def _dep_words(deps: Iterable[int]) -> array.array:
    if isinstance(deps, (int, np.integer)) and not isinstance(deps, bool):
        deps = (deps,)
    if isinstance(deps, (str, bytes)) or not hasattr(deps, "__iter__"):
        raise TypeError(f"deps={deps!r}, expected a sequence of op ids")
    ids = [check_int("dependency", d) for d in deps]
    for d in ids:
        if d < 0:
            raise ValueError(f"dependency {d}: expected an op id >= 1")
    return words(ids)  # 0 goes on: the coordinator names it an unknown op (KeyError)


class AsyncCoordinator(Closeable):
    """Uploads, compute and downloads on three dedicated streams, ordered by events
    (prism's ``AsyncCoordinator``).

    Each ``queue_*`` call returns an op id (1, 2, ...). ``deps`` are ids of ops
    that must finish first: they become event waits between streams, so the
    host never waits. A compute op is a :class:`KernelOp`, a :class:`SpinOp`, or
    a Python callable ``op(stream)`` that enqueues CuPy or vortexgo work on the
    given compute stream (``with stream:`` makes it CuPy's current stream); it
    runs in the calling thread, between two Go calls that record its start and
    end events. The coordinator keeps the arrays of queued copies alive until
    it sees them complete (:meth:`poll`, :meth:`wait`, :meth:`synchronize_all`).

    After :meth:`close` every method, the stream properties and the streams
    obtained from them raise ClosedError.

    Errors: an unknown id raises ``KeyError``; a dependency on a future op, a
    cycle, a host buffer smaller than the copy raise ``ValueError``; each names
    the id or the sizes involved.

    Args:
        device: the device (default: the default device).
        upload_priority, compute_priority, download_priority: stream
            priorities (on CUDA smaller is more urgent; clamped to the device's range).
        timing: time every op on the GPU (``CompletedOp.gpu_ms``). False uses one
            plain completion event per op instead of a timing pair (``gpu_ms``
            is then -1): a timing event record costs 1.2 us on an H200, a plain
            one 0.2 us, so turn it off for very high op rates.
    """

    def __init__(self, device: DeviceLike = None, *, upload_priority: int = 0, compute_priority: int = 0,
                 download_priority: int = 0, timing: bool = True) -> None:
        self._h = None
        self._closed = True
        dev = get_device(device)
        h = tk_native(api.NewAsyncCoordinator)(dev._h, coordinator_options(
            upload_priority, compute_priority, download_priority, NoTiming=not check_bool("timing", timing)))
        self._init(h, dev, None, timing)

    @classmethod
    def _wrap(cls, h, device: Device, owner: Any, timing: bool) -> "AsyncCoordinator":
        c = cls.__new__(cls)
        c._init(h, device, owner, timing)
        return c

    def _init(self, h, device: Device, owner: Any, timing: bool) -> None:
        self._h = h
        self._owner = owner
        self.device: Device = device
        self._keep: dict[int, Any] = {}
        self._ext_errors: dict[int, str] = {}
        self._kinds: dict[float, tuple[str, str, Optional[str]]] = {}  # Poll kind -> (type, name, failed)
        self._lock = threading.Lock()  # guards _keep
        self._compute = threading.RLock()  # one compute op at a time (a callable holds the stream)
        self._fid = h.ID()
        self._timing = timing
        self._fields = api.PollFields  # values per completion record (pipeline.PollFields)
        self._pbuf = array.array("d", bytes(8 * self._fields * _POLL_CAP))
        self._paddr = self._pbuf.buffer_info()[0]
        self._streams = tuple(borrowed(device, h.Stream(i), self) for i in range(3))
        self._compute_stream = self._streams[1]
        # A context's coordinator is released by the context.
        self._fin = release_on_collect(self, h.Close, "a coordinator") if owner is None else None
        self._closed = False

    # --- streams ---

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("coordinator is closed")

    @property
    def upload_stream(self) -> Stream:
        """The stream uploads run on (owned by the coordinator)."""
        self._check()
        return self._streams[0]

    @property
    def compute_stream(self) -> Stream:
        """The stream compute ops run on; callables get it as their argument."""
        self._check()
        return self._streams[1]

    @property
    def download_stream(self) -> Stream:
        """The stream downloads run on."""
        self._check()
        return self._streams[2]

    def _info(self) -> Any:
        self._check()
        return COORDINATOR.read(self._h.Info)

    @property
    def sequential(self) -> bool:
        """True when all three roles share one stream (``ManagedGpuContext(enable_streams=False)``)."""
        return bool(self._info().sequential)

    # --- queueing ---

    def _hold(self, op_id: int, objs: Any) -> None:
        with self._lock:
            self._keep[op_id] = objs
            if len(self._keep) > 512:
                self._prune_locked()

    def _prune_locked(self) -> None:
        # Oldest first: stop at the first op not known complete.
        for op_id in list(self._keep):
            if not self._h.Done(op_id):
                break
            del self._keep[op_id]

    def _copy(self, host: Any, buffer: Any, nbytes: Optional[int], deps: Iterable[int], up: bool) -> int:
        self._check()
        hp, hn = host_range(host, "host" if up else "host_dst")
        dr = device_range(buffer, "buffer")
        if dr is None:
            raise TypeError(f"buffer={type(buffer).__name__}, expected a vortexgo.Array (or an object with "
                            "__cuda_array_interface__)")
        dp, dn = dr
        n = dn if nbytes is None else check_int("nbytes", nbytes, 0)
        d = _dep_words(deps)
        op_id = self._h.QueueCopy(up, hp, hn, dp, dn, n, *d.buffer_info())
        self._hold(op_id, (host, buffer))
        return op_id

    @tk_native
    def queue_upload(self, host: Any, buffer: Any, *, nbytes: Optional[int] = None, deps: Iterable[int] = ()) -> int:
        """Copy ``host`` (NumPy or pinned Array) into ``buffer`` (device Array) on the
        upload stream after ``deps``; returns the op id.

        ``nbytes`` defaults to ``buffer.nbytes``; the host side must hold that
        many bytes. From pinned memory the copy is asynchronous; from pageable
        NumPy memory the driver stages it before returning.
        """
        return self._copy(host, buffer, nbytes, deps, True)

    @tk_native
    def queue_download(self, buffer: Any, host_dst: Any, *, nbytes: Optional[int] = None,
                       deps: Iterable[int] = ()) -> int:
        """Copy ``buffer`` (device Array) into ``host_dst`` (NumPy or pinned Array) on the
        download stream after ``deps``; returns the op id. Read ``host_dst`` only
        after the op completed (:meth:`wait`)."""
        return self._copy(host_dst, buffer, nbytes, deps, False)

    def queue_compute(self, op: Union[KernelOp, SpinOp, ComputeCallable], deps: Iterable[int] = ()) -> int:
        """Queue ``op`` on the compute stream after ``deps``; returns the op id.

        A callable is called at once as ``op(compute_stream)`` and must only
        enqueue work on that stream (no host waits on its results); if it
        raises, the op is still closed (and reported with the error by
        :meth:`poll`) and the exception propagates.
        """
        # The hot path (a callable, no deps) is two fast-path calls around
        # the callable and a lock, nothing else: no wrapper, no conversion.
        # Everything unusual takes _queue_slow.
        if op.__class__ in _STAGE_OPS or self._closed or deps != () or not callable(op):
            return self._queue_slow(op, deps)
        # The lock serialises callables (one open external op per
        # coordinator, the Go rule); reentrant, so a callable that queues on
        # its own coordinator gets the Go error instead of a deadlock.
        lock = self._compute
        lock.acquire()
        if not self._timing:
            # Without timing there is no start event to record before the
            # work: run it, then track it as one op in one call.
            try:
                op(self._compute_stream)
            except BaseException as exc:
                op_id = self._done_after_work()
                self._ext_errors[op_id] = f"{type(exc).__name__}: {exc}"
                raise
            else:
                op_id = _ext.pyapi_FastExternal(_TRACK, self._fid, 0)
                if op_id < 0:
                    op_id = self._done()
            finally:
                lock.release()
            return op_id
        try:
            op_id = _ext.pyapi_FastExternal(_BEGIN, self._fid, 0)
            if op_id < 0:
                op_id = self._begin(())
            try:
                op(self._compute_stream)
            except BaseException as exc:
                self._ext_errors[op_id] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                if _ext.pyapi_FastExternal(_END, self._fid, op_id):
                    self._end(op_id)
        finally:
            lock.release()
        return op_id

    def _queue_slow(self, op: Any, deps: Iterable[int]) -> int:
        self._check()
        if isinstance(op, (KernelOp, SpinOp, UploadOp, DownloadOp)):
            return self._queue_op(op, deps)
        if not callable(op):
            raise TypeError(f"op={op!r}, expected a KernelOp, a SpinOp or a callable taking the compute stream")
        with self._compute:
            op_id = self._begin(deps)
            try:
                op(self._compute_stream)
            except BaseException as exc:
                self._ext_errors[op_id] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                if _ext.pyapi_FastExternal(_END, self._fid, op_id):
                    self._end(op_id)
        return op_id

    @tk_native
    def _begin(self, deps: Iterable[int]) -> int:
        d = _dep_words(deps)  # referenced across the call: Go reads its memory
        return api.External(_BEGIN, self._fid, 0, *d.buffer_info())

    @tk_native
    def _done(self) -> int:
        return api.External(_TRACK, self._fid, 0, 0, 0)

    def _done_after_work(self) -> int:
        op_id = _ext.pyapi_FastExternal(_TRACK, self._fid, 0)
        return op_id if op_id > 0 else self._done()

    @tk_native
    def _end(self, op_id: int) -> None:
        api.External(_END, self._fid, op_id, 0, 0)

    @tk_native
    def _queue_op(self, op: Any, deps: Iterable[int]) -> int:
        if isinstance(op, (UploadOp, DownloadOp)):
            raise TypeError(f"{type(op).__name__} is a pipeline stage op; use queue_upload/queue_download here")
        h = op._handle()
        d = _dep_words(deps)
        with self._compute:
            op_id = self._h.QueueCompute(h, *d.buffer_info())
        if isinstance(op, KernelOp) and op.args:
            self._hold(op_id, op)
        return op_id

    # --- completion ---

    def poll(self) -> list[CompletedOp]:
        """The ops completed since the last poll, without blocking."""
        if self._closed:
            raise ClosedError("coordinator is closed")
        k = _ext.pyapi_FastPoll(self._fid, self._paddr, self._fields * _POLL_CAP)
        if k <= 0:
            if k < 0:
                raise ClosedError("coordinator is closed")
            return []
        out = self._records(k)
        while k == _POLL_CAP:
            k = max(_ext.pyapi_FastPoll(self._fid, self._paddr, self._fields * _POLL_CAP), 0)
            out += self._records(k)
        return out

    def _records(self, k: int) -> list[CompletedOp]:
        f = self._fields
        v = self._pbuf[:k * f].tolist()
        kinds, new = self._kinds, tuple.__new__  # tuple.__new__: the C constructor, no Python __new__
        out = []
        for i in range(0, k * f, f):
            kind = kinds.get(v[i + 1]) or self._kind(v[i + 1])
            out.append(new(CompletedOp, (int(v[i]), kind[0], kind[1], v[i + 2], kind[2], int(v[i + 3]))))
        if self._ext_errors or any(op.error for op in out):
            out = [self._with_error(op) for op in out]
        if self._keep:
            with self._lock:
                for op in out:
                    self._keep.pop(op.id, None)
        return out

    def _kind(self, code: float) -> tuple[str, str, Optional[str]]:
        # kind = (name index * 4 + type) * 2 + failed (gosrc/pyapi Poll);
        # a failed op's kind carries a marker, its text comes from OpError.
        c = int(code)
        kind = (_TYPES[c // 2 % 4], self._h.Name(c // 8), "?" if c % 2 else None)
        self._kinds[code] = kind
        return kind

    def _with_error(self, op: CompletedOp) -> CompletedOp:
        ext = self._ext_errors.pop(op.id, None) if self._ext_errors else None
        err = self._h.OpError(op.id) if op.error else None
        return op._replace(error=err or ext) if (err or ext or op.error) else op

    @tk_native
    def done(self, op_id: int) -> bool:
        """True once op ``op_id`` completed (does not block)."""
        self._check()
        return self._h.Done(check_int("op_id", op_id))

    @tk_native
    def wait(self, op_id: int, timeout: Optional[float] = None) -> None:
        """Block until op ``op_id`` completes, at most ``timeout`` seconds (None: no
        limit), else raise ``TimeoutError``. Other Python threads keep running."""
        self._check()
        op_id = check_int("op_id", op_id)
        self._h.Wait(op_id, timeout_us("timeout", timeout))
        with self._lock:
            self._keep.pop(op_id, None)

    @tk_native
    def synchronize_all(self) -> None:
        """Block until the three streams are idle (the explicit full barrier)."""
        self._check()
        self._h.SynchronizeAll()
        with self._lock:
            self._keep.clear()

    @property
    def pending(self) -> int:
        """Ops queued and not yet known complete."""
        return self._info().pending

    @property
    def dropped(self) -> int:
        """Reports discarded because :meth:`poll` was not called often enough."""
        return self._info().dropped

    @property
    def last_op_id(self) -> int:
        """The latest op id issued (0 before the first)."""
        return self._info().last_id

    # --- lifetime ---

    @tk_native
    def close(self) -> None:
        """Wait for the streams and release them (a context's coordinator is
        closed by the context). Its streams, and its fast-path id, are dead
        from then on: using them raises ClosedError."""
        self._check()
        if self._owner is not None:
            raise ValueError("this AsyncCoordinator belongs to a ManagedGpuContext, which closes it")
        self._closed = True
        self._fin.detach()
        self._h.Close()
        self._keep.clear()

    def __repr__(self) -> str:
        if self._closed:
            return f"<AsyncCoordinator {self.device.alias} closed>"
        pending, _, last, seq = self._info()
        mode = "sequential" if seq else "3 streams"
        return f"<AsyncCoordinator {self.device.alias} {mode} last_op={int(last)} pending={int(pending)}>"
