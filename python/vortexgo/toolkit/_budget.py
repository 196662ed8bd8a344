"""The process memory budget: limits, usage and peaks of device and pinned memory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from .._core import api
from .._validate import check_int
from ._records import tk_native

__all__ = ["PurposeUsage", "MemoryKindUsage", "MemoryUsage", "set_memory_budget", "memory_usage", "reset_memory_peak"]


@dataclass(frozen=True)
class PurposeUsage:
    """Live allocations under one purpose label."""

    bytes: int
    count: int


@dataclass(frozen=True)
class MemoryKindUsage:
    """Usage of one kind of memory (device or pinned), in bytes; ``limit`` 0 means unlimited."""

    current: int = 0
    peak: int = 0
    limit: int = 0
    active: int = 0
    by_purpose: dict[str, PurposeUsage] = field(default_factory=dict)

    @property
    def available(self) -> Optional[int]:
        """Bytes left under the limit, or None without a limit."""
        return None if self.limit == 0 else max(self.limit - self.current, 0)


@dataclass(frozen=True)
class MemoryUsage:
    """A snapshot of the process memory budget (:func:`memory_usage`)."""

    device: MemoryKindUsage
    pinned: MemoryKindUsage


def memory_usage() -> MemoryUsage:
    """Current, peak and limit of device and pinned memory, with live
    allocations by purpose ("array", "tensor", "triple_buffer", "pipeline",
    "readback", "buffer_pool", "managed_context", ...)."""
    # One structured record (memory.Usage.JSON in Go), parsed here only.
    rec = json.loads(api.MemoryUsage())
    out = {}
    for kind in ("device", "pinned"):
        k = rec[kind]
        by = {p: PurposeUsage(v["bytes"], v["count"]) for p, v in (k.get("by_purpose") or {}).items()}
        out[kind] = MemoryKindUsage(current=k["current"], peak=k["peak"], limit=k["limit"], active=k["active"],
                                    by_purpose=by)
    return MemoryUsage(**out)


@tk_native
def set_memory_budget(device_bytes: Optional[int] = None, pinned_bytes: Optional[int] = None) -> None:
    """Limit the bytes of device and pinned memory vortexgo allocates, process-wide.

    None leaves a limit as it is; 0 removes it. An allocation past a limit
    raises :class:`vortexgo.MemoryBudgetError` naming the request, the usage
    and the limit, and allocates nothing. Lowering a limit below the usage
    frees nothing; it refuses new allocations until usage falls.
    """
    u = memory_usage()
    dev = u.device.limit if device_bytes is None else check_int("device_bytes", device_bytes, 0)
    pin = u.pinned.limit if pinned_bytes is None else check_int("pinned_bytes", pinned_bytes, 0)
    api.SetMemoryBudget(dev, pin)


def reset_memory_peak() -> None:
    """Set the peaks to the current usage (to measure a new phase)."""
    api.ResetMemoryPeak()
