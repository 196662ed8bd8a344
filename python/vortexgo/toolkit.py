"""The async toolkit: keep a GPU's upload, compute and download engines busy at once.

- :class:`TripleBuffer`: three device buffers rotating Free -> Uploading ->
  Processing -> Downloading -> Free.
- :class:`AsyncCoordinator`: dedicated upload, compute and download streams;
  every queued op gets an id, dependencies become event waits between
  streams (never host waits), :meth:`~AsyncCoordinator.poll` reports
  completed ops without blocking. A compute op is a kernel (:class:`KernelOp`),
  a timed spin (:class:`SpinOp`) or a Python callable handed the compute
  stream to enqueue CuPy (or vortexgo) work on.
- :class:`PipelineStageManager`: named stages over multi-versioned buffers run
  in a set order per iteration; iterations overlap through events; an
  iteration cycle can be captured into a graph and replayed.
- :class:`ManagedGpuContext`: one device's coordinator plus factories.
- :func:`readback`/:class:`Readback`, :class:`BufferPool`,
  :func:`set_memory_budget`/:func:`memory_usage`, :func:`copy_peer`.

The Go core never calls Python (DESIGN.md section 1): a callable compute op
runs in the calling thread between two Go calls that bracket it with events.
See docs/toolkit.md.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence, Union

import numpy as np

from ._array import Array, _norm_dtype
from ._core import _ext, api
from ._device import Device, DeviceLike, get_device
from ._errors import Closeable, ClosedError, release_on_collect
from ._stream import Stream
from ._toolkit_memory import (
    BufferPool,
    MemoryKindUsage,
    MemoryUsage,
    PoolStats,
    PurposeUsage,
    Readback,
    ReadbackHandle,
    ReadbackStats,
    borrowed,
    copy_peer,
    memory_usage,
    peer_copy_unavailable_reason,
    readback,
    reset_memory_peak,
    set_memory_budget,
)
from ._toolkit_ops import (
    DownloadOp,
    In,
    KernelArg,
    KernelOp,
    Op,
    Out,
    SpinOp,
    UploadOp,
    check_int,
    invalidate,
    owned_view,
    f32,
    f64,
    host_range,
    i32,
    i64,
    timeout_us,
    tk_native,
    u32,
    u64,
)

# The coordinator's fast path (int ids; see gosrc/pyapi/pipeline.go).
_fast_begin = _ext.pyapi_FastBeginExternal
_fast_end = _ext.pyapi_FastEndExternal

__all__ = [
    "TripleBuffer", "AsyncCoordinator", "CompletedOp", "ComputeCallable",
    "PipelineStageManager", "GpuPipelineStage", "PipelineStats", "StageStats", "PipelineGraph",
    "ManagedGpuContext", "StepReport",
    "KernelOp", "SpinOp", "UploadOp", "DownloadOp", "KernelArg", "In", "Out",
    "i32", "u32", "i64", "u64", "f32", "f64",
    "readback", "Readback", "ReadbackHandle", "ReadbackStats",
    "BufferPool", "PoolStats",
    "set_memory_budget", "memory_usage", "reset_memory_peak", "MemoryUsage", "MemoryKindUsage", "PurposeUsage",
    "copy_peer", "peer_copy_unavailable_reason",
]

ComputeCallable = Callable[[Stream], Any]


def _device_range(x: Any, what: str) -> tuple[int, int]:
    """(address, bytes) of device memory: a vortexgo Array or a CUDA array."""
    if isinstance(x, Array):
        x._check()
        return x.ptr, x.nbytes
    cai = getattr(x, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        n = int(np.prod(cai["shape"])) * np.dtype(cai["typestr"]).itemsize
        return int(cai["data"][0]), n
    raise TypeError(f"{what}={type(x).__name__}, expected a vortexgo.Array (or an object with "
                    "__cuda_array_interface__)")


def _deps(deps: Iterable[int]) -> str:
    if deps == ():  # the common case, and the fast path's condition
        return ""
    if isinstance(deps, (int, np.integer)) and not isinstance(deps, bool):
        deps = (deps,)
    try:
        ids = [check_int("dependency", d) for d in deps]
    except TypeError as exc:
        if "dependency" in str(exc):
            raise
        raise TypeError(f"deps={deps!r}, expected a sequence of op ids") from None
    for d in ids:
        if d < 0:
            raise ValueError(f"dependency {d}: expected an op id >= 1")
    return ",".join(map(str, ids))


# --- TripleBuffer --------------------------------------------------------------------


class TripleBuffer(Closeable):
    """Three device buffers of ``size`` elements rotating through the upload,
    process and download stages (prism's ``GpuTripleBuffer``).

    In round r (r = number of :meth:`advance` calls) the upload stage owns slot
    r % 3, processing slot (r-1) % 3 and download slot (r-2) % 3. Each
    ``get_*_buffer`` call moves its stage's slot one state forward and returns
    it as an :class:`vortexgo.Array` view, or None when the slot is not in the
    state that stage expects (upload wants Free, process Uploading, download
    Processing). The states are host bookkeeping, changed atomically and safe
    from several threads; device ordering comes from events (see
    :meth:`ManagedGpuContext.triple_buffered_step`). Buffers are charged to the
    memory budget as ``"triple_buffer"``.

    Args:
        device: the device (default: the default device).
        size: elements per buffer.
        dtype: element type (one of :data:`vortexgo.SUPPORTED_DTYPES`).
    """

    def __init__(self, device: DeviceLike, size: int, dtype: Any = "float32") -> None:
        self._h = None
        self._closed = True
        dev = get_device(device)
        size = check_int("size", size, 1)
        dt = _norm_dtype(dtype)
        self._init(tk_native(api.NewTripleBuffer)(dev._h, size, dt.name), dev, None)

    @classmethod
    def _wrap(cls, h, device: Device, owner: Any) -> "TripleBuffer":
        tb = cls.__new__(cls)
        tb._init(h, device, owner)
        return tb

    def _init(self, h, device: Device, owner: Any) -> None:
        self._h = h
        self._owner = owner
        self.device: Device = device
        self.size: int = h.Size()
        self.dtype: np.dtype = np.dtype(h.DType())
        self.nbytes: int = h.Nbytes()
        self._views = [owned_view(self, h.SlotPtr(i), (self.size,), self.dtype, device) for i in range(3)]
        # A context's triple buffers are released by the context.
        self._fin = release_on_collect(self, h.Close, "a triple buffer") if owner is None else None
        self._closed = False

    def _view(self, slot: int) -> Optional[Array]:
        if slot < 0:
            return None
        return self._views[slot]

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("triple buffer is closed")

    def get_upload_buffer(self) -> Optional[Array]:
        """Claim this round's upload slot (Free -> Uploading); None if it is not Free."""
        self._check()
        return self._view(self._h.GetUploadBuffer())

    def get_process_buffer(self) -> Optional[Array]:
        """Claim this round's process slot (Uploading -> Processing); None if it is not Uploading."""
        self._check()
        return self._view(self._h.GetProcessBuffer())

    def get_download_buffer(self) -> Optional[Array]:
        """Claim this round's download slot (Processing -> Downloading); None if it is not Processing."""
        self._check()
        return self._view(self._h.GetDownloadBuffer())

    def advance(self) -> int:
        """End the round: the download slot, if Downloading, becomes Free; returns the new round."""
        self._check()
        return self._h.Advance()

    @property
    def round(self) -> int:
        """The number of :meth:`advance` calls so far."""
        return self._h.Round()

    def states(self) -> tuple[str, str, str]:
        """The states of slots 0, 1 and 2 ("free", "uploading", "processing", "downloading"), read atomically."""
        self._check()
        a, b, c = self._h.States().split(",")
        return (a, b, c)

    def slot(self, i: int) -> Array:
        """Slot ``i``'s buffer regardless of its state."""
        self._check()
        i = check_int("slot", i)
        if not 0 <= i <= 2:
            raise ValueError(f"slot={i}, expected 0, 1 or 2")
        return self._views[i]

    def reset(self) -> None:
        """Every slot back to Free and round 0 (no stage may still use a buffer)."""
        self._check()
        self._h.Reset()

    @tk_native
    def close(self) -> None:
        """Free the buffers (a context's triple buffers are closed by the context)."""
        self._check()
        if self._owner is not None:
            raise ValueError("this TripleBuffer belongs to a ManagedGpuContext, which closes it")
        self._mark_closed()
        self._fin.detach()
        self._h.Close()

    def _mark_closed(self) -> None:
        self._closed = True
        for v in self._views:
            invalidate(v)

    def __repr__(self) -> str:
        if self._closed:
            return f"<TripleBuffer {self.device.alias} closed>"
        return (f"<TripleBuffer {self.device.alias} 3 x {self.size} {self.dtype.name} round={self.round} "
                f"states={'/'.join(self.states())}>")


# --- AsyncCoordinator ---------------------------------------------------------------------


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
        if not isinstance(timing, bool):
            raise TypeError(f"timing={timing!r}, expected True or False")
        h = tk_native(api.NewAsyncCoordinator)(dev._h, check_int("upload_priority", upload_priority),
                                                check_int("compute_priority", compute_priority),
                                                check_int("download_priority", download_priority), timing)
        self._init(h, dev, None)

    @classmethod
    def _wrap(cls, h, device: Device, owner: Any) -> "AsyncCoordinator":
        c = cls.__new__(cls)
        c._init(h, device, owner)
        return c

    def _init(self, h, device: Device, owner: Any) -> None:
        self._h = h
        self._owner = owner
        self.device: Device = device
        self._keep: dict[int, Any] = {}
        self._ext_errors: dict[int, str] = {}
        self._lock = threading.Lock()  # guards _keep
        self._compute = threading.RLock()  # one compute op at a time (a callable holds the stream)
        self._fid = h.ID()
        self._upload_stream = borrowed(device, h.UploadStream(), self)
        self._compute_stream = borrowed(device, h.ComputeStream(), self)
        self._download_stream = borrowed(device, h.DownloadStream(), self)
        # A context's coordinator is released by the context.
        self._fin = release_on_collect(self, h.Close, "a coordinator") if owner is None else None
        self._closed = False

    # --- streams ---

    @property
    def upload_stream(self) -> Stream:
        """The stream uploads run on (owned by the coordinator)."""
        return self._upload_stream

    @property
    def compute_stream(self) -> Stream:
        """The stream compute ops run on; callables get it as their argument."""
        return self._compute_stream

    @property
    def download_stream(self) -> Stream:
        """The stream downloads run on."""
        return self._download_stream

    @property
    def sequential(self) -> bool:
        """True when all three roles share one stream (``ManagedGpuContext(enable_streams=False)``)."""
        return self._h.Sequential()

    # --- queueing ---

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("coordinator is closed")

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

    @tk_native
    def queue_upload(self, host: Any, buffer: Any, *, nbytes: Optional[int] = None, deps: Iterable[int] = ()) -> int:
        """Copy ``host`` (NumPy or pinned Array) into ``buffer`` (device Array) on the
        upload stream after ``deps``; returns the op id.

        ``nbytes`` defaults to ``buffer.nbytes``; the host side must hold that
        many bytes. From pinned memory the copy is asynchronous; from pageable
        NumPy memory the driver stages it before returning.
        """
        self._check()
        hp, hn = host_range(host, "host")
        dp, dn = _device_range(buffer, "buffer")
        n = dn if nbytes is None else check_int("nbytes", nbytes, 0)
        op_id = self._h.QueueUpload(hp, hn, dp, dn, n, _deps(deps))
        self._hold(op_id, (host, buffer))
        return op_id

    @tk_native
    def queue_download(self, buffer: Any, host_dst: Any, *, nbytes: Optional[int] = None,
                       deps: Iterable[int] = ()) -> int:
        """Copy ``buffer`` (device Array) into ``host_dst`` (NumPy or pinned Array) on the
        download stream after ``deps``; returns the op id. Read ``host_dst`` only
        after the op completed (:meth:`wait`)."""
        self._check()
        dp, dn = _device_range(buffer, "buffer")
        hp, hn = host_range(host_dst, "host_dst")
        n = dn if nbytes is None else check_int("nbytes", nbytes, 0)
        op_id = self._h.QueueDownload(dp, dn, hp, hn, n, _deps(deps))
        self._hold(op_id, (buffer, host_dst))
        return op_id

    @tk_native
    def queue_compute(self, op: Union[KernelOp, SpinOp, ComputeCallable], deps: Iterable[int] = ()) -> int:
        """Queue ``op`` on the compute stream after ``deps``; returns the op id.

        A callable is called at once as ``op(compute_stream)`` and must only
        enqueue work on that stream (no host waits on its results); if it
        raises, the op is still closed (and reported with the error by
        :meth:`poll`) and the exception propagates.
        """
        self._check()
        d = _deps(deps)
        if isinstance(op, (KernelOp, SpinOp)):
            h = op._handle()
            with self._compute:
                op_id = self._h.QueueCompute(h, d)
            if isinstance(op, KernelOp) and op.args:
                self._hold(op_id, op)
            return op_id
        if isinstance(op, (UploadOp, DownloadOp)):
            raise TypeError(f"{type(op).__name__} is a pipeline stage op; use queue_upload/queue_download here")
        if not callable(op):
            raise TypeError(f"op={op!r}, expected a KernelOp, a SpinOp or a callable taking the compute stream")
        with self._compute:
            # Fast path (int ids, gosrc/pyapi/pipeline.go) when there are no
            # deps; the method path raises the full error if it fails.
            op_id = _fast_begin(self._fid) if not d else -1
            if op_id < 0:
                op_id = self._h.BeginExternal(d)
            try:
                op(self._compute_stream)
            except BaseException as exc:
                self._ext_errors[op_id] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                if _fast_end(self._fid, op_id):
                    self._h.EndExternal(op_id)
        return op_id

    # --- completion ---

    @tk_native
    def poll(self) -> list[CompletedOp]:
        """The ops completed since the last poll, without blocking."""
        self._check()
        text = self._h.Poll()
        if not text:
            return []
        out = []
        with self._lock:
            for rec in text.split("\x1e"):
                i, typ, name, ms, nb, err = rec.split("\x1f")
                op_id = int(i)
                self._keep.pop(op_id, None)
                ext = self._ext_errors.pop(op_id, None) if self._ext_errors else None
                out.append(CompletedOp(op_id, typ, name, float(ms), err or ext or None, int(nb)))
        return out

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
        self._h.Wait(op_id, timeout_us(timeout))
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
        return self._h.Pending()

    @property
    def dropped(self) -> int:
        """Reports discarded because :meth:`poll` was not called often enough."""
        return self._h.Dropped()

    @property
    def last_op_id(self) -> int:
        """The latest op id issued (0 before the first)."""
        return self._h.LastID()

    # --- lifetime ---

    @tk_native
    def close(self) -> None:
        """Wait for the streams and release them (a context's coordinator is closed by the context)."""
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
        mode = "sequential" if self.sequential else "3 streams"
        return f"<AsyncCoordinator {self.device.alias} {mode} last_op={self.last_op_id} pending={self.pending}>"


# --- PipelineStageManager --------------------------------------------------------------------

_STREAMS = {"compute": 0, "upload": 1, "download": 2}


@dataclass
class GpuPipelineStage:
    """One named step of a pipeline iteration.

    Args:
        name: the stage's name (in stats).
        input_buffers: indices of the manager's logical buffers it reads.
        output_buffers: indices it writes. A stage runs after the last
            writer of its inputs; a writer after the earlier readers and
            writer of the same buffer version.
        op: a :class:`KernelOp` (with :class:`In`/:class:`Out` arguments for
            its buffers), :class:`SpinOp`, :class:`UploadOp` (host -> output 0)
            or :class:`DownloadOp` (input 0 -> host).
        stream: "compute", "upload" or "download"; default: upload for an
            UploadOp, download for a DownloadOp, else compute.
    """

    name: str
    input_buffers: Sequence[int] = ()
    output_buffers: Sequence[int] = ()
    op: Optional[Op] = None
    stream: Optional[str] = None

    def __repr__(self) -> str:
        return (f"GpuPipelineStage({self.name!r}, in={list(self.input_buffers)}, out={list(self.output_buffers)}, "
                f"op={self.op!r}, stream={self.stream or 'auto'})")


@dataclass(frozen=True)
class StageStats:
    """One stage's times from its start and end events."""

    name: str
    runs: int
    avg_ms: float
    total_ms: float


@dataclass(frozen=True)
class PipelineStats:
    """Statistics of the iterations whose events have completed.

    ``avg_iteration_ms`` is the steady-state period (time between iteration
    ends): overlapped iterations make it shorter than one iteration's
    latency. ``gpu_utilization`` is the fraction of the measured window in
    which some stage ran. ``host_us_per_iteration`` is the host time of
    :meth:`PipelineStageManager.execute_iteration` per call;
    ``graph_host_us_per_iteration`` the same for graph replays.
    """

    iterations: int = 0
    avg_iteration_ms: float = 0.0
    throughput: float = 0.0
    gpu_utilization: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)
    stages: tuple[StageStats, ...] = ()
    host_us_per_iteration: float = 0.0
    graph_iterations: int = 0
    graph_host_us_per_iteration: float = 0.0
    in_flight: int = 0


