"""Launch-argument adapters: one description (:class:`ArrayArg`) for every array a kernel accepts.

Producers understood, in the order they are tried:

1. ``numpy.ndarray`` (host memory; interpreter mode only, the launch checks refuse it on the GPU
   path);
2. PyTorch tensors (recognised by ``type(obj).__module__``; torch is never imported here);
3. anything with ``__cuda_array_interface__`` (CuPy, Numba device arrays, ...), versions 0 to 3;
4. any other DLPack producer (``__dlpack__`` and ``__dlpack_device__``), read with ctypes.

The adapter chosen for a Python type is cached, so repeated launches with the same array type skip
the probing.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy

from numba_tile.errors import TileArgumentError
from numba_tile.runtime import dlpack

__all__ = ["ArrayArg", "as_array_arg", "SUPPORTED_DTYPES", "BFLOAT16"]

#: NumPy dtype of bfloat16 (from ``ml_dtypes``).
BFLOAT16 = numpy.dtype(ml_dtypes.bfloat16)

#: dtypes a kernel argument may have, mapped to the names used in messages.
SUPPORTED_DTYPES: dict[numpy.dtype, str] = {
    numpy.dtype(numpy.float16): "float16",
    BFLOAT16: "bfloat16",
    numpy.dtype(numpy.float32): "float32",
    numpy.dtype(numpy.float64): "float64",
    numpy.dtype(numpy.int32): "int32",
    numpy.dtype(numpy.int64): "int64",
    numpy.dtype(numpy.bool_): "bool",
}
_SUPPORTED_TEXT = ", ".join(SUPPORTED_DTYPES.values())


@dataclass(frozen=True, eq=False, init=False)
class ArrayArg:
    """One array argument of a launch, described by address, layout and ownership.

    Compared by identity (``eq=False``): two descriptions of the same memory are different
    arguments.

    Attributes:
        obj: the object the user passed (kept alive with the launch).
        owner: the object whose lifetime keeps the memory alive: ``obj`` itself, or the DLPack
            capsule for DLPack producers.
        ptr: address of element ``[0, ..., 0]`` in bytes (a device address for device arrays, a host
            address for host arrays). May be 0 for zero-size arrays.
        shape: extent per axis, in elements.
        strides: stride per axis in BYTES; may be negative (reversed views) or 0 (broadcast views).
        dtype: element dtype, one of :data:`SUPPORTED_DTYPES` (bfloat16 is ``ml_dtypes.bfloat16``).
        readonly: the producer marked the buffer read-only (CUDA Array Interface ``data[1]``, a
            non-writeable NumPy array, or DLPack's read-only flag).
        device: CUDA device ordinal, or None for host memory.
        stream: the CUDA Array Interface v3 ``stream`` field (the producer's stream handle), or None
            when absent (other producers, or no synchronisation required).
    """

    obj: object
    owner: object
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: numpy.dtype
    readonly: bool
    device: int | None
    stream: int | None = None

    def __init__(self, obj: object, owner: object, ptr: int, shape: tuple[int, ...],
                 strides: tuple[int, ...], dtype: numpy.dtype, readonly: bool, device: int | None,
                 stream: int | None = None):
        # One dict update instead of a frozen dataclass's nine object.__setattr__ calls (hot path).
        self.__dict__.update(obj=obj, owner=owner, ptr=ptr, shape=shape, strides=strides,
                             dtype=dtype, readonly=readonly, device=device, stream=stream)

    @property
    def is_host(self) -> bool:
        """True when the memory is host memory (``device is None``)."""
        return self.device is None

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (product of ``shape``; 1 for rank 0)."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def element_strides(self) -> tuple[int, ...]:
        """Strides in elements (``strides // itemsize``).

        Raises:
            TileArgumentError: a stride is not a multiple of the item size.
        """
        size = self.dtype.itemsize
        out = []
        for axis, stride in enumerate(self.strides):
            q, r = divmod(stride, size)
            if r:
                raise TileArgumentError(
                    f"array stride {stride} bytes on axis {axis} is not a multiple of the item "
                    f"size {size} bytes ({self.dtype})")
            out.append(q)
        return tuple(out)

    @property
    def byte_bounds(self) -> tuple[int, int]:
        """Half-open byte range ``[lo, hi)`` holding every element; ``(ptr, ptr)`` if size 0."""
        lo = hi = self.ptr
        for n, s in zip(self.shape, self.strides):
            if n == 0:
                return self.ptr, self.ptr
            if s > 0:
                hi += s * (n - 1)
            else:
                lo += s * (n - 1)
        return lo, hi + self.dtype.itemsize


def _type_name(obj: object) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _check_dtype(dtype: numpy.dtype, name: str) -> numpy.dtype:
    if dtype not in SUPPORTED_DTYPES:
        raise TileArgumentError(
            f"argument '{name}': dtype {dtype} is not supported (supported: {_SUPPORTED_TEXT})")
    return dtype


_C_STRIDES: dict[tuple, tuple[int, ...]] = {}


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array (memoised: launches repeat the same shapes)."""
    key = (shape, itemsize)
    strides = _C_STRIDES.get(key)
    if strides is None:
        out = []
        step = itemsize
        for n in reversed(shape):
            out.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(out))
        if len(_C_STRIDES) > 4096:
            _C_STRIDES.clear()
        _C_STRIDES[key] = strides
    return strides


# -- device of a CUDA Array Interface pointer ------------------------------------------------------

_driver = None


def _pointer_device(ptr: int) -> int:
    """CUDA device ordinal owning ``ptr``.

    Uses ``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)``. Without a usable CUDA
    driver no device memory can exist, so the interface belongs to a stand-in (unit tests): it is
    taken to be on device 0. A pointer the driver does not know (null pointer of an empty array, or
    pageable host memory on a system with HMM) is taken to be on the current context's device (0 if
    none).
    """
    global _driver
    if _driver is None:
        from numba_tile.runtime import driver

        _driver = driver
    if not _driver.gpu_available():
        return 0
    if ptr:
        ordinal = _driver.pointer_device(ptr)
        if ordinal is not None:
            return ordinal
    current = _driver.current_device()
    return 0 if current is None else current


# -- adapters --------------------------------------------------------------------------------------

def _from_numpy(obj: numpy.ndarray, name: str, stream: int | None) -> ArrayArg:
    if isinstance(obj, numpy.ma.MaskedArray):
        raise TileArgumentError(f"argument '{name}': masked arrays are not supported (the mask "
                                f"would be ignored); pass numpy.ma.getdata(a) or a filled copy")
    dtype = _check_dtype(obj.dtype, name)
    return ArrayArg(
        obj=obj, owner=obj, ptr=obj.__array_interface__["data"][0], shape=obj.shape,
        strides=obj.strides, dtype=dtype, readonly=not obj.flags.writeable, device=None)


_TYPESTR_CACHE: dict[str, numpy.dtype] = {}


def _typestr_dtype(typestr: object, name: str) -> numpy.dtype:
    try:
        return _TYPESTR_CACHE[typestr]
    except (KeyError, TypeError):
        pass
    try:
        dtype = numpy.dtype(typestr)
    except TypeError as exc:
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ has an unreadable typestr {typestr!r}"
        ) from exc
    if dtype.kind == "V":
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ typestr {typestr!r} is untyped raw data "
            f"(bfloat16 arrays must come through DLPack or a PyTorch tensor); "
            f"supported dtypes: {_SUPPORTED_TEXT}")
    _check_dtype(dtype, name)
    _TYPESTR_CACHE[typestr] = dtype
    return dtype


