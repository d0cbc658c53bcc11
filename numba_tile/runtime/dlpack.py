"""Reading DLPack capsules without dereferencing their pointers (no third-party DLPack library).

A DLPack producer (``obj.__dlpack__()``) returns a ``PyCapsule`` named ``"dltensor"`` (holding a
``DLManagedTensor*``) or, when the consumer asked with ``max_version=(1, 0)`` or later and the
producer supports it, ``"dltensor_versioned"`` (holding a ``DLManagedTensorVersioned*``, which adds
a read-only flag). This module copies the struct out of the capsule; it never calls the tensor's
deleter and never renames the capsule, so the capsule's own destructor releases the producer's
memory when the capsule is garbage-collected. Keeping the capsule alive therefore keeps the memory
alive.

Struct layouts follow ``dlpack.h`` (v1.0)::

    DLDevice   {int32 device_type; int32 device_id}
    DLDataType {uint8 code; uint8 bits; uint16 lanes}
    DLTensor   {void* data; DLDevice device; int32 ndim; DLDataType dtype;
                int64* shape; int64* strides; uint64 byte_offset}
    DLManagedTensor          {DLTensor dl_tensor; void* manager_ctx; void (*deleter)(...)}
    DLManagedTensorVersioned {DLPackVersion version; void* manager_ctx; void (*deleter)(...);
                              uint64 flags; DLTensor dl_tensor}

A capsule's pointers (the managed struct itself, ``shape``, ``strides``) are whatever its producer
wrote, so they are read without dereferencing them: on Linux through ``os.pread`` on
``/proc/self/mem`` (or, where that file cannot be opened, ``process_vm_readv`` on this process),
which answer an error (``EIO``, ``EFAULT``) for an address that is not mapped readable instead of
faulting. A pointer to unmapped memory (a shape pointer of ``0x10``, a freed page, a kernel
address) is then a ``ValueError`` naming the field, which ``arrays.as_array_arg`` reports as a
``TileArgumentError``, never a crash of the process. Where neither is available (not Linux, or
both blocked by a sandbox), :func:`safe_reads` is False and the struct is read with ctypes in place,
as before: a corrupt pointer there can still crash the process. The ``data`` pointer is never
read here.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from typing import NamedTuple

import numpy

__all__ = [
    "DLPackTensor",
    "read_capsule",
    "read_memory",
    "safe_reads",
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

# DLDataTypeCode values (dlpack.h v1.1: FP8 codes 7-14; this module reads 10 and 12).
_K_DL_INT = 0
_K_DL_UINT = 1
_K_DL_FLOAT = 2
_K_DL_BFLOAT = 4
_K_DL_BOOL = 6
_K_DL_FLOAT8_E4M3FN = 10
_K_DL_FLOAT8_E5M2 = 12

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


# -- reading this process's memory without faulting ----------------------------------------------

# DLTensor {data, device_type, device_id, ndim, code, bits, lanes, shape, strides, byte_offset},
# native byte order, no padding: the layout of _DLTensor on every 64-bit ABI (checked below).
_TENSOR = struct.Struct("=QiiiBBHQQQ")
_VERSION_AND_FLAGS = struct.Struct("=II16xQ")           # version, manager_ctx, deleter, flags
_VERSIONED_SIZE = ctypes.sizeof(_DLManagedTensorVersioned)
_VERSIONED_TENSOR = _DLManagedTensorVersioned.dl_tensor.offset
if (_TENSOR.size != ctypes.sizeof(_DLTensor) or _VERSIONED_TENSOR != _VERSION_AND_FLAGS.size
        or _DLManagedTensor.dl_tensor.offset != 0):
    raise ImportError("numba_tile.runtime.dlpack: unexpected DLPack struct layout (64-bit only)")
_INT64S: dict[int, struct.Struct] = {}

_PROC_MEM = "/proc/self/mem"
_lock = threading.Lock()
_state: dict = {"pid": None, "read": None, "safe": False, "fd": -1}


def _pread_reader(fd: int):
    def read(address: int, size: int) -> bytes | None:
        try:
            data = os.pread(fd, size, address)
        except (OSError, OverflowError):    # EIO: not mapped readable; >= 2**63: no user address
            return None
        return data if len(data) == size else None
    return read


def _process_vm_reader():
    """A reader through ``process_vm_readv(getpid(), ...)``, or None where libc lacks it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.process_vm_readv
    except (OSError, AttributeError):
        return None

    class _IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    call.restype = ctypes.c_ssize_t
    call.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                     ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_ulong]
    pid = os.getpid()

    def read(address: int, size: int) -> bytes | None:
        if not 0 <= address < 1 << 64:
            return None
        out = ctypes.create_string_buffer(size)
        local, remote = _IoVec(ctypes.addressof(out), size), _IoVec(address, size)
        if call(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) != size:
            return None                     # EFAULT: not mapped readable
        return out.raw
    return read


