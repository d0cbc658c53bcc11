"""Reading DLPack capsules with ctypes (no third-party DLPack library).

A DLPack producer (``obj.__dlpack__()``) returns a ``PyCapsule`` named ``"dltensor"`` (holding a
``DLManagedTensor*``) or, when the consumer asked with ``max_version=(1, 0)`` or later and the
producer supports it, ``"dltensor_versioned"`` (holding a ``DLManagedTensorVersioned*``, which adds
a read-only flag). This module reads the struct in place; it never calls the tensor's deleter and
never renames the capsule, so the capsule's own destructor releases the producer's memory when the
capsule is garbage-collected. Keeping the capsule alive therefore keeps the memory alive.

Struct layouts follow ``dlpack.h`` (v1.0)::

    DLDevice   {int32 device_type; int32 device_id}
    DLDataType {uint8 code; uint8 bits; uint16 lanes}
    DLTensor   {void* data; DLDevice device; int32 ndim; DLDataType dtype;
                int64* shape; int64* strides; uint64 byte_offset}
    DLManagedTensor          {DLTensor dl_tensor; void* manager_ctx; void (*deleter)(...)}
    DLManagedTensorVersioned {DLPackVersion version; void* manager_ctx; void (*deleter)(...);
                              uint64 flags; DLTensor dl_tensor}
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy

__all__ = [
    "DLPackTensor",
    "read_capsule",
    "K_DL_CPU",
    "K_DL_CUDA",
    "K_DL_CUDA_HOST",
    "K_DL_CUDA_MANAGED",
    "CAPSULE_NAME",
    "VERSIONED_CAPSULE_NAME",
]

# DLDeviceType values used here.
K_DL_CPU = 1
K_DL_CUDA = 2
K_DL_CUDA_HOST = 3
K_DL_CUDA_MANAGED = 13

# DLDataTypeCode values.
_K_DL_INT = 0
_K_DL_UINT = 1
_K_DL_FLOAT = 2
_K_DL_BFLOAT = 4
_K_DL_BOOL = 6

_FLAG_READ_ONLY = 1 << 0
_FLAG_IS_COPIED = 1 << 1

#: Most axes an array argument may have (``arrays.MAX_NDIM`` says why: NumPy 1's limit); defined
#: here so that a corrupt ``ndim`` is refused before the shape array is read.
MAX_NDIM = 32

CAPSULE_NAME = b"dltensor"
VERSIONED_CAPSULE_NAME = b"dltensor_versioned"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]

_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _bfloat16_dtype() -> numpy.dtype:
    import ml_dtypes

    return numpy.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class DLPackTensor:
    """What a DLPack capsule describes, read without touching the data.

    Attributes:
        ptr: address of element ``[0, ..., 0]`` (``data + byte_offset``), in bytes.
        shape: extent per axis, in elements.
        strides: stride per axis in ELEMENTS, or None for compact row-major (DLPack's convention).
        dtype: NumPy dtype of one element, or None if DLPack's (code, bits, lanes) has no NumPy
            equivalent here (then ``type_desc`` describes it).
        type_desc: the DLPack data type as text, e.g. ``"float(bits=32, lanes=1)"``.
        device_type: DLPack ``DLDeviceType`` (1 CPU, 2 CUDA, 3 CUDA host, 13 CUDA managed).
        device_id: device ordinal as DLPack gives it.
        readonly: the producer set ``DLPACK_FLAG_BITMASK_READ_ONLY`` (versioned capsules only).
        copied: the producer set ``DLPACK_FLAG_BITMASK_IS_COPIED``: the memory is a copy, so writes
            to it would not reach the producer's array (versioned capsules only).
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    dtype: numpy.dtype | None
    type_desc: str
    device_type: int
    device_id: int
    readonly: bool
    copied: bool = False


def _numpy_dtype(code: int, bits: int, lanes: int) -> numpy.dtype | None:
    if lanes != 1:
        return None
    if code == _K_DL_FLOAT and bits in (16, 32, 64):
        return numpy.dtype(f"float{bits}")
    if code == _K_DL_INT and bits in (8, 16, 32, 64):
        return numpy.dtype(f"int{bits}")
    if code == _K_DL_UINT and bits in (8, 16, 32, 64):
        return numpy.dtype(f"uint{bits}")
    if code == _K_DL_BFLOAT and bits == 16:
        return _bfloat16_dtype()
    if code == _K_DL_BOOL and bits == 8:
        return numpy.dtype(numpy.bool_)
    return None


_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex", 6: "bool"}


def read_capsule(capsule: object) -> DLPackTensor:
    """Reads the tensor description out of a DLPack capsule.

    Args:
        capsule: a ``PyCapsule`` named ``"dltensor"`` or ``"dltensor_versioned"``, as returned by
            ``__dlpack__``. It is neither consumed nor renamed; keep it alive as long as the memory
            is in use.

    Returns:
        DLPackTensor: address (bytes), shape and strides (elements), dtype, device and read-only
            flag.

    Only the struct is checked here: the rank (0 to :data:`MAX_NDIM`, so that a corrupt rank
    cannot make this read past the shape array) and a shape pointer for a non-zero rank. Extents,
    strides and the address are read as the producer wrote them (ints, possibly negative) and
    validated with every other producer's by ``arrays.as_array_arg``.

    Raises:
        ValueError: ``capsule`` is not an unconsumed DLPack capsule, is of a DLPack version before
            1.0 (versioned capsules), reports a rank outside 0 to :data:`MAX_NDIM`, or has a null
            shape pointer for a non-zero rank.
    """
    if _capsule_is_valid(capsule, VERSIONED_CAPSULE_NAME):
        addr = _capsule_get_pointer(capsule, VERSIONED_CAPSULE_NAME)
        managed = _DLManagedTensorVersioned.from_address(addr)
        if managed.version.major < 1:
            version = f"{managed.version.major}.{managed.version.minor}"
            raise ValueError(f"DLPack capsule of version {version}")
        readonly = bool(managed.flags & _FLAG_READ_ONLY)
        copied = bool(managed.flags & _FLAG_IS_COPIED)
        tensor = managed.dl_tensor
    elif _capsule_is_valid(capsule, CAPSULE_NAME):
        addr = _capsule_get_pointer(capsule, CAPSULE_NAME)
        tensor = _DLManagedTensor.from_address(addr).dl_tensor
        readonly = copied = False
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {capsule!r}")
    ndim = tensor.ndim
    if not 0 <= ndim <= MAX_NDIM:
        raise ValueError(f"the tensor has rank {ndim}: expected 0 to {MAX_NDIM} axes")
    if ndim and not tensor.shape:
        raise ValueError(f"the tensor has rank {ndim} but a null shape pointer")
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    dt = tensor.dtype
    return DLPackTensor(
        ptr=(tensor.data or 0) + tensor.byte_offset,    # may exceed 2**64: validated by the caller
        shape=shape,
        strides=strides,
        dtype=_numpy_dtype(dt.code, dt.bits, dt.lanes),
        type_desc=f"{_CODE_NAMES.get(dt.code, dt.code)}(bits={dt.bits}, lanes={dt.lanes})",
        device_type=tensor.device.device_type,
        device_id=tensor.device.device_id,
        readonly=readonly,
        copied=copied,
    )