def _cai_layout(obj: object, name: str):
    """(ptr, shape, byte strides, dtype, readonly, stream) from a CUDA Array Interface."""
    cai = obj.__cuda_array_interface__
    try:
        shape = cai["shape"]
        if type(shape) is not tuple:
            shape = tuple(int(n) for n in shape)
        ptr, readonly = cai["data"]
        typestr = cai["typestr"]
    except (KeyError, TypeError, ValueError) as exc:
        raise TileArgumentError(
            f"argument '{name}': malformed __cuda_array_interface__ ({exc!r})") from exc
    if cai.get("mask") is not None:
        raise TileArgumentError(
            f"argument '{name}': masked arrays (__cuda_array_interface__ 'mask') are not supported")
    dtype = _TYPESTR_CACHE.get(typestr) if type(typestr) is str else None
    if dtype is None:
        dtype = _typestr_dtype(typestr, name)
    strides = cai.get("strides")
    if strides is None:
        strides = _c_strides(shape, dtype.itemsize)
    else:
        if type(strides) is not tuple:
            strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise TileArgumentError(
                f"argument '{name}': __cuda_array_interface__ has {len(shape)} extents but "
                f"{len(strides)} strides")
    return ptr or 0, shape, strides, dtype, readonly, cai.get("stream")