def _ctypes_read(address: int, size: int) -> bytes | None:
    """The fallback: dereferences in place, so an unmapped address faults."""
    if not 0 < address < 1 << 64:
        return None
    return ctypes.string_at(address, size)


def _works(read) -> bool:
    """A reader returns what a live buffer holds, and None for page 0 (never mapped)."""
    probe = ctypes.create_string_buffer(b"numba_tile dlpack probe", 24)
    try:
        return read(ctypes.addressof(probe), 24) == probe.raw and read(0, 8) is None
    except Exception:  # noqa: BLE001 - any failure means: do not use this reader
        return False


def _choose() -> None:
    """Picks the reader for this process (again after a fork: /proc/self/mem opened by the parent
    would go on reading the parent's memory)."""
    if _state["fd"] >= 0:
        try:
            os.close(_state["fd"])
        except OSError:
            pass
    read, safe, fd = _ctypes_read, False, -1
    if sys.platform.startswith("linux"):
        try:
            fd = os.open(_PROC_MEM, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            fd = -1
        if fd >= 0 and _works(_pread_reader(fd)):
            read, safe = _pread_reader(fd), True
        else:
            if fd >= 0:
                os.close(fd)
                fd = -1
            vm = _process_vm_reader()
            if vm is not None and _works(vm):
                read, safe = vm, True
    _state.update(pid=os.getpid(), read=read, safe=safe, fd=fd)


def _reader():
    if _state["pid"] != os.getpid():
        with _lock:
            if _state["pid"] != os.getpid():
                _choose()
    return _state["read"]


def read_memory(address: int, size: int) -> bytes | None:
    """``size`` bytes of this process's memory at ``address``, without faulting.

    Args:
        address: the first byte (any int; outside ``[0, 2**63)`` nothing is mapped).
        size: bytes to read (> 0).

    Returns:
        bytes | None: the bytes, or None when any of them is not mapped readable. Where
        :func:`safe_reads` is False the memory is dereferenced in place (ctypes), and an unmapped
        address faults instead.
    """
    return _reader()(address, size)


def safe_reads() -> bool:
    """Whether :func:`read_memory` (and so :func:`read_capsule`) reads without dereferencing:
    True on Linux where ``/proc/self/mem`` or ``process_vm_readv`` works."""
    _reader()
    return _state["safe"]


def _int64s(address: int, count: int, what: str, ndim: int) -> tuple[int, ...]:
    """``count`` int64 values at ``address`` (the shape or strides array of a capsule)."""
    raw = read_memory(address, 8 * count)
    if raw is None:
        raise ValueError(f"the tensor has rank {ndim} but its {what} pointer {address:#x} does not "
                         f"point at {8 * count} readable bytes")
    fmt = _INT64S.get(count)
    if fmt is None:
        fmt = _INT64S[count] = struct.Struct(f"={count}q")
    return fmt.unpack(raw)


def _bfloat16_dtype() -> numpy.dtype:
    import ml_dtypes

    return numpy.dtype(ml_dtypes.bfloat16)


def _float8_dtype(code: int) -> numpy.dtype:
    import ml_dtypes

    return numpy.dtype(ml_dtypes.float8_e4m3fn if code == _K_DL_FLOAT8_E4M3FN
                       else ml_dtypes.float8_e5m2)


class DLPackTensor(NamedTuple):
    """What a DLPack capsule describes, read without touching the data (immutable; a named tuple,
    built on every launch with a DLPack argument, which a frozen dataclass makes 2 us slower).

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
    if code in (_K_DL_FLOAT8_E4M3FN, _K_DL_FLOAT8_E5M2) and bits == 8:
        return _float8_dtype(code)
    return None


_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex", 6: "bool",
               7: "float8_e3m4", 8: "float8_e4m3", 9: "float8_e4m3b11fnuz", 10: "float8_e4m3fn",
               11: "float8_e4m3fnuz", 12: "float8_e5m2", 13: "float8_e5m2fnuz",
               14: "float8_e8m0fnu", 15: "float6_e2m3fn", 16: "float6_e3m2fn",
               17: "float4_e2m1fn"}
_TYPES: dict[tuple[int, int, int], tuple] = {}


def _type_of(code: int, bits: int, lanes: int) -> tuple:
    """(NumPy dtype or None, text) of a DLPack data type, memoised (launches repeat them)."""
    key = (code, bits, lanes)
    hit = _TYPES.get(key)
    if hit is None:
        hit = (_numpy_dtype(code, bits, lanes),
               f"{_CODE_NAMES.get(code, code)}(bits={bits}, lanes={lanes})")
        if len(_TYPES) < 1024:
            _TYPES[key] = hit
    return hit


def read_capsule(capsule: object) -> DLPackTensor:
    """Reads the tensor description out of a DLPack capsule.

    Args:
        capsule: a ``PyCapsule`` named ``"dltensor"`` or ``"dltensor_versioned"``, as returned by
            ``__dlpack__``. It is neither consumed nor renamed; keep it alive as long as the memory
            is in use.

    Returns:
        DLPackTensor: address (bytes), shape and strides (elements), dtype, device and read-only
            flag.

    Only the struct is checked here: that the struct, the shape array and the strides array are
    readable memory (module docstring), the rank (0 to :data:`MAX_NDIM`, so that a corrupt rank
    cannot make this read past the shape array) and a shape pointer for a non-zero rank. Extents,
    strides and the address are read as the producer wrote them (ints, possibly negative) and
    validated with every other producer's by ``arrays.as_array_arg``.

    Raises:
        ValueError: ``capsule`` is not an unconsumed DLPack capsule, its struct or its shape or
            strides array is not readable memory, it is of a DLPack version before 1.0 (versioned
            capsules), reports a rank outside 0 to :data:`MAX_NDIM`, or has a null shape pointer
            for a non-zero rank.
    """
    if _capsule_is_valid(capsule, VERSIONED_CAPSULE_NAME):
        addr = _capsule_get_pointer(capsule, VERSIONED_CAPSULE_NAME) or 0
        raw = read_memory(addr, _VERSIONED_SIZE)
        if raw is None:
            raise ValueError(f"its DLManagedTensorVersioned pointer {addr:#x} does not point at "
                             f"{_VERSIONED_SIZE} readable bytes")
        major, minor, flags = _VERSION_AND_FLAGS.unpack_from(raw)
        if major < 1:
            raise ValueError(f"DLPack capsule of version {major}.{minor}")
        readonly = bool(flags & _FLAG_READ_ONLY)
        copied = bool(flags & _FLAG_IS_COPIED)
        fields = _TENSOR.unpack_from(raw, _VERSIONED_TENSOR)
    elif _capsule_is_valid(capsule, CAPSULE_NAME):
        addr = _capsule_get_pointer(capsule, CAPSULE_NAME) or 0
        raw = read_memory(addr, _TENSOR.size)
        if raw is None:
            raise ValueError(f"its DLManagedTensor pointer {addr:#x} does not point at "
                             f"{_TENSOR.size} readable bytes")
        fields = _TENSOR.unpack(raw)
        readonly = copied = False
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {capsule!r}")
    data, device_type, device_id, ndim, code, bits, lanes, shape_ptr, strides_ptr, offset = fields
    if not 0 <= ndim <= MAX_NDIM:
        raise ValueError(f"the tensor has rank {ndim}: expected 0 to {MAX_NDIM} axes")
    if ndim and not shape_ptr:
        raise ValueError(f"the tensor has rank {ndim} but a null shape pointer")
    shape = _int64s(shape_ptr, ndim, "shape", ndim) if ndim else ()
    strides = None
    if strides_ptr:
        strides = _int64s(strides_ptr, ndim, "strides", ndim) if ndim else ()
    dtype, type_desc = _type_of(code, bits, lanes)
    # ptr may exceed 2**64 (data + byte_offset): validated by the caller
    return DLPackTensor(data + offset, shape, strides, dtype, type_desc, device_type, device_id,
                        readonly, copied)
