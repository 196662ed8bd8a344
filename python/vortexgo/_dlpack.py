"""DLPack capsules built with ctypes over the layout of dlpack.h (v1.x).

We export both the versioned struct (``DLManagedTensorVersioned``, capsule
name ``"dltensor_versioned"``) for consumers that ask with
``max_version >= (1, 0)`` and the legacy ``DLManagedTensor`` (``"dltensor"``)
for older ones. The capsule's context holds the exporter's ``owner`` (a
:class:`vortexgo._lifetime.Keep` over a Go borrow of the memory): the
deleter (or the capsule's destructor when it is dropped unconsumed)
releases it, so the memory stays valid for the consumer's whole life even
if the exporting array is freed first.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Sequence

__all__ = ["to_capsule", "DLPACK_VERSION", "kDLCPU", "kDLCUDA", "kDLCUDAHost"]

DLPACK_VERSION = (1, 1)

# DLDeviceType (dlpack.h)
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3

# DLDataTypeCode (dlpack.h)
_kDLInt, _kDLUInt, _kDLFloat, _kDLComplex = 0, 1, 2, 5

_FLAG_READ_ONLY = 1 << 0


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _Deleter),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_DTYPE_CODES = {"i": _kDLInt, "u": _kDLUInt, "f": _kDLFloat, "c": _kDLComplex}

# Everything a live capsule points into, keyed by the managed struct's
# address: the capsule's manager context. The deleter removes the entry and
# releases the owner's borrow at once (not whenever the collector gets to it).
_live: dict[int, tuple] = {}
_live_lock = threading.Lock()


def _release(addr: int) -> None:
    with _live_lock:
        entry = _live.pop(addr, None)
    release = getattr(entry[-1], "release", None) if entry is not None else None
    if release is not None:
        release()  # Keep.release: idempotent, and turns failures into warnings


@_Deleter
def _deleter(addr):  # called by the consumer, with or without the GIL (ctypes takes it)
    if addr:
        _release(addr)


_pyapi = ctypes.pythonapi
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_pyapi.PyCapsule_New.restype = ctypes.py_object
_pyapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _Destructor]
_pyapi.PyCapsule_IsValid.restype = ctypes.c_int
_pyapi.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_pyapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pyapi.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# Capsule names must outlive the capsules: module-level bytes objects do.
_NAME_LEGACY = b"dltensor"
_NAME_VERSIONED = b"dltensor_versioned"


@_Destructor
def _capsule_destructor(capsule):
    # Runs when the capsule dies. A consumer that took ownership renamed it
    # to "used_dltensor[_versioned]", in which case the deleter is theirs to
    # call; otherwise we still own the tensor and release it here. The
    # capsule arrives as a raw pointer: turning a dying object into a
    # py_object would resurrect it.
    for name in (_NAME_VERSIONED, _NAME_LEGACY):
        if _pyapi.PyCapsule_IsValid(capsule, name):
            addr = _pyapi.PyCapsule_GetPointer(capsule, name)
            if addr:
                _release(addr)
            return


def to_capsule(
    *,
    owner: Any,
    ptr: int,
    shape: Sequence[int],
    strides_elems: Sequence[int],
    typestr: str,
    device_type: int,
    device_id: int,
    versioned: bool,
    read_only: bool = False,
) -> Any:
    """Build a DLPack capsule over memory at ``ptr`` kept alive by ``owner``
    (released with ``owner.release()`` when it has one, once the consumer is done)."""
    kind, size = typestr[1], int(typestr[2:])
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides_elems)
    if versioned:
        m = DLManagedTensorVersioned()
        m.version = DLPackVersion(*DLPACK_VERSION)
        m.flags = _FLAG_READ_ONLY if read_only else 0
        name = _NAME_VERSIONED
    else:
        m = DLManagedTensor()
        name = _NAME_LEGACY
    t = m.dl_tensor
    t.data = ptr
    t.device = DLDevice(device_type, device_id)
    t.ndim = ndim
    t.dtype = DLDataType(_DTYPE_CODES[kind], 8 * size, 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _deleter
    addr = ctypes.addressof(m)
    with _live_lock:
        _live[addr] = (m, shape_arr, strides_arr, owner)
    return _pyapi.PyCapsule_New(addr, name, _capsule_destructor)


def live_count() -> int:
    """Capsules exported and not yet released (for leak tests)."""
    return len(_live)