def _from_cai(obj: object, name: str, stream: int | None) -> ArrayArg:
    ptr, shape, strides, dtype, readonly, producer_stream = _cai_layout(obj, name)
    return ArrayArg(obj, obj, ptr, shape, strides, dtype, bool(readonly), _pointer_device(ptr),
                    producer_stream)


def _from_cupy(obj: object, name: str, stream: int | None) -> ArrayArg:
    ptr, shape, strides, dtype, readonly, producer_stream = _cai_layout(obj, name)
    try:
        device = obj.data.device_id  # a plain attribute of CuPy's MemoryPointer
    except AttributeError:
        device = obj.device.id
    return ArrayArg(obj, obj, ptr, shape, strides, dtype, bool(readonly), device, producer_stream)


_TORCH_DTYPES: dict[object, numpy.dtype] = {}


def _torch_dtype(tdtype: object, name: str) -> numpy.dtype:
    if not _TORCH_DTYPES:
        torch = sys.modules["torch"]
        _TORCH_DTYPES.update({
            torch.float16: numpy.dtype(numpy.float16),
            torch.bfloat16: BFLOAT16,
            torch.float32: numpy.dtype(numpy.float32),
            torch.float64: numpy.dtype(numpy.float64),
            torch.int32: numpy.dtype(numpy.int32),
            torch.int64: numpy.dtype(numpy.int64),
            torch.bool: numpy.dtype(numpy.bool_),
        })
    try:
        return _TORCH_DTYPES[tdtype]
    except KeyError:
        raise TileArgumentError(
            f"argument '{name}': dtype {tdtype} is not supported (supported: {_SUPPORTED_TEXT})"
        ) from None


def _from_torch(obj: object, name: str, stream: int | None) -> ArrayArg:
    dtype = _torch_dtype(obj.dtype, name)
    dev = obj.device
    if dev.type == "cuda":
        device = dev.index if dev.index is not None else 0
    elif dev.type == "cpu":
        device = None
    else:
        raise TileArgumentError(
            f"argument '{name}': expected a CUDA or CPU tensor, got a tensor on device '{dev}'")
    size = obj.element_size()
    return ArrayArg(
        obj=obj, owner=obj, ptr=obj.data_ptr(), shape=tuple(obj.shape),
        strides=tuple(s * size for s in obj.stride()), dtype=dtype, readonly=False, device=device)


