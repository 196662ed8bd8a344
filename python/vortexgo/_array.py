"""Arrays in device memory or pinned host memory, speaking the standard
protocols: ``__cuda_array_interface__`` (v3), DLPack, the NumPy array
interface and (Python >= 3.12) the buffer protocol."""

from __future__ import annotations

import ctypes
import math
import threading
from typing import Any, Iterable, Optional, Union

import numpy as np

from . import _dlpack
from ._device import Device, DeviceLike, get_device
from ._errors import ClosedError, native, release_on_collect
from ._core import DTYPE_CODES, api, fast_copy, fast_fill
from ._stream import Event, Stream, current_stream

__all__ = ["Array", "empty", "zeros", "full", "from_numpy", "copy", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64", "complex64")

ShapeLike = Union[int, Iterable[int]]


def _norm_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype={dtype!r}, expected one of {', '.join(SUPPORTED_DTYPES)}") from None
    if dt.name not in SUPPORTED_DTYPES:
        raise TypeError(f"dtype={dt.name!r}, expected one of {', '.join(SUPPORTED_DTYPES)}")
    return dt


def _norm_shape(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        if isinstance(shape, (str, bytes)) or any(
                isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in shape):  # type: ignore[union-attr]
            raise TypeError
        out = tuple(int(s) for s in shape)  # type: ignore[union-attr]
    except TypeError:
        raise TypeError(f"shape={shape!r}, expected an int or a sequence of ints") from None
    for s in out:
        if s < 0:
            raise ValueError(f"shape={out}, expected non-negative dimensions")
    return out


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, acc = [], itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


class _SyncEvents(threading.local):
    """One reusable event per thread and device for producer/consumer hand-offs.

    Reuse is safe because each use records and immediately enqueues the
    wait: cuStreamWaitEvent captures the event's state at the call.
    """

    def get(self, device: Device) -> Event:
        d = self.__dict__.setdefault("events", {})
        ev = d.get(device)
        if ev is None:
            ev = d[device] = Event(device)
        return ev


_sync_events = _SyncEvents()
_foreign_streams: dict[tuple[Device, int], Stream] = {}


def _foreign(device: Device, handle: int) -> Stream:
    key = (device, handle)
    s = _foreign_streams.get(key)
    if s is None:
        s = _foreign_streams[key] = Stream.from_external(handle, device)
    return s


def order_after(consumer: Stream, producer: Optional[Stream]) -> None:
    """Make ``consumer`` wait for the work queued so far on ``producer`` (no host wait)."""
    if producer is None or producer is consumer or producer.device.is_cpu:
        return
    if producer.handle == consumer.handle:
        return
    consumer.wait_event(_sync_events.get(producer.device).record(producer))


class Array:
    """A C-contiguous n-d array in device memory or pinned host memory.

    Create with :func:`empty`, :func:`zeros`, :func:`full` or
    :func:`from_numpy`. ``device`` is where it lives (``cuda:N`` or ``cpu``);
    ``pinned`` arrays are page-locked host memory of that device, the source
    and target of truly asynchronous copies.

    The array remembers the stream of its last write (:attr:`stream`);
    consumers are ordered after it: ``__cuda_array_interface__`` reports it
    and ``__dlpack__(stream=...)`` makes the consumer's stream wait on it.
    """

    __slots__ = ("_buf", "_base", "_fin", "ptr", "shape", "dtype", "device", "pinned", "stream", "__weakref__")

    def __init__(self, *a, **k) -> None:
        raise TypeError("create arrays with vortexgo.empty/zeros/full/from_numpy")

    @classmethod
    def _new(cls, buf, ptr: int, shape, dtype, device, pinned, stream, base=None) -> "Array":
        self = object.__new__(cls)
        self._buf = buf
        self._base = base
        # Only the owner frees; views keep the owner alive through _base.
        self._fin = release_on_collect(self, buf.Free, "array memory") if base is None else None
        self.ptr = ptr
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.pinned = pinned
        self.stream = stream
        return self

    # --- shape -------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides (always C-contiguous)."""
        return _c_strides(self.shape, self.dtype.itemsize)

    @property
    def host_accessible(self) -> bool:
        """True for pinned memory and for every array of the CPU backend."""
        return self.pinned or self.device.is_cpu

    def reshape(self, *shape) -> "Array":
        """A view with another shape of the same size (no copy)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        shape = _norm_shape(shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"shape={shape}, expected {self.size} elements in all")
        return Array._new(self._buf, self.ptr, shape, self.dtype, self.device, self.pinned, self.stream,
                          base=self._base or self)

    # --- lifetime ------------------------------------------------------------

    @property
    def freed(self) -> bool:
        """True once the memory (of this array or of the array it views) was freed."""
        return (self._base or self)._buf is None

    def _check(self) -> None:
        if (self._base or self)._buf is None:
            raise ClosedError("array memory was freed")

    @native
    def free(self) -> None:
        """Release the memory now (otherwise it is released when the array is collected).

        Freeing waits for work still using the memory (the driver's rule), so
        keep frees off hot paths; pools exist for that (:class:`vortexgo.BufferPool`).
        """
        if self._base is not None:
            raise ValueError("free() on a view: free the array it views instead")
        if self._buf is None:
            raise ClosedError("array memory already freed")
        buf, self._buf = self._buf, None
        self._fin.detach()
        buf.Free()

    # --- protocols -----------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3 (CUDA device memory only).

        ``stream`` is the producer stream, so a consumer orders itself after
        the last write (CuPy then waits for that stream). See
        :meth:`vortexgo.DeviceTensor.locked` for the ``stream: None`` variant.
        """
        if not self.device.is_cuda or self.pinned:
            raise AttributeError(
                "__cuda_array_interface__ exists only for CUDA device memory "
                f"(this array is {'pinned host' if self.pinned else 'CPU'} memory)")
        self._check()
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": self.stream.handle if self.stream is not None else None,
        }

    @property
    def __array_interface__(self) -> dict:
        """NumPy array interface (host-accessible memory only)."""
        if not self.host_accessible:
            raise AttributeError("__array_interface__ exists only for host-accessible memory; use .numpy()")
        self._check()
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
        }

    def __buffer__(self, flags: int) -> memoryview:
        """Buffer protocol (PEP 688, Python >= 3.12) for host-accessible memory."""
        if not self.host_accessible:
            raise BufferError("device memory has no buffer protocol; use .numpy()")
        if self.dtype.kind == "c":
            # memoryview cannot describe complex items; NumPy then falls back
            # to __array_interface__, which can.
            raise BufferError("complex64 arrays export __array_interface__, not the buffer protocol")
        self._check()
        raw = (ctypes.c_char * self.nbytes).from_address(self.ptr) if self.nbytes else bytearray()
        mv = memoryview(raw).cast("B")
        if self.nbytes and self.ndim:
            mv = mv.cast(self.dtype.char, self.shape)
        # CPython wraps the returned view together with `self`, so consumers
        # keep this array (and its memory) alive.
        return mv

    def __dlpack_device__(self) -> tuple[int, int]:
        """(2, ordinal) for CUDA memory, (3, 0) for pinned host memory, (1, 0) on the CPU backend."""
        if self.device.is_cpu:
            return (_dlpack.kDLCPU, 0)
        if self.pinned:
            return (_dlpack.kDLCUDAHost, 0)
        return (_dlpack.kDLCUDA, self.device.ordinal)

    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[tuple] = None,
                   dl_device: Optional[tuple] = None, copy: Optional[bool] = None) -> Any:
        """Export as a DLPack capsule (zero-copy).

        ``stream`` is the consumer's stream: None means the legacy default
        stream, -1 means do not synchronize, any other value is a CUstream
        handle. The consumer's stream is made to wait on an event recorded on
        this array's producer stream; the host never waits.
        """
        self._check()
        if copy:
            raise BufferError("copy=True is not supported: vortexgo exports zero-copy views")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"dl_device={dl_device}, expected {self.__dlpack_device__()}")
        if self.device.is_cuda and not self.pinned and stream != -1:
            if stream is not None and not isinstance(stream, int):
                raise TypeError(f"stream={stream!r}, expected None, -1 or a CUstream handle int")
            # None and 0 mean the legacy default stream (CU_STREAM_LEGACY == 1).
            handle = 1 if stream in (None, 0) else stream
            if self.stream is not None and handle != self.stream.handle:
                order_after(_foreign(self.device, handle), self.stream)
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        dev_type, dev_id = self.__dlpack_device__()
        itemsize = self.dtype.itemsize
        return _dlpack.to_capsule(
            owner=self, ptr=self.ptr, shape=self.shape,
            strides_elems=tuple(s // itemsize for s in self.strides),
            typestr=self.dtype.str, device_type=dev_type, device_id=dev_id, versioned=versioned)

    # --- host exchange -------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A NumPy array of the contents.

        Host-accessible memory is viewed without a copy (after the producer
        stream finishes, so the view shows the data). CUDA device memory is
        copied into a new NumPy array; both wait for the producer stream:
        this is the explicit, synchronous way back to the host.
        """
        self._check()
        if self.stream is not None:
            self.stream.synchronize()
        if self.host_accessible:
            return np.asarray(self)
        out = np.empty(self.shape, self.dtype)
        s = self.stream or current_stream(self.device)
        native(s._h.Copy)(out.ctypes.data, self.ptr, self.nbytes)
        s.synchronize()
        return out

    def get(self) -> np.ndarray:
        """Alias of :meth:`numpy` (CuPy's name)."""
        return self.numpy()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        where = f"{self.device.alias}{', pinned' if self.pinned else ''}"
        if self.freed:
            return f"<Array {self.shape} {self.dtype.name} on {where}, freed>"
        return f"<Array {self.shape} {self.dtype.name} on {where}, ptr=0x{self.ptr:x}>"


@native
def empty(shape: ShapeLike, dtype: Any = "float32", device: DeviceLike = None, *, pinned: bool = False,
          stream: Optional[Stream] = None) -> Array:
    """An uninitialised array.

    Args:
        shape: an int or a sequence of non-negative ints.
        dtype: one of :data:`SUPPORTED_DTYPES`.
        device: ``"cuda:N"``, ``"cpu"``, a :class:`Device` or None (default device).
        pinned: allocate page-locked host memory of ``device`` instead of device memory.
        stream: the stream later writes are ordered on (default: the current stream).
    """
    shape = _norm_shape(shape)
    dt = _norm_dtype(dtype)
    dev = get_device(device)
    nbytes = math.prod(shape) * dt.itemsize
    buf = dev._h.Alloc(nbytes, bool(pinned))
    s = stream if stream is not None else current_stream(dev)
    return Array._new(buf, buf.Ptr(), shape, dt, dev, bool(pinned), s)


def zeros(shape: ShapeLike, dtype: Any = "float32", device: DeviceLike = None, *, pinned: bool = False,
          stream: Optional[Stream] = None) -> Array:
    """An array of zeros (set asynchronously on ``stream``)."""
    a = empty(shape, dtype, device, pinned=pinned, stream=stream)
    if a.nbytes:
        native(a.stream._h.Memset)(a.ptr, 0, a.nbytes)
    return a


def full(shape: ShapeLike, fill_value: float, dtype: Any = "float32", device: DeviceLike = None, *,
         pinned: bool = False, stream: Optional[Stream] = None) -> Array:
    """An array filled with ``fill_value`` (by a kernel, asynchronously on ``stream``)."""
    if not isinstance(fill_value, (int, float, np.integer, np.floating)) or isinstance(fill_value, bool):
        raise TypeError(f"fill_value={fill_value!r}, expected a real number")
    a = empty(shape, dtype, device, pinned=pinned, stream=stream)
    if a.dtype.kind == "c":
        raise TypeError("full() does not support complex64; use zeros() or from_numpy()")
    if a.size and fast_fill(a.stream._id, a.ptr, a.size, DTYPE_CODES[a.dtype.name], float(fill_value)):
        native(api.Fill)(a.stream._h, a.ptr, a.size, a.dtype.name, float(fill_value))
    return a


def from_numpy(array: Any, device: DeviceLike = None, *, pinned: bool = False,
               stream: Optional[Stream] = None) -> Array:
    """Copy a NumPy (or array-like) into a new array on ``device``.

    The copy is queued on ``stream``; from pageable NumPy memory the driver
    completes it before returning (CUDA's rule), so ``array`` may be reused
    at once.
    """
    src = np.ascontiguousarray(array)
    out = empty(src.shape, src.dtype, device, pinned=pinned, stream=stream)
    if out.nbytes:
        # From pageable memory the driver stages the bytes before returning
        # (and host-to-host copies are synchronous), so `src` may be a
        # temporary: no sync is needed here.
        native(out.stream._h.Copy)(out.ptr, src.ctypes.data, out.nbytes)
    return out


def _endpoint(x: Any, what: str) -> tuple[int, int, Optional[Stream], Optional[Device], Any]:
    """(ptr, nbytes, producer stream, device, keepalive) of an Array or a NumPy array."""
    if isinstance(x, Array):
        x._check()
        return x.ptr, x.nbytes, x.stream, x.device, x
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError(f"{what} must be C-contiguous")
        return x.ctypes.data, x.nbytes, None, None, x
    raise TypeError(f"{what}={type(x).__name__}, expected a vortexgo.Array or a numpy.ndarray")


@native
def copy(dst: Union[Array, np.ndarray], src: Union[Array, np.ndarray], *, stream: Optional[Stream] = None) -> None:
    """Copy ``src`` into ``dst`` (same number of bytes) in stream order.

    Asynchronous when both sides are device or pinned memory; a pageable
    NumPy side makes the driver finish the copy before returning. ``stream``
    defaults to the current stream of the device involved; it first waits
    for ``src``'s producer stream (an event, not a host wait), and ``dst``
    records it as its producer.
    """
    dptr, dn, _, ddev, _ = _endpoint(dst, "dst")
    sptr, sn, sstream, sdev, _ = _endpoint(src, "src")
    if dn != sn:
        raise ValueError(f"dst has {dn} bytes but src has {sn}: expected equal sizes")
    if isinstance(dst, Array) and isinstance(src, Array) and dst.dtype != src.dtype:
        raise TypeError(f"dst dtype {dst.dtype.name} != src dtype {src.dtype.name}")
    dev = ddev or sdev
    if dev is None:
        raise TypeError("copy between two NumPy arrays: use numpy.copyto")
    if ddev is not None and sdev is not None and ddev != sdev and not (ddev.is_cpu or sdev.is_cpu):
        raise ValueError(f"copy between {sdev.alias} and {ddev.alias}: use vortexgo.copy_peer")
    s = stream if stream is not None else current_stream(dev)
    if stream is not None and not isinstance(stream, Stream):
        s = Stream.from_external(stream, dev)
    order_after(s, sstream)
    if dn and fast_copy(s._id, dptr, sptr, dn):
        s._h.Copy(dptr, sptr, dn)  # the method path raises the full error
    if isinstance(dst, Array):
        dst.stream = s
