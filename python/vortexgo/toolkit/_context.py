"""ManagedGpuContext: one device's coordinator plus factories, closed together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from .._array import _norm_dtype
from .._core import api
from .._device import Device, DeviceLike, get_device
from .._errors import Closeable, ClosedError, release_on_collect
from .._validate import check_bool, check_int
from ._coordinator import AsyncCoordinator, coordinator_options
from ._ops import KernelOp, SpinOp, host_range
from .._layouts import STEP_REPORT
from ._records import tk_native
from ._stages import PipelineStageManager
from ._triple import TripleBuffer

__all__ = ["ManagedGpuContext", "StepReport"]


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

    Closing waits for the coordinator's streams (so no copy is in flight),
    then drops the triple buffers: NumPy views of their slots keep the slot
    memory alive until they go.

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
        self.enable_streams = check_bool("enable_streams", enable_streams)
        self._h = tk_native(api.NewManagedContext)(self.device._h, coordinator_options(
            upload_priority, compute_priority, download_priority, Sequential=not self.enable_streams))
        self._coord = AsyncCoordinator._wrap(self._h.Coordinator(), self.device, self, timing=True)
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
        size = check_int("size", size, 1)
        tb = TripleBuffer._wrap(self._h.CreateTripleBuffer(size, dt.name), self.device, self, size, dt)
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
        h = op._handle()
        rep = StepReport(*STEP_REPORT.read(self._h.TripleBufferedStep, triple_buffer._h, sp, sn, dp, dn, n, h))
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