def _from_dlpack(obj: object, name: str, stream: int | None) -> ArrayArg:
    try:
        device_type, device_id = obj.__dlpack_device__()
    except Exception as exc:
        raise TileArgumentError(f"argument '{name}': __dlpack_device__() failed ({exc!r})") from exc
    device_type = int(device_type)
    if device_type == dlpack.K_DL_CPU:
        kwargs = {}
    elif device_type in (dlpack.K_DL_CUDA, dlpack.K_DL_CUDA_MANAGED):
        # DLPack stream convention: 1 is the legacy default stream, 0 is disallowed.
        kwargs = {"stream": 1 if not stream else stream}
    else:
        raise TileArgumentError(
            f"argument '{name}': DLPack device type {device_type} is neither CUDA (2) nor CPU (1)")
    try:
        try:
            # copy=False: the producer must export its own memory (or raise), never a copy that
            # a kernel would write in vain.
            capsule = obj.__dlpack__(max_version=(1, 0), copy=False, **kwargs)
        except TypeError:  # producer predates DLPack 1.0's keywords (and never copies)
            capsule = obj.__dlpack__(**kwargs)
        info = dlpack.read_capsule(capsule)
    except TileArgumentError:
        raise
    except Exception as exc:
        raise TileArgumentError(f"argument '{name}': DLPack export failed ({exc!r})") from exc
    if info.copied:
        raise TileArgumentError(
            f"argument '{name}': the DLPack producer exported a copy, not its own memory")
    if info.dtype is None:
        raise TileArgumentError(
            f"argument '{name}': DLPack dtype {info.type_desc} is not supported "
            f"(supported: {_SUPPORTED_TEXT})")
    dtype = _check_dtype(info.dtype, name)
    size = dtype.itemsize
    if info.strides is None:
        strides = _c_strides(info.shape, size)
    else:
        strides = tuple(s * size for s in info.strides)
    device = None if info.device_type == dlpack.K_DL_CPU else info.device_id
    return ArrayArg(
        obj=obj, owner=capsule, ptr=info.ptr, shape=info.shape, strides=strides, dtype=dtype,
        readonly=info.readonly, device=device)


_Adapter = Callable[[object, str, "int | None"], ArrayArg]
_ADAPTERS: dict[type, _Adapter] = {}


def _pick_adapter(obj: object) -> _Adapter | None:
    t = type(obj)
    if isinstance(obj, numpy.ndarray):
        return _from_numpy
    if t.__module__.startswith("torch") and hasattr(obj, "data_ptr"):
        return _from_torch
    if hasattr(obj, "__cuda_array_interface__"):
        if t.__module__.startswith("cupy") and hasattr(obj, "device"):
            return _from_cupy
        return _from_cai
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack
    return None


def as_array_arg(obj: object, name: str, *, stream: int | None = None) -> ArrayArg:
    """Describes a user's array argument by address, shape, byte strides, dtype and device.

    Nothing is copied and the data is never read.

    Args:
        obj: a device array (anything with ``__cuda_array_interface__``, a PyTorch tensor, or a
            DLPack producer) or a ``numpy.ndarray`` (host memory). Any rank, dtype among
            :data:`SUPPORTED_DTYPES`.
        name: the kernel parameter it is bound to, used in error messages.
        stream: handle (int) of the stream the launch will use. Only DLPack producers use it, to
            order their pending work before that stream (0 is sent as DLPack's 1, the legacy default
            stream).

    Returns:
        ArrayArg: the description; ``owner`` keeps the memory alive (the DLPack capsule for DLPack
        producers).

    Raises:
        TileArgumentError: ``obj`` is not an array, has an unsupported dtype, a masked CUDA Array
            Interface, a malformed interface, or lives on a device that is neither CUDA nor the
            host.
    """
    adapter = _ADAPTERS.get(type(obj))
    if adapter is None:
        adapter = _pick_adapter(obj)
        if adapter is None:
            raise TileArgumentError(
                f"argument '{name}': expected an array (on the GPU a CuPy, Numba or PyTorch "
                f"device array, or any object with __cuda_array_interface__ or __dlpack__; in "
                f"interpreter mode a NumPy array), got {_type_name(obj)}")
        _ADAPTERS[type(obj)] = adapter
    return adapter(obj, name, stream)
