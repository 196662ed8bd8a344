"""Devices: CUDA GPUs and the CPU backend."""

from __future__ import annotations

import json
import operator
import os
import threading
from typing import Any, Union

from ._errors import native
from ._core import api

__all__ = ["Device", "DeviceLike", "cpu_threads", "devices", "get_device", "is_cuda_available", "set_cpu_threads",
           "synchronize_device"]


class Device:
    """A compute device: a CUDA GPU (``"cuda:N"``) or the CPU backend (``"cpu"``).

    Devices are singletons per spec; compare them with ``==``. Obtain them with
    :func:`get_device` or :func:`devices`.
    """

    __slots__ = ("_h", "_rec", "kind", "ordinal", "name", "__weakref__")

    def __init__(self, _handle) -> None:
        self._h = _handle
        self._rec = self._info()  # what never changes is read once
        self.kind: str = self._rec["kind"]
        self.ordinal: int = self._rec["ordinal"]
        self.name: str = self._rec["name"]

    @native
    def _info(self) -> dict:
        # The device's one record (gosrc/devices Info), read in this one place.
        return json.loads(self._h.Info())

    @property
    def alias(self) -> str:
        """``"cuda:N"`` or ``"cpu"``."""
        return f"cuda:{self.ordinal}" if self.kind == "cuda" else "cpu"

    @property
    def is_cuda(self) -> bool:
        """True for a CUDA GPU."""
        return self.kind == "cuda"

    @property
    def is_cpu(self) -> bool:
        """True for the CPU backend."""
        return self.kind == "cpu"

    @property
    def compute_capability(self) -> tuple[int, int]:
        """(major, minor); (0, 0) on the CPU."""
        major, minor = self._rec["compute_capability"]
        return major, minor

    @property
    def total_memory(self) -> int:
        """Total device memory in bytes."""
        return self._rec["total_memory"]

    @property
    def free_memory(self) -> int:
        """Free device memory in bytes."""
        return self._info()["free_memory"]

    @property
    def stream_priority_range(self) -> tuple[int, int]:
        """(least, greatest) stream priority; on CUDA greater priority is a smaller number."""
        least, greatest = self._rec["priority_range"]
        return least, greatest

    @native
    def synchronize(self) -> None:
        """Block until all work on this device is done (other Python threads keep running)."""
        self._h.Synchronize()

    # One Device per spec (its handle is the process's): a copy is the device itself,
    # and a pickle names it, to be looked up again where it is loaded.
    def __copy__(self) -> "Device":
        return self

    def __deepcopy__(self, memo: Any) -> "Device":
        return self

    def __reduce__(self) -> tuple:
        return (get_device, (self.alias,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and (self.kind, self.ordinal) == (other.kind, other.ordinal)

    def __hash__(self) -> int:
        return hash((self.kind, self.ordinal))

    def __str__(self) -> str:
        return self.alias

    def __repr__(self) -> str:
        if self.is_cpu:
            return f"<Device cpu '{self.name}'>"
        major, minor = self.compute_capability
        gib = self.total_memory / 2**30
        return f"<Device {self.alias} '{self.name}' cc={major}.{minor} {gib:.1f} GiB>"


DeviceLike = Union[Device, str, int, None]

_lock = threading.Lock()
_cache: dict[str, Device] = {}


def _default_spec() -> str:
    # VORTEXGO_DEVICE=cpu forces the CPU backend even where a GPU exists.
    return os.environ.get("VORTEXGO_DEVICE", "auto")


def get_device(device: DeviceLike = None) -> Device:
    """Return a device.

    Args:
        device: a :class:`Device`, ``"cuda"``, ``"cuda:N"``, ``"cpu"``, ``"auto"``,
            an int N (meaning ``"cuda:N"``) or None (the default device: the
            first GPU, else the CPU; ``VORTEXGO_DEVICE`` overrides it).
    """
    if isinstance(device, Device):
        return device
    if device is None:
        spec = _default_spec()
    elif isinstance(device, bool):
        raise TypeError(f"device={device!r}, expected a Device, 'cpu', 'cuda', 'cuda:N', 'auto' or an int")
    elif isinstance(device, int):
        if device < 0:
            raise ValueError(f"device={device}, expected a CUDA ordinal >= 0")
        spec = f"cuda:{device}"
    elif isinstance(device, str):
        spec = device.strip().lower()
    else:
        raise TypeError(
            f"device={device!r}, expected a Device, 'cpu', 'cuda', 'cuda:N', 'auto' or an int")
    with _lock:
        dev = _cache.get(spec)
        if dev is None:
            try:
                h = api.GetDevice(spec)
            except RuntimeError as exc:
                from ._errors import translate

                raise translate(exc) from None
            dev = _cache.setdefault(spec, _canonical(Device(h)))
    return dev


def _canonical(dev: Device) -> Device:
    # "auto", "cuda" and "cuda:0" name the same device: share one object.
    return _cache.setdefault(dev.alias, dev)


def _cuda_status() -> dict:
    # available / reason / devices: one record (gosrc/devices CUDAStatus).
    return json.loads(api.CUDAStatus())


def cuda_device_count() -> int:
    """The number of CUDA devices (0 without a driver)."""
    return _cuda_status()["devices"]


def is_cuda_available() -> bool:
    """True when a CUDA driver and at least one GPU are present."""
    return _cuda_status()["available"]


def cuda_unavailable_reason() -> str:
    """Why CUDA is unavailable (the driver's or loader's message), or ``""``."""
    return _cuda_status()["reason"]


def devices() -> list[Device]:
    """All devices: every CUDA GPU (in ordinal order), then the CPU."""
    out = [get_device(f"cuda:{i}") for i in range(cuda_device_count())]
    out.append(get_device("cpu"))
    return out


def synchronize_device(device: DeviceLike = None) -> None:
    """Block until all work on ``device`` (default: the default device) is done."""
    get_device(device).synchronize()


def cpu_threads() -> int:
    """How many threads run the core's CPU work at once (the Go runtime's ``GOMAXPROCS``:
    by default every core this process may use, or the ``GOMAXPROCS`` environment variable)."""
    return int(api.SetCPUThreads(0))


@native
def set_cpu_threads(threads: int) -> int:
    """Let the core's CPU work (the CPU processor spreading a block, a file acquisition's
    readers) run on at most ``threads`` threads at once; returns the previous count.

    For several processes sharing one host, Dask workers for example, each taking its share
    of the cores rather than every process all of them. Processors and acquisitions made
    before the call keep their width: call it first. ``threads`` is 1 to 4096.
    """
    try:
        n = operator.index(threads)  # an int or a NumPy integer; not a float, a str or a bool
    except TypeError:
        n = 0
    if isinstance(threads, bool) or not 1 <= n <= 4096:
        raise ValueError(f"threads={threads!r}, expected an int from 1 to 4096 (cpu_threads() reads the count)")
    return int(api.SetCPUThreads(n))
