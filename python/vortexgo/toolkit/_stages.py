"""PipelineStageManager: named stages over multi-versioned buffers, their stats and graphs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .._array import Array, _norm_dtype
from .._attrs import StrictAttributes
from .._core import api
from .._device import Device
from .._errors import Closeable, ClosedError
from .._validate import check_int
from ._coordinator import AsyncCoordinator
from ._lease import invalidate, owned_view
from ._ops import DownloadOp, KernelOp, Op, SpinOp, UploadOp, device_range
from .._layouts import PIPELINE_BUFFER, PIPELINE_GRAPH, PIPELINE_STATS, STAGE_STATS
from ._records import tk_native, words

__all__ = ["GpuPipelineStage", "StageStats", "PipelineStats", "PipelineGraph", "PipelineStageManager"]

_STREAMS = {"compute": 0, "upload": 1, "download": 2}


@dataclass
class GpuPipelineStage(StrictAttributes):
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
        info = PIPELINE_GRAPH.read(h.Info)
        self.iterations: int = info.iterations
        self.nodes: int = info.nodes

    @tk_native
    def replay(self, n: int = 1) -> None:
        """Launch the graph ``n`` times after all work issued so far (no host wait);
        each launch runs ``iterations`` iterations and counts in the stats."""
        if self._closed:
            raise ClosedError("pipeline graph is closed")
        self._h.ReplayN(check_int("n", n, 1))

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
        self._caller_buffers: set[int] = set()
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
            ranges = []
            for i, a in enumerate(arrays):
                r = device_range(a, f"arrays[{i}]")
                if r is None:
                    raise TypeError(f"arrays[{i}]={type(a).__name__}, expected a vortexgo.Array (or an object with "
                                    "__cuda_array_interface__)")
                ranges.append(r)
            sizes = {n for _, n in ranges}
            if len(sizes) != 1:
                raise ValueError(f"arrays have sizes {sorted(sizes)} bytes, expected one size")
            for a in arrays:
                _settle(a, self.device)
            self._keep.append(arrays)
            w = words(p for p, _ in ranges)
            i = self._h.AddBuffer(*w.buffer_info(), sizes.pop())
            self._caller_buffers.add(i)
            return i
        if nbytes is None:
            raise TypeError("add_buffer() needs nbytes or arrays")
        return self._h.NewBuffer(check_int("nbytes", nbytes, 1), check_int("versions", versions, 1))

    @tk_native
    def buffer(self, index: int, version: int = 0, dtype: Any = "uint8") -> Array:
        """Version ``version`` of logical buffer ``index`` as an Array view of
        ``dtype`` (valid until the manager closes)."""
        self._check()
        index, version = check_int("index", index, 0), check_int("version", version, 0)
        dt = _norm_dtype(dtype)
        ptr, nbytes, _ = PIPELINE_BUFFER.read(self._h.Buffer, index, version)
        if nbytes % dt.itemsize:
            raise ValueError(f"buffer {index} has {nbytes} bytes, not a multiple of {dt.name}'s {dt.itemsize}")
        if index in self._caller_buffers:
            # Your arrays (add_buffer(arrays=...)): they own the memory, and the
            # manager keeps them while it lives.
            view = owned_view(_Pointer(int(ptr)), (nbytes // dt.itemsize,), dt, self.device)
            view._base._buf.lease.owner = self._keep
        else:
            # The manager's memory: the view holds a lease that keeps it
            # allocated after close() until the view is gone.
            view = owned_view(self._h.Borrow(index, version), (nbytes // dt.itemsize,), dt, self.device)
        self._views.append(view)
        return view

    def buffer_versions(self, index: int) -> int:
        """The number of versions of logical buffer ``index`` (0 if it does not exist)."""
        index = check_int("index", index, 0)
        try:
            return PIPELINE_BUFFER.read(self._h.Buffer, index, 0).versions
        except ValueError:
            return 0

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
        ins = words(check_int("input buffer", b, 0) for b in stage.input_buffers)
        outs = words(check_int("output buffer", b, 0) for b in stage.output_buffers)
        # The op's own arrays (a copy's host array, a kernel's array arguments) as add_buffer's.
        for a in (op.host,) if isinstance(op, (UploadOp, DownloadOp)) else getattr(op, "args", ()):
            if isinstance(a, Array) or hasattr(a, "__cuda_array_interface__"):
                _settle(a, self.device)
        i = self._h.AddStage(stage.name, *ins.buffer_info(), *outs.buffer_info(), _STREAMS[stream], op._handle())
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
        w = words(check_int("stage", i, 0) for i in order)
        self._h.SetOrder(*w.buffer_info())

    @tk_native
    def execute_iteration(self) -> None:
        """Issue one iteration of the ordered stages; returns without waiting for the device."""
        self._check()
        self._h.ExecuteIterations(1)

    @tk_native
    def execute_iterations(self, n: int) -> None:
        """Issue ``n`` iterations in one call (less Python overhead than a loop)."""
        self._check()
        self._h.ExecuteIterations(check_int("n", n, 0))

    @property
    def iteration(self) -> int:
        """The number of iterations issued (eager and replayed)."""
        self._check()
        return PIPELINE_STATS.read(self._h.Stats).issued

    def get_stats(self) -> PipelineStats:
        """Statistics of the completed iterations (no host wait; call
        ``coordinator.synchronize_all()`` first to include everything issued)."""
        self._check()
        v = PIPELINE_STATS.read(self._h.Stats)
        rows = STAGE_STATS.read_rows(self._h.StageStats, capacity=len(self._stages))
        st = tuple(StageStats(s.name, r.runs, r.avg_ms, r.total_ms) for s, r in zip(self._stages, rows))
        return PipelineStats(
            iterations=v.iterations, avg_iteration_ms=v.avg_iteration_ms, throughput=v.throughput,
            gpu_utilization=v.gpu_utilization, stage_ms={s.name: s.avg_ms for s in st}, stages=st,
            host_us_per_iteration=v.host_us_per_iteration, graph_iterations=v.graph_iterations,
            graph_host_us_per_iteration=v.graph_host_us_per_iteration, in_flight=v.in_flight)

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
        self._views = []  # their leases go back when the user's references do

    def __repr__(self) -> str:
        if self._closed:
            return "<PipelineStageManager closed>"
        names = ", ".join(s.name for s in self._stages)
        return f"<PipelineStageManager {self.device.alias} stages=[{names}] iteration={self.iteration}>"


class _Pointer:
    """A stand-in lease for a view of the caller's own array (which the
    manager keeps alive through ``owner``)."""

    __slots__ = ("ptr", "owner")

    def __init__(self, ptr: int) -> None:
        self.ptr, self.owner = ptr, None

    def Ptr(self) -> int:  # noqa: N802
        return self.ptr

    def Release(self) -> None:  # noqa: N802
        pass


def _settle(array: Any, device: Device) -> None:
    """Wait for the work queued on ``array``'s stream (a vortexgo Array's, or the producer
    stream of its ``__cuda_array_interface__``): the manager's stages run on streams of its
    own, which would not otherwise follow it, so ``vg.zeros(...)``'s memset could land after
    the first stage's write (seen on an H200 under load). A host wait, once, when the array
    is registered (add_buffer, add_stage): set-up, not an iteration."""
    if isinstance(array, Array):
        array.stream.synchronize()
        return
    cai = getattr(array, "__cuda_array_interface__", None)
    ptr = cai.get("stream") if isinstance(cai, dict) else None
    if ptr is not None:  # None: no work pending by the protocol's contract
        from .._stream import Stream

        Stream.from_external(int(ptr), device).synchronize()
