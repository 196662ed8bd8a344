"""Arrays in device memory or pinned host memory, speaking the standard
protocols: ``__cuda_array_interface__`` (v3), DLPack, the NumPy array
interface and (Python >= 3.12) the buffer protocol."""

from __future__ import annotations

import math
import numbers
import threading
from typing import Any, Iterable, Optional, Union

import numpy as np

from . import _dlpack
from ._device import Device, DeviceLike, get_device
from ._errors import ClosedError, native, release_on_collect
from ._attrs import NoCopy
from ._core import DTYPE_CODES, _ext, api
from ._lifetime import Keep, host_view
from ._stream import Event, Stream, current_stream
from ._validate import INT64_MAX, MAX_ELEMENTS, check_bool, check_native_order, check_shape

__all__ = ["Array", "empty", "zeros", "full", "from_numpy", "copy", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64", "complex64")

ShapeLike = Union[int, Iterable[int]]
MAX_NDIM = 64  # NumPy's (NPY_MAXDIMS): more could not be viewed or exported

# Array operations (memory.OpCode, run by gosrc/pyapi/kernels.go): memory is
# named by the id of the Go object owning or borrowing it, so Go holds it for
# the call.
OP_COPY, OP_MEMSET, OP_FILL, OP_SCALE_OFFSET, OP_CAST = range(5)


def run_op(op: int, s: Stream, dm: int, dst: int, sm: int, src: int, n: int, dt: int = 0, sdt: int = 0,
           a: float = 0.0, b: float = 0.0) -> None:
    """One array operation on ``s``: (dm, dst) and (sm, src) are (memory id,
    address); id 0 is a host address the caller keeps alive (a NumPy array).
    The fast path returns -1 on any error; the method path then raises it."""
    if _ext.pyapi_FastArrayOp(op, s._id, dm, dst, sm, src, n, dt, sdt, a, b):
        native(api.ArrayOp)(op, s._id, dm, dst, sm, src, n, dt, sdt, a, b)


def _norm_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """A supported dtype in native byte order (byte-swapped ones are refused:
    the Go core computes in native order)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name}={dtype!r}, expected one of {', '.join(SUPPORTED_DTYPES)}") from None
    if dt.name not in SUPPORTED_DTYPES:
        raise TypeError(f"{name}={dt.name!r}, expected one of {', '.join(SUPPORTED_DTYPES)}")
    return _native(name, dt)


def _native(name: str, dt: np.dtype) -> np.dtype:
    # check_native_order refuses byte-swapped dtypes; an explicitly native
    # one ("<f4" on a little-endian host) is canonicalised first, since that
    # check compares byte-order characters ('<' is not '=').
    return np.dtype(dt.name) if dt.isnative else check_native_order(name, dt)


def _norm_shape(shape: ShapeLike, name: str = "shape") -> tuple[int, ...]:
    """Ints >= 0 (floats refused, not truncated) whose product is at most
    ``MAX_ELEMENTS``, bounded before anything is allocated. The product of
    the non-zero dimensions is bounded too: an empty array with a 2**60
    dimension has no NumPy, DLPack or Go form either."""
    dims = check_shape(name, shape)
    if len(dims) > MAX_NDIM:
        raise ValueError(f"{name} has {len(dims)} dimensions, expected at most {MAX_NDIM} (NumPy's limit)")
    if math.prod(d for d in dims if d) > MAX_ELEMENTS:
        raise ValueError(f"{name}={dims}: its non-zero dimensions give over {MAX_ELEMENTS} elements, "
                         f"expected at most that")
    return dims


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


def _dlpack_version(v: Any) -> tuple[int, int]:
    """The consumer's ``max_version``: a (major, minor) tuple of ints (the DLPack protocol)."""
    if not isinstance(v, tuple) or len(v) != 2 or not all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
        raise TypeError(f"max_version={v!r:.60}, expected None or a (major, minor) tuple of ints, e.g. (1, 0)")
    return int(v[0]), int(v[1])


class Array(NoCopy):
    """A C-contiguous n-d array in device memory or pinned host memory.

    Create with :func:`empty`, :func:`zeros`, :func:`full` or
    :func:`from_numpy`. ``device`` is where it lives (``cuda:N`` or ``cpu``);
    ``pinned`` arrays are page-locked host memory of that device, the source
    and target of truly asynchronous copies.

    The array remembers the stream of its last write (``stream``);
    consumers are ordered after it: ``__cuda_array_interface__`` reports it
    and ``__dlpack__(stream=...)`` makes the consumer's stream wait on it.

    Lifetime: the array owns its memory; every export borrows it (views from
    :meth:`reshape`, NumPy views, buffer-protocol exports, DLPack capsules).
    :meth:`free` releases the owner's reference: the memory goes back now if
    nothing borrows it, else when the last borrower lets go, so no consumer
    ever reads freed memory. See docs/resources.md.
    """

    _copy_hint = ("share the array, or make an independent one with vortexgo.empty(a.shape, a.dtype, a.device) "
                  "and vortexgo.copy(dst, a) (or vortexgo.from_numpy(a.numpy()))")
    __slots__ = ("_buf", "_base", "_fin", "_keep", "_mid", "_export", "ptr", "shape", "dtype", "device",
                 "pinned", "stream", "__weakref__")

    def __init__(self, *a, **k) -> None:
        raise TypeError("create arrays with vortexgo.empty/zeros/full/from_numpy")

    @classmethod
    def _make(cls, buf, keep: Optional[Keep], mid: int, ptr: int, shape, dtype, device, pinned, stream,
              base=None) -> "Array":
        self = object.__new__(cls)
        self._buf, self._keep, self._mid, self._base, self._export = buf, keep, mid, base, None
        # Only an owner releases its reference on collection; a view's Keep
        # gives its borrow back when the last view sharing it goes.
        self._fin = release_on_collect(self, buf.Free, "array memory") if buf is not None else None
        self.ptr, self.shape, self.dtype, self.device, self.pinned, self.stream = (
            ptr, shape, dtype, device, pinned, stream)
        return self

    @classmethod
    def _new(cls, buf, ptr: int, shape, dtype, device, pinned, stream, base=None) -> "Array":
        """The owner of ``buf`` (base None), or a view of the array ``base``.

        ``buf`` is a pyapi Buffer (memory.Shared: views borrow it in Go) or
        any object with ``Free()`` whose memory another object owns (the
        toolkit's pools): views of those keep the Python owner alive and
        fail with ClosedError once it sets ``_buf`` to None."""
        if base is None:
            mid = buf.ID() if hasattr(buf, "ID") else 0
            return cls._make(buf, None, mid, ptr, shape, dtype, device, pinned, stream)
        return base._view(ptr, shape, dtype, cls)

    @classmethod
    def _from_lease(cls, lease, shape, dtype, device, pinned, stream=None) -> "Array":
        """A view over memory borrowed from Go (a pyapi Lease): it keeps the
        memory alive for as long as it, or any view of it, lives."""
        ptr = lease.Ptr()
        keep = Keep(lease.Release, ptr, math.prod(shape) * dtype.itemsize, what="borrowed array memory")
        return cls._make(None, keep, lease.ID(), ptr, shape, dtype, device, pinned, stream)

    def _borrow(self) -> Keep:
        """A reference keeping this array's memory alive for a new borrower."""
        if self._keep is not None:
            return self._keep  # views share one borrow; Python's references keep it
        self._check()
        if not self._mid:
            # Memory another Python object owns: keeping that object is the borrow.
            return Keep(None, self.ptr, self.nbytes, parent=self._base or self)
        buf = self._buf  # read once: free() in another thread may clear it
        if buf is None:
            raise ClosedError("array memory was freed")
        lease = native(buf.Lease)()
        return Keep(lease.Release, self.ptr, self.nbytes, parent=lease, what="borrowed array memory")

    def _view(self, ptr: int, shape, dtype, cls: Optional[type] = None) -> "Array":
        # cls: the view's class (the toolkit's PoolArray); a plain Array by default.
        make = (cls or Array)._make
        if self._keep is None and not self._mid:
            self._check()
            root = self._base or self
            return make(None, None, 0, ptr, shape, dtype, self.device, self.pinned, self.stream, base=root)
        keep = self._borrow()
        mid = self._mid if self._keep is not None else keep.parent.ID()
        return make(None, keep, mid, ptr, shape, dtype, self.device, self.pinned, self.stream)

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
        """A view with another shape of the same size (no copy). The view
        borrows the memory: it stays valid after :meth:`free` of this array."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        shape = _norm_shape(shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"shape={shape}, expected {self.size} elements in all")
        return self._view(self.ptr, shape, self.dtype)

    # --- lifetime ------------------------------------------------------------

    @property
    def freed(self) -> bool:
        """Whether this array can no longer be used (an owner after :meth:`free`
        - its borrowers may still hold the memory - and a view never while it lives)."""
        if self._keep is not None:
            return not self._keep.alive
        return (self._base or self)._buf is None

    def _check(self) -> None:
        if self.freed:
            raise ClosedError("array memory was freed")

    @native
    def free(self) -> None:
        """Release this array's reference to its memory: the memory goes back
        now if nothing borrows it, else when the last borrower (a view, a NumPy
        view, a DLPack capsule, an exported interface) lets go. Afterwards the
        array's own methods raise ClosedError.

        Freeing waits for work still using the memory (the driver's rule), so
        keep frees off hot paths; pools exist for that (:class:`vortexgo.toolkit.BufferPool`).
        """
        if self._base is not None or self._keep is not None:
            raise ValueError("free() on a view: free the array it views instead")
        if self._buf is None:
            raise ClosedError("array memory already freed")
        buf, self._buf = self._buf, None
        self._fin.detach()
        buf.Free()

    def _export_borrow(self) -> None:
        # __cuda_array_interface__ and __array_interface__ consumers (CuPy's
        # asarray, NumPy) keep this Array object, not a token of ours, and
        # read the raw pointer for as long as they live. So once either was
        # handed out, the array itself holds a borrow that is released only
        # when the array object is collected: free() then drops the owner's
        # reference, and the memory goes back with the last consumer.
        self._check()
        if self._export is None and self._keep is None:
            self._export = self._borrow()

    # --- protocols -----------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3 (CUDA device memory only).

        ``stream`` is the producer stream, so a consumer orders itself after
        the last write (CuPy then waits for that stream). See
        :meth:`vortexgo.DeviceTensor.locked` for the ``stream: None`` variant.
        Handing it out makes this array keep its memory until it is collected
        (consumers hold the array): :meth:`free` defers the release until then.
        """
        if not self.device.is_cuda or self.pinned:
            raise AttributeError(
                "__cuda_array_interface__ exists only for CUDA device memory "
                f"(this array is {'pinned host' if self.pinned else 'CPU'} memory)")
        self._export_borrow()
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": self._producer()[1],
        }

    @property
    def __array_interface__(self) -> dict:
        """NumPy array interface (host-accessible memory only); like
        ``__cuda_array_interface__`` it makes the array keep its memory until collected."""
        if not self.host_accessible:
            raise AttributeError("__array_interface__ exists only for host-accessible memory; use .numpy()")
        self._export_borrow()
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
        }

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        """NumPy conversion: a borrowing view of host-accessible memory (a copy
        when ``copy=True``); device memory needs the explicit :meth:`numpy`."""
        if not self.host_accessible:
            raise TypeError("implicit conversion of device memory to NumPy is not allowed; use .numpy() or .get()")
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"dtype={dtype!r} needs a copy, but copy=False")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __buffer__(self, flags: int) -> memoryview:
        """Buffer protocol (PEP 688, Python >= 3.12) for host-accessible memory.
        The export borrows the memory: it stays valid after :meth:`free`."""
        if not self.host_accessible:
            raise BufferError("device memory has no buffer protocol; use .numpy()")
        # The memoryview's exporter is a NumPy view whose base chain holds the
        # borrow, so the memory lives as long as any consumer of the view.
        return memoryview(host_view(self.ptr, self.shape, self.dtype, self._borrow()))

    def __dlpack_device__(self) -> tuple[int, int]:
        """(2, ordinal) for CUDA memory, (3, 0) for pinned host memory, (1, 0) on the CPU backend."""
        if self.device.is_cpu:
            return (_dlpack.kDLCPU, 0)
        if self.pinned:
            return (_dlpack.kDLCUDAHost, 0)
        return (_dlpack.kDLCUDA, self.device.ordinal)

    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[tuple] = None,
                   dl_device: Optional[tuple] = None, copy: Optional[bool] = None) -> Any:
        """Export as a DLPack capsule (zero-copy) that borrows the memory: the
        consumer's tensor stays valid after :meth:`free` until it is deleted.

        ``stream`` is the consumer's stream (the array API standard): on the
        CPU backend it must be None; on CUDA None (the legacy default
        stream), -1 (do not synchronize), 1, 2 or a CUstream handle > 2. The
        consumer's stream is made to wait on an event recorded on this
        array's producer stream; the host never waits.
        """
        self._check()
        if self.device.is_cpu:
            if stream is not None:
                raise ValueError(f"stream={stream!r}, expected None for CPU memory (the array API standard)")
        elif stream is not None and (isinstance(stream, bool) or not isinstance(stream, (int, np.integer))
                                     or stream == 0 or stream < -1 or stream > INT64_MAX):
            raise ValueError(f"stream={stream!r}, expected None, -1, 1, 2 or a CUstream handle > 2")
        if copy:
            raise BufferError("copy=True is not supported: vortexgo exports zero-copy views")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"dl_device={dl_device}, expected {self.__dlpack_device__()}")
        if self.device.is_cuda and not self.pinned and stream != -1:
            # None means the legacy default stream (CU_STREAM_LEGACY == 1).
            handle = 1 if stream is None else int(stream)
            producer, producer_handle = self._producer()
            if producer is not None and handle != producer_handle:
                order_after(_foreign(self.device, handle), producer)
        versioned = max_version is not None and _dlpack_version(max_version) >= (1, 0)
        dev_type, dev_id = self.__dlpack_device__()
        itemsize = self.dtype.itemsize
        return _dlpack.to_capsule(
            owner=self._borrow(), ptr=self.ptr, shape=self.shape,
            strides_elems=tuple(s // itemsize for s in self.strides),
            typestr=self.dtype.str, device_type=dev_type, device_id=dev_id, versioned=versioned)

    # --- host exchange -------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """A NumPy array of the contents.

        Host-accessible memory is viewed without a copy (after the producer
        stream finishes, so the view shows the data); the view borrows the
        memory, so it stays valid after :meth:`free`. CUDA device memory is
        copied into a new NumPy array; both wait for the producer stream:
        this is the explicit, synchronous way back to the host.
        """
        self._check()
        producer, _ = self._producer()
        if producer is not None:
            producer.synchronize()
        if self.host_accessible:
            return host_view(self.ptr, self.shape, self.dtype, self._borrow())
        out = np.empty(self.shape, self.dtype)
        s = self.stream or current_stream(self.device)
        run_op(OP_COPY, s, 0, out.ctypes.data, self._mid, self.ptr, self.nbytes)
        s.synchronize()
        return out

    def _producer(self) -> tuple[Optional[Stream], Optional[int]]:
        """The stream of the last write and its handle, or (None, None) when
        there is nothing to wait for. The handle is read once here: it is a
        Go call, and every caller needs it or the liveness it proves.

        A producer stream the user closed (or whose owner, an endpoint or a
        coordinator, was closed) cannot be waited on any more, but work
        queued on it before still completes: wait for the whole device once
        and forget the stream. This host wait happens only on that rare
        path (reading an array after closing the stream that wrote it).
        """
        s = self.stream
        if s is None:
            return None, None
        try:
            return s, s.handle  # ClosedError once the stream or its owner was closed
        except ClosedError:
            if self.device.is_cuda:
                self.device.synchronize()
            self.stream = None
            return None, None

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


def _check_stream(stream: Any, device: Device, name: str = "stream") -> Optional[Stream]:
    if stream is None:
        return None
    if not isinstance(stream, Stream):
        raise TypeError(f"{name}={stream!r}, expected a vortexgo.Stream or None")
    if stream.device != device:
        raise ValueError(f"{name} is on {stream.device.alias}, expected a stream of {device.alias}")
    return stream


def empty(shape: ShapeLike, dtype: Any = "float32", device: DeviceLike = None, *, pinned: bool = False,
          stream: Optional[Stream] = None) -> Array:
    """An uninitialised array.

    Args:
        shape: an int or a sequence of ints >= 0 (at most 2**48 elements).
        dtype: one of :data:`SUPPORTED_DTYPES`, in native byte order.
        device: ``"cuda:N"``, ``"cpu"``, a :class:`Device` or None (default device).
        pinned: allocate page-locked host memory of ``device`` instead of device memory.
        stream: the stream later writes are ordered on (default: the current stream).

    Raises MemoryError (or :class:`vortexgo.MemoryBudgetError`) when the
    memory cannot be had, before anything is allocated.
    """
    shape = _norm_shape(shape)
    dt = _norm_dtype(dtype)
    pinned = check_bool("pinned", pinned)
    dev = get_device(device)
    s = _check_stream(stream, dev) or current_stream(dev)
    nbytes = math.prod(shape) * dt.itemsize
    try:
        buf = native(dev._h.Alloc)(nbytes, pinned)
    except MemoryError as exc:
        # The same exception, its message prefixed: a MemoryBudgetError keeps its fields
        # (requested, current, limit), which a new exception would lose.
        exc.args = (f"shape={shape} of {dt.name} ({nbytes} bytes) on {dev.alias}: {exc}",) + exc.args[1:]
        raise exc from None
    return Array._new(buf, buf.Ptr(), shape, dt, dev, pinned, s)


def zeros(shape: ShapeLike, dtype: Any = "float32", device: DeviceLike = None, *, pinned: bool = False,
          stream: Optional[Stream] = None) -> Array:
    """An array of zeros (set asynchronously on ``stream``)."""
    a = empty(shape, dtype, device, pinned=pinned, stream=stream)
    if a.nbytes:
        run_op(OP_MEMSET, a.stream, a._mid, a.ptr, 0, 0, a.nbytes)
    return a


def _fill_value(v: Any, dt: np.dtype) -> float:
    """``v`` as the float64 the fill kernel stores as ``dt``, refused where
    NumPy refuses it (an integer out of the type's range: OverflowError);
    floats into integer types truncate toward zero as NumPy's cast does."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"fill_value={v!r}, expected a real number")
    if dt.kind not in "iu":
        try:
            return float(v)
        except OverflowError:
            raise OverflowError(f"fill_value={v!r} is out of range for {dt.name}") from None
    if isinstance(v, numbers.Integral):
        iv = int(v)
    else:
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"fill_value={f}, expected a finite number for {dt.name}")
        iv = math.trunc(f)
    info = np.iinfo(dt)
    if not info.min <= iv <= info.max:
        raise OverflowError(f"fill_value={v!r} is out of bounds for {dt.name} ({info.min}..{info.max})")
    return float(iv)


def full(shape: ShapeLike, fill_value: float, dtype: Any = "float32", device: DeviceLike = None, *,
         pinned: bool = False, stream: Optional[Stream] = None) -> Array:
    """An array filled with ``fill_value`` (by a kernel, asynchronously on ``stream``).

    An integer ``fill_value`` outside ``dtype``'s range raises OverflowError,
    as NumPy does; a float into an integer dtype truncates toward zero.
    """
    dt = _norm_dtype(dtype)
    if dt.kind == "c":
        raise TypeError("full() does not support complex64; use zeros() or from_numpy()")
    value = _fill_value(fill_value, dt)
    a = empty(shape, dt, device, pinned=pinned, stream=stream)
    if a.size:
        run_op(OP_FILL, a.stream, a._mid, a.ptr, 0, 0, a.size, DTYPE_CODES[dt.name], 0, value)
    return a


def from_numpy(array: Any, device: DeviceLike = None, *, pinned: bool = False,
               stream: Optional[Stream] = None) -> Array:
    """Copy a NumPy (or array-like) into a new array on ``device``.

    Any strides are accepted; byte-swapped input is converted to native
    order (the values are kept; the new array is native). The copy is queued
    on ``stream``; from pageable NumPy memory the driver completes it before
    returning (CUDA's rule), so ``array`` may be reused at once.

    A Python list or scalar of integers (NumPy makes them int64, which device
    arrays do not hold) becomes int32 when its values fit; a NumPy int64 array
    is refused, saying to convert it (a silent narrowing could lose values).
    """
    src = np.asarray(array)
    if src.dtype.kind in "iu" and src.dtype.itemsize == 8:
        fits = src.size == 0 or (int(src.min()) >= -2**31 and int(src.max()) < 2**31)
        if not isinstance(array, np.ndarray) and fits:
            src = src.astype(np.int32)
        else:
            raise TypeError(f"array.dtype={str(src.dtype)!r}: device arrays hold up to 32-bit integers; "
                            "convert first, e.g. array.astype(np.int32) when the values fit, or "
                            "array.astype(np.float64)")
    dt = _norm_dtype(src.dtype.newbyteorder("="), "array.dtype")
    src = np.asarray(src, dtype=dt, order="C")  # ascontiguousarray would make 0-d arrays 1-d
    out = empty(src.shape, dt, device, pinned=pinned, stream=stream)
    if out.nbytes:
        # From pageable memory the driver stages the bytes before returning
        # (and host-to-host copies are synchronous), so `src` may be a
        # temporary: no sync is needed here.
        run_op(OP_COPY, out.stream, out._mid, out.ptr, 0, src.ctypes.data, out.nbytes)
    return out


def _endpoint(x: Any, what: str) -> tuple[int, int, int, Optional[Stream], Optional[Device], np.dtype]:
    """(memory id, ptr, nbytes, producer stream, device, dtype) of an Array or a NumPy array."""
    if isinstance(x, Array):
        x._check()
        return x._mid, x.ptr, x.nbytes, x.stream, x.device, x.dtype
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError(f"{what} must be C-contiguous")
        if what == "dst" and not x.flags.writeable:
            raise ValueError("dst is read-only, expected a writeable NumPy array")
        return 0, x.ctypes.data, x.nbytes, None, None, _native(what, x.dtype)
    raise TypeError(f"{what}={type(x).__name__}, expected a vortexgo.Array or a numpy.ndarray")


@native
def copy(dst: Union[Array, np.ndarray], src: Union[Array, np.ndarray], *, stream: Optional[Stream] = None) -> None:
    """Copy ``src`` into ``dst`` (same dtype, same number of bytes) in stream order.

    Asynchronous when both sides are device or pinned memory; a pageable
    NumPy side makes the driver finish the copy before returning. ``stream``
    defaults to the current stream of the device involved (the CUDA one when
    one side is on the CPU backend); it first waits for ``src``'s producer
    stream (an event, not a host wait), and ``dst`` records it as its producer.
    The copy holds both memories for its duration: a concurrent
    :meth:`Array.free` cannot free them underneath it.
    """
    dm, dptr, dn, _, ddev, ddt = _endpoint(dst, "dst")
    sm, sptr, sn, sstream, sdev, sdt = _endpoint(src, "src")
    if ddt != sdt:
        raise TypeError(f"dst dtype {ddt.name} != src dtype {sdt.name}: copy does not convert (use vortexgo.cast)")
    if dn != sn:
        raise ValueError(f"dst has {dn} bytes but src has {sn}: expected equal sizes")
    if ddev is None and sdev is None:
        raise TypeError("copy between two NumPy arrays: use numpy.copyto")
    if ddev is not None and sdev is not None and ddev != sdev and not (ddev.is_cpu or sdev.is_cpu):
        raise ValueError(f"copy between {sdev.alias} and {ddev.alias}: use vortexgo.copy_peer")
    # A CUDA stream copies to and from host memory; a CPU stream cannot read
    # device memory, so the CUDA side's device runs the copy.
    devs = [d for d in (ddev, sdev) if d is not None]
    dev = next((d for d in devs if d.is_cuda), devs[0])
    if stream is not None and not isinstance(stream, Stream):
        stream = Stream.from_external(stream, dev)
    s = _check_stream(stream, dev) or current_stream(dev)
    order_after(s, sstream)
    if dn:
        run_op(OP_COPY, s, dm, dptr, sm, sptr, dn)
    if isinstance(dst, Array):
        dst.stream = s