class PipelineGraph:
    """A captured cycle of pipeline iterations (:meth:`PipelineStageManager.capture`)."""

    def __init__(self, h, manager: "PipelineStageManager") -> None:
        self._h, self._manager, self._closed = h, manager, False
        self.iterations: int = h.Iterations()
        self.nodes: int = h.Nodes()

    @tk_native
    def replay(self, n: int = 1) -> None:
        """Launch the graph ``n`` times after all work issued so far (no host wait);
        each launch runs :attr:`iterations` iterations and counts in the stats."""
        if self._closed:
            raise ClosedError("pipeline graph is closed")
        n = check_int("n", n, 1)
        if n == 1:
            self._h.Replay()
        else:
            self._h.ReplayN(n)

    @tk_native
    def close(self) -> None:
        """Release the graph."""
        if self._closed:
            raise ClosedError("pipeline graph already closed")
        self._closed = True
        self._h.Close()

    def __enter__(self) -> "PipelineGraph":
        return self

    def __exit__(self, *exc) -> None:
        if not self._closed:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.iterations} iterations, {self.nodes} nodes"
        return f"<PipelineGraph {state}>"


class PipelineStageManager(Closeable):
    """Named stages run in a set order once per :meth:`execute_iteration`, on a
    coordinator's three streams (prism's ``PipelineStageManager``).

    Logical buffers have one or more physical versions; iteration k uses
    version k % versions. With three versions the upload of iteration k+1,
    the compute of k and the download of k-1 overlap; hazards are resolved
    by events, never host waits.

    Args:
        coordinator: the coordinator whose streams the stages use (keep it
            open while the manager is used).
    """

    def __init__(self, coordinator: AsyncCoordinator) -> None:
        self._h = None
        self._closed = True
        if not isinstance(coordinator, AsyncCoordinator):
            raise TypeError(f"coordinator={coordinator!r}, expected an AsyncCoordinator")
        coordinator._check()
        self._init(tk_native(api.NewPipelineManager)(coordinator._h), coordinator, None)

    @classmethod
    def _wrap(cls, h, coordinator: AsyncCoordinator, owner: Any) -> "PipelineStageManager":
        m = cls.__new__(cls)
        m._init(h, coordinator, owner)
        return m

    def _init(self, h, coordinator: AsyncCoordinator, owner: Any) -> None:
        self._h = h
        self._owner = owner
        self.coordinator = coordinator
        self.device: Device = coordinator.device
        self._stages: list[GpuPipelineStage] = []
        self._keep: list[Any] = []
        self._graphs: list[PipelineGraph] = []
        self._views: list[Array] = []
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("pipeline manager is closed")

    @tk_native
    def add_buffer(self, nbytes: Optional[int] = None, versions: int = 3, *,
                   arrays: Optional[Sequence[Array]] = None) -> int:
        """Register a logical buffer and return its index.

        Either allocate ``versions`` device buffers of ``nbytes`` each (freed
        with the manager, charged to the budget as ``"pipeline"``), or pass
        ``arrays``: your device arrays, one per version, of equal size.
        """
        self._check()
        if arrays is not None:
            if nbytes is not None:
                raise ValueError("pass nbytes or arrays, not both")
            arrays = list(arrays)
            if not arrays:
                raise ValueError("arrays is empty, expected one Array per version")
            ranges = [_device_range(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
            sizes = {n for _, n in ranges}
            if len(sizes) != 1:
                raise ValueError(f"arrays have sizes {sorted(sizes)} bytes, expected one size")
            self._keep.append(arrays)
            return self._h.AddBuffer(",".join(str(p) for p, _ in ranges), sizes.pop())
        if nbytes is None:
            raise TypeError("add_buffer() needs nbytes or arrays")
        return self._h.NewBuffer(check_int("nbytes", nbytes, 1), check_int("versions", versions, 1))

    @tk_native
    def buffer(self, index: int, version: int = 0, dtype: Any = "uint8") -> Array:
        """Version ``version`` of logical buffer ``index`` as an Array view of ``dtype``."""
        self._check()
        index, version = check_int("index", index, 0), check_int("version", version, 0)
        dt = _norm_dtype(dtype)
        nbytes = self._h.BufferSize(index)
        if nbytes == 0:
            raise ValueError(f"buffer {index} does not exist")
        if nbytes % dt.itemsize:
            raise ValueError(f"buffer {index} has {nbytes} bytes, not a multiple of {dt.name}'s {dt.itemsize}")
        ptr = self._h.BufferPtr(index, version)
        view = owned_view(self, ptr, (nbytes // dt.itemsize,), dt, self.device)
        self._views.append(view)
        return view

    def buffer_versions(self, index: int) -> int:
        """The number of versions of logical buffer ``index`` (0 if it does not exist)."""
        return self._h.BufferVersions(check_int("index", index, 0))

    @tk_native
    def add_stage(self, stage: GpuPipelineStage) -> int:
        """Append ``stage`` and return its index. Stages run in the order added
        until :meth:`set_order`."""
        self._check()
        if not isinstance(stage, GpuPipelineStage):
            raise TypeError(f"stage={stage!r}, expected a GpuPipelineStage")
        if not isinstance(stage.name, str) or not stage.name:
            raise ValueError(f"stage name={stage.name!r}, expected a non-empty str")
        op = stage.op
        if not isinstance(op, (KernelOp, SpinOp, UploadOp, DownloadOp)):
            if callable(op):
                raise TypeError(f"stage {stage.name!r}: a Python callable cannot be a pipeline stage (the Go core "
                                "runs iterations and never calls Python); use AsyncCoordinator.queue_compute")
            raise TypeError(f"stage {stage.name!r}: op={op!r}, expected a KernelOp, SpinOp, UploadOp or DownloadOp")
        stream = stage.stream
        if stream is None:
            stream = "upload" if isinstance(op, UploadOp) else "download" if isinstance(op, DownloadOp) else "compute"
        if stream not in _STREAMS:
            raise ValueError(f"stage {stage.name!r}: stream={stream!r}, expected 'compute', 'upload' or 'download'")
        ins = ",".join(str(check_int("input buffer", b, 0)) for b in stage.input_buffers)
        outs = ",".join(str(check_int("output buffer", b, 0)) for b in stage.output_buffers)
        i = self._h.AddStage(stage.name, ins, outs, _STREAMS[stream], op._handle())
        self._stages.append(stage)
        self._keep.append(op)
        return i

    @property
    def stages(self) -> tuple[GpuPipelineStage, ...]:
        """The stages, by index."""
        return tuple(self._stages)

    @tk_native
    def set_order(self, order: Sequence[int]) -> None:
        """Run these stages, in this order, each iteration (each at most once)."""
        self._check()
        self._h.SetOrder(",".join(str(check_int("stage", i, 0)) for i in order))

    @tk_native
    def execute_iteration(self) -> None:
        """Issue one iteration of the ordered stages; returns without waiting for the device."""
        self._check()
        self._h.ExecuteIteration()

    @tk_native
    def execute_iterations(self, n: int) -> None:
        """Issue ``n`` iterations in one call (less Python overhead than a loop)."""
        self._check()
        self._h.ExecuteIterations(check_int("n", n, 0))

    @property
    def iteration(self) -> int:
        """The number of iterations issued (eager and replayed)."""
        return self._h.Iteration()

    def get_stats(self) -> PipelineStats:
        """Statistics of the completed iterations (no host wait; call
        ``coordinator.synchronize_all()`` first to include everything issued)."""
        self._check()
        vals: dict[str, Any] = {}
        stages: dict[int, dict[str, Any]] = {}
        for line in self._h.Stats().splitlines():
            key, _, value = line.partition("=")
            if key.startswith("stage."):
                _, idx, what = key.split(".", 2)
                stages.setdefault(int(idx), {})[what] = value if what == "name" else float(value)
            else:
                vals[key] = float(value)
        st = tuple(StageStats(s["name"], int(s["runs"]), s["avg_ms"], s["total_ms"]) for _, s in sorted(stages.items()))
        return PipelineStats(
            iterations=int(vals["iterations"]), avg_iteration_ms=vals["avg_iteration_ms"],
            throughput=vals["throughput"], gpu_utilization=vals["gpu_utilization"],
            stage_ms={s.name: s.avg_ms for s in st}, stages=st,
            host_us_per_iteration=vals["host_us_per_iteration"], graph_iterations=int(vals["graph_iterations"]),
            graph_host_us_per_iteration=vals["graph_host_us_per_iteration"], in_flight=int(vals["in_flight"]))

    def reset_stats(self) -> None:
        """Clear the statistics (iterations in flight count in the new window)."""
        self._check()
        self._h.ResetStats()

    @tk_native
    def capture(self, iterations: int = 0) -> PipelineGraph:
        """Capture ``iterations`` iterations (0: one cycle of the buffer versions,
        3 for triple-buffered pipelines) into a graph without running them.
        On CUDA the stages keep their streams, so the graph has parallel
        branches. Replays cost one launch instead of one per stage."""
        self._check()
        g = PipelineGraph(self._h.Capture(check_int("iterations", iterations, 0)), self)
        self._graphs.append(g)
        return g

    @tk_native
    def close(self) -> None:
        """Wait for the streams, release the graphs and free the buffers :meth:`add_buffer` allocated."""
        self._check()
        if self._owner is not None:
            raise ValueError("this pipeline manager belongs to a ManagedGpuContext, which closes it")
        self._close_graphs()
        self._closed = True
        self._h.Close()

    def _close_graphs(self) -> None:
        for g in self._graphs:
            if not g._closed:
                g.close()
        for v in self._views:
            invalidate(v)

    def __repr__(self) -> str:
        if self._closed:
            return "<PipelineStageManager closed>"
        names = ", ".join(s.name for s in self._stages)
        return f"<PipelineStageManager {self.device.alias} stages=[{names}] iteration={self.iteration}>"


# --- ManagedGpuContext ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StepReport:
    """What one :meth:`ManagedGpuContext.triple_buffered_step` queued: op ids (0
    where a stage had no buffer ready) and the round whose input landed in
    ``dst`` when ``download`` is not 0."""

    round: int
    upload: int
    compute: int
    download: int
    downloaded_round: int


class ManagedGpuContext(Closeable):
    """One device's :class:`AsyncCoordinator` plus factories for triple buffers
    and pipeline managers, all closed with the context (prism's
    ``ManagedGpuContext``).

    Args:
        device: the device (default: the default device).
        enable_streams: False runs upload, compute and download on one stream:
            the same API with no overlap (the sequential baseline).
        upload_priority, compute_priority, download_priority: stream priorities.
    """

    def __init__(self, device: DeviceLike = None, enable_streams: bool = True, *, upload_priority: int = 0,
                 compute_priority: int = 0, download_priority: int = 0) -> None:
        self._h = None
        self._closed = True
        self.device: Device = get_device(device)
        self.enable_streams = bool(enable_streams)
        self._h = tk_native(api.NewManagedContext)(
            self.device._h, self.enable_streams, check_int("upload_priority", upload_priority),
            check_int("compute_priority", compute_priority), check_int("download_priority", download_priority))
        self._coord = AsyncCoordinator._wrap(self._h.Coordinator(), self.device, self)
        self._tbs: list[TripleBuffer] = []
        self._managers: list[PipelineStageManager] = []
        self._fin = release_on_collect(self, self._h.Close, "a context")
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise ClosedError("context is closed")

    @property
    def async_coordinator(self) -> AsyncCoordinator:
        """The context's coordinator (closed with the context)."""
        self._check()
        return self._coord

    @tk_native
    def create_triple_buffer(self, size: int, dtype: Any = "float32") -> TripleBuffer:
        """A :class:`TripleBuffer` of ``size`` elements, closed with the context."""
        self._check()
        dt = _norm_dtype(dtype)
        tb = TripleBuffer._wrap(self._h.CreateTripleBuffer(check_int("size", size, 1), dt.name), self.device, self)
        self._tbs.append(tb)
        return tb

    @tk_native
    def create_pipeline_manager(self) -> PipelineStageManager:
        """A :class:`PipelineStageManager` on the context's streams, closed with the context."""
        self._check()
        m = PipelineStageManager._wrap(self._h.CreatePipelineManager(), self._coord, self)
        self._managers.append(m)
        return m

    @tk_native
    def triple_buffered_step(self, triple_buffer: TripleBuffer, op: Union[KernelOp, SpinOp], *,
                             src: Any = None, dst: Any = None, nbytes: Optional[int] = None) -> StepReport:
        """One round of ``triple_buffer``: upload ``src`` into the upload slot,
        process the slot uploaded last round with ``op`` (a :class:`KernelOp`
        with ``In(0)``/``Out(0)`` for the slot, or a :class:`SpinOp`), download
        the slot processed last round into ``dst``, and advance.

        Each stage waits on its slot's previous stage through events, so from
        the third round on the three run at once. ``src=None`` uploads nothing
        (use it to drain the last two results); ``dst`` is required whenever a
        result is ready. ``src``/``dst`` are NumPy or pinned Arrays and are
        kept alive until their copies complete.
        """
        self._check()
        if not isinstance(triple_buffer, TripleBuffer) or triple_buffer._owner is not self:
            raise ValueError("triple_buffer must come from this context's create_triple_buffer()")
        triple_buffer._check()
        if not isinstance(op, (KernelOp, SpinOp)):
            raise TypeError(f"op={op!r}, expected a KernelOp or a SpinOp")
        sp, sn = host_range(src, "src") if src is not None else (0, 0)
        dp, dn = host_range(dst, "dst") if dst is not None else (0, 0)
        n = 0 if nbytes is None else check_int("nbytes", nbytes, 1)
        text = self._h.TripleBufferedStep(triple_buffer._h, sp, sn, dp, dn, n, op._handle())
        rep = StepReport(*map(int, text.split(",")))
        if rep.upload:
            self._coord._hold(rep.upload, src)
        if rep.download:
            self._coord._hold(rep.download, dst)
        if rep.compute and isinstance(op, KernelOp) and op.args:
            self._coord._hold(rep.compute, op)
        return rep

    @tk_native
    def close(self) -> None:
        """Close the pipeline managers, the coordinator (waiting for its streams) and the triple buffers."""
        self._check()
        self._closed = True
        for m in self._managers:
            m._close_graphs()
            m._closed = True
        self._coord._closed = True
        for tb in self._tbs:
            tb._mark_closed()
        self._fin.detach()
        self._h.Close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<ManagedGpuContext {self.device.alias} closed>"
        return (f"<ManagedGpuContext {self.device.alias} streams={'on' if self.enable_streams else 'off'} "
                f"triple_buffers={len(self._tbs)} managers={len(self._managers)}>")
