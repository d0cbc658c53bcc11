"""Launch-argument adapters: one validated description (:class:`ArrayArg`) for every array a kernel
accepts.

Producers understood, in the order they are tried:

1. ``numpy.ndarray`` (host memory; interpreter mode only, the launch checks refuse it on the GPU
   path);
2. PyTorch tensors (recognised by ``type(obj).__module__``; torch is never imported here);
3. anything with ``__cuda_array_interface__`` (CuPy, Numba device arrays, ...), versions 0 to 3;
4. any other DLPack producer (``__dlpack__`` and ``__dlpack_device__``), read without dereferencing
   its pointers where the platform allows (``dlpack.py``).

The adapter chosen for a Python type is cached, so repeated launches with the same array type skip
the probing. An adapter only *reads* its producer's interface; what every adapter reads is then
validated in one place (:func:`as_array_arg`, through ``_validated``), because a producer is
recognised by duck typing and any class can masquerade as a PyTorch tensor or a CuPy array. The
rules (docs/safety.md R14, "every array interface is validated before use"):

* rank from 1 to :data:`MAX_NDIM` (0-d arrays are refused with a hint: scalars are Python numbers);
* extents are ints (not bools, not floats; NumPy integers are accepted) from 0 to ``2**63 - 1``,
  and a non-empty array holds at most ``2**63 - 1`` bytes (the kernel receives extents and element
  offsets as int64);
* byte strides are ints from ``-2**63`` to ``2**63 - 1`` and, for a non-empty array, multiples of
  the item size on every axis of extent > 1 (the kernel receives element strides; an axis of
  extent 1 never steps, and NumPy, DLPack and PyTorch allow any stride there);
* the data pointer is an int from 0 to ``2**64 - 1``; for a non-empty array it is not null, it is
  aligned to the item size (a misaligned access on the GPU raises CUDA_ERROR_MISALIGNED_ADDRESS,
  which destroys the CUDA context of the whole process), and every byte of every element lies in
  ``[0, 2**64 - 1)``, so that the range's end (one past its last byte) is still a 64-bit address
  (no wrap-around past either end of the address space);
* the byte span (from the lowest byte to one past the highest) is at most :data:`MAX_SPAN`
  (``2**61`` bytes), so that every offset the kernel and NumPy's overlap solver compute fits in
  int64 with room to spare (no real allocation comes near it: :data:`MAX_SPAN` says why);
* the CUDA Array Interface ``data`` is an ``(int, bool)`` 2-tuple and its ``stream`` is None or a
  positive int handle (the v3 spec forbids 0, ambiguous between the legacy and the per-thread
  default stream);
* the device is None (host) or a non-negative int ordinal.

An empty array (an extent of 0) addresses no byte, so its pointer may be null or misaligned and its
strides any 64-bit ints. Every failure is a :class:`~numba_tile.errors.TileArgumentError` naming the
argument, what was expected and what was given; an adapter that fails in any other way (a producer
whose attributes raise, or return nonsense) is reported as one too, never as a bare Python error.
"""

from __future__ import annotations

import math
import operator
import sys
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy

from numba_tile.errors import TileArgumentError, shown, type_name
from numba_tile.runtime import dlpack

__all__ = ["ArrayArg", "as_array_arg", "SUPPORTED_DTYPES", "BFLOAT16", "MAX_NDIM", "MAX_SPAN",
           "ZERO_D_MESSAGE"]

#: NumPy dtype of bfloat16 (from ``ml_dtypes``).
BFLOAT16 = numpy.dtype(ml_dtypes.bfloat16)

#: dtypes a kernel argument may have, mapped to the names used in messages.
SUPPORTED_DTYPES: dict[numpy.dtype, str] = {
    numpy.dtype(numpy.float16): "float16",
    BFLOAT16: "bfloat16",
    numpy.dtype(numpy.float32): "float32",
    numpy.dtype(numpy.float64): "float64",
    numpy.dtype(numpy.int8): "int8",
    numpy.dtype(numpy.int16): "int16",
    numpy.dtype(numpy.int32): "int32",
    numpy.dtype(numpy.int64): "int64",
    numpy.dtype(numpy.uint8): "uint8",
    numpy.dtype(numpy.uint16): "uint16",
    numpy.dtype(numpy.uint32): "uint32",
    numpy.dtype(numpy.uint64): "uint64",
    numpy.dtype(numpy.bool_): "bool",
    numpy.dtype(ml_dtypes.float8_e4m3fn): "float8_e4m3fn",
    numpy.dtype(ml_dtypes.float8_e5m2): "float8_e5m2",
}
#: CUDA Array Interface typestrs of an 8-bit float: ``ml_dtypes`` writes ``'<f1'`` for every
#: FP8 format, so the typestr cannot say which one it is
_FLOAT8_TYPESTRS = ("<f1", "|f1", ">f1", "=f1")
_SUPPORTED_TEXT = ", ".join(SUPPORTED_DTYPES.values())

#: Most axes an array argument may have. The overlap checks (``runtime/overlap.py``) describe
#: arguments to NumPy as stand-in arrays, which cannot have more axes than NumPy's own limit
#: (``NPY_MAXDIMS``): 32 in NumPy 1, 64 in NumPy 2. 32 holds on every supported NumPy, and the
#: interpreter's views of host arguments are NumPy arrays too. (The value lives in ``dlpack``,
#: which reads no more axes than this out of a capsule.)
MAX_NDIM = dlpack.MAX_NDIM

#: The refusal of a 0-d array (rank 0), for tensor, partition and Mutable parameters alike.
ZERO_D_MESSAGE = ("0-d arrays are not supported; pass a Python number for a scalar parameter, or "
                  "a.reshape(1) for a one-element tensor")

#: Most bytes one array argument may span, from its lowest byte to one past its highest: 2**61
#: (2 EiB). No allocation comes near it: a virtual address has at most 57 bits on x86-64 with
#: 5-level paging (Intel's 5-level paging white paper; 48 bits with 4-level paging), 52 on
#: AArch64 with FEAT_LVA, and 49 on NVIDIA GPUs (49-bit virtual addresses since Pascal: NVIDIA's
#: GP100 white paper). A span above 2**57 bytes cannot describe memory that exists; only a
#: corrupt or forged interface, or an ``as_strided`` view whose far elements nobody may touch, has
#: one. Within the bound every element offset the kernel computes (index times stride, summed
#: over the axes) lies in ``[-2**61, 2**61]``, and NumPy's overlap solver (``mem_overlap.c``: int64
#: offsets from the data pointer) cannot overflow, because ``overlap.py`` translates its stand-in
#: arrays so that two arrays whose byte ranges intersect lie below ``2**62 + 2**21``. Past a span
#: of ``2**63`` NumPy's ``offset_bounds_from_strides`` overflows silently, and ``shares_memory``
#: answers False for arrays that overlap.
MAX_SPAN = 1 << 61

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_ADDRESS_END = 1 << 64      # one past the last byte of a 64-bit address space

# The device of a CUDA Array Interface is that of its pointer, asked of the driver only once the
# pointer is known to be a valid address.
_DEVICE_OF_POINTER = object()


@dataclass(frozen=True, eq=False, init=False)
class ArrayArg:
    """One array argument of a launch, described by address, layout and ownership.

    Compared by identity (``eq=False``): two descriptions of the same memory are different
    arguments. :func:`as_array_arg` only returns validated descriptions (module docstring); one
    built directly (tests) is taken as given.

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
        # Nine dict stores instead of a frozen dataclass's nine object.__setattr__ calls (hot path).
        d = self.__dict__
        d["obj"] = obj
        d["owner"] = owner
        d["ptr"] = ptr
        d["shape"] = shape
        d["strides"] = strides
        d["dtype"] = dtype
        d["readonly"] = readonly
        d["device"] = device
        d["stream"] = stream

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

        An empty array addresses no element and an axis of extent 1 never steps, so a stride there
        that is not a multiple of the item size is rounded down (any value will do).

        Raises:
            TileArgumentError: a stride of an axis of extent > 1 of a non-empty array is not a
                multiple of the item size.
        """
        size = self.dtype.itemsize
        out = []
        shape = self.shape
        empty = 0 in shape
        for axis, stride in enumerate(self.strides):
            q, r = divmod(stride, size)
            if r and not empty and shape[axis] != 1:
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






def _check_dtype(dtype: numpy.dtype, name: str) -> numpy.dtype:
    if dtype not in SUPPORTED_DTYPES:
        raise TileArgumentError(
            f"argument '{name}': dtype {dtype} is not supported (supported: {_SUPPORTED_TEXT})")
    return dtype


_C_STRIDES: dict[tuple, tuple[int, ...]] = {}


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array (memoised: launches repeat the same shapes).

    ``shape`` must already be validated (ints from 0 to ``2**63 - 1``).
    """
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


def _owner_device(ptr: int, claimed: int) -> int:
    """The device a producer names for ``ptr``, or the driver's answer where the process sees
    several devices and the driver knows the pointer: a producer's device may be wrong (a
    numba-cuda array names the context it was wrapped in; a DLPack capsule any id), and the
    launch-device and peer rules (``devices.check_devices``) must rest on where the
    memory is. One ``cuPointerGetAttribute`` per non-empty array on the slow path, only with
    more than one device; with one, every device array is on it."""
    global _driver
    if _driver is None:
        from numba_tile.runtime import driver

        _driver = driver
    count = _driver.device_count()
    if count is None or count < 2:
        return claimed
    try:
        real = _driver.pointer_device(ptr)
    except Exception:  # noqa: BLE001 - a driver that cannot tell: the producer's word
        return claimed
    return claimed if real is None else real


# -- validation ------------------------------------------------------------------------------------

def _ints(values: object, what: str, name: str) -> tuple[int, ...]:
    """``values`` (a tuple or list) as a tuple of exact ints; NumPy integers are converted.

    Raises:
        TileArgumentError: not a tuple or list, or an item that is not an int (bools and floats
            are refused, whatever their value).
    """
    if type(values) is not tuple and type(values) is not list:
        raise TileArgumentError(
            f"argument '{name}': {what}: expected a tuple of ints, got {shown(values, with_type=True)}")
    out = []
    for axis, v in enumerate(values):
        if type(v) is not int:
            if isinstance(v, (bool, numpy.bool_)) or not isinstance(v, (int, numpy.integer)):
                raise TileArgumentError(
                    f"argument '{name}': {what} {_short(values)}: expected ints, got "
                    f"{shown(v, with_type=True)} on axis {axis}")
            v = operator.index(v)
        out.append(v)
    return tuple(out)


def _short(values: object) -> str:
    """A shape or strides sequence as a message shows it (shortened)."""
    try:
        text = repr(tuple(values)) if type(values) is list else repr(values)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not replace the refusal
        text = "<unprintable>"
    return text if len(text) <= 80 else text[:77] + "..."


def _pointer(ptr: object, name: str) -> int:
    """The data pointer as an exact int (NumPy integers converted), else a TileArgumentError."""
    if type(ptr) is not int:
        if isinstance(ptr, (bool, numpy.bool_)) or not isinstance(ptr, (int, numpy.integer)):
            raise TileArgumentError(
                f"argument '{name}': data pointer: expected an int address, got {shown(ptr, with_type=True)}")
        ptr = operator.index(ptr)
    if not 0 <= ptr < _ADDRESS_END:
        raise TileArgumentError(
            f"argument '{name}': data pointer: expected an address from 0 to 2**64 - 1, got {ptr}")
    return ptr


def _checked_ints(values: object, what: str, name: str, lo: int, hi: int, unit: str) -> tuple:
    """Slow path of :func:`_validated`: ``values`` as exact ints in ``[lo, hi]``, or a refusal
    naming the axis."""
    out = _ints(values, what, name)
    for axis, v in enumerate(out):
        if not lo <= v <= hi:
            raise TileArgumentError(
                f"argument '{name}': {what} {_short(out)}: expected {unit}, got {v} on axis {axis}")
    return out


_EXTENTS = "extents from 0 to 2**63 - 1"
_STRIDES = "byte strides from -2**63 to 2**63 - 1 (the kernel receives them as int64)"


def _validated(name: str, obj: object, owner: object, ptr: object, shape: object,
               strides: object, dtype: numpy.dtype, readonly: object, device: object,
               stream: object) -> ArrayArg:
    """Checks what an adapter read and builds the :class:`ArrayArg` (rules: module docstring).

    ``strides`` None means C-contiguous (computed here, once the shape is known to be valid);
    ``device`` ``_DEVICE_OF_POINTER`` means the device that owns the pointer. The common case
    costs a few exact-type tests and comparisons per axis; anything unusual (NumPy integers, a
    list) takes a slow path that converts it or words the refusal, then starts over.

    Raises:
        TileArgumentError: any rule broken, naming ``name``, what was expected and what was given.
    """
    if type(shape) is not tuple:
        shape = _ints(shape, "shape", name)
    ndim = len(shape)
    if ndim == 0:
        raise TileArgumentError(f"argument '{name}': {ZERO_D_MESSAGE} (got a 0-d {dtype} array)")
    if ndim > MAX_NDIM:
        raise TileArgumentError(
            f"argument '{name}': expected at most {MAX_NDIM} axes (the limit NumPy's overlap "
            f"test has on every supported NumPy), got {ndim}; merge axes with a reshape")
    itemsize = dtype.itemsize
    if strides is None:
        for n in shape:
            if type(n) is not int or n < 0 or n > _INT64_MAX:
                shape = _checked_ints(shape, "shape", name, 0, _INT64_MAX, _EXTENTS)
                break
        strides = _c_strides(shape, itemsize)
    elif type(strides) is not tuple or len(strides) != ndim:
        strides = _ints(strides, "strides", name)
        if len(strides) != ndim:
            raise TileArgumentError(
                f"argument '{name}': expected one stride per axis ({ndim} for shape "
                f"{_short(shape)}), got {len(strides)} strides {_short(strides)}")
    if type(ptr) is not int or ptr < 0 or ptr >= _ADDRESS_END:
        ptr = _pointer(ptr, name)

    # One pass over the axes: exact ints in range, the byte range and the element count, and
    # the OR of the strides of axes of extent > 1 (its low bits say whether one is not a whole
    # number of items: item sizes are powers of two).
    lo = hi = ptr
    size = 1
    bits = 0
    for n, s in zip(shape, strides):
        if (type(n) is not int or type(s) is not int or n < 0 or n > _INT64_MAX
                or s < _INT64_MIN or s > _INT64_MAX):
            shape = _checked_ints(shape, "shape", name, 0, _INT64_MAX, _EXTENTS)
            strides = _checked_ints(strides, "strides", name, _INT64_MIN, _INT64_MAX, _STRIDES)
            return _validated(name, obj, owner, ptr, shape, strides, dtype, readonly, device,
                              stream)
        size *= n
        if n != 1:            # an axis of extent 1 never steps: any stride will do there
            bits |= s
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    odd = bits & (itemsize - 1)
    if size:
        if ptr == 0:
            raise TileArgumentError(
                f"argument '{name}': data pointer is null for a non-empty array of shape "
                f"{_short(shape)}: expected the address of element [0, ...]")
        if ptr % itemsize:
            raise TileArgumentError(
                f"argument '{name}': data pointer {ptr:#x} is not aligned to the item size: "
                f"expected a multiple of {itemsize} bytes ({dtype}), got one {ptr % itemsize} "
                f"byte(s) past (on the GPU a misaligned access destroys the CUDA context); pass "
                f"an aligned copy, e.g. a.copy()")
        if lo < 0 or hi + itemsize >= _ADDRESS_END:
            raise TileArgumentError(
                f"argument '{name}': shape {_short(shape)} with byte strides {_short(strides)} "
                f"from address {ptr:#x} spans bytes {lo:#x} to {hi + itemsize:#x} (exclusive): "
                f"expected every byte inside the 64-bit address space [0, 2**64 - 1)")
        if size * itemsize > _INT64_MAX:
            raise TileArgumentError(
                f"argument '{name}': {size} elements of {itemsize} bytes: expected at most "
                f"2**63 - 1 bytes in one array")
        if hi + itemsize - lo > MAX_SPAN:
            raise TileArgumentError(
                f"argument '{name}': shape {_short(shape)} with byte strides {_short(strides)} "
                f"spans {hi + itemsize - lo} bytes (from {lo:#x} to {hi + itemsize:#x}, "
                f"exclusive): expected at most 2**61 bytes from the lowest byte to one past the "
                f"highest (no memory spans that much: virtual addresses have at most 57 bits on "
                f"x86-64, 49 on a GPU); the strides are corrupt or the view reaches far outside "
                f"its allocation: pass the array itself or a contiguous copy")

    # Flags.
    if readonly is not False and readonly is not True:
        if not isinstance(readonly, numpy.bool_):
            raise TileArgumentError(
                f"argument '{name}': read-only flag: expected a bool, got {shown(readonly, with_type=True)}")
        readonly = bool(readonly)
    if stream is not None and (type(stream) is not int or stream <= 0
                               or stream >= _ADDRESS_END):
        if type(stream) is int and stream == 0:
            raise TileArgumentError(
                f"argument '{name}': __cuda_array_interface__ 'stream' is 0, which the CUDA "
                f"Array Interface v3 forbids (ambiguous between the legacy and the per-thread "
                f"default stream): expected None, 1 (legacy default stream), 2 (per-thread "
                f"default stream) or a stream handle")
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ 'stream': expected None or a positive "
            f"int stream handle below 2**64, got {shown(stream, with_type=True)}")
    if device is _DEVICE_OF_POINTER:
        device = _pointer_device(ptr)
    elif device is not None and (type(device) is not int or device < 0):
        if isinstance(device, (bool, numpy.bool_)) or not isinstance(device, (int, numpy.integer)) \
                or device < 0:
            raise TileArgumentError(
                f"argument '{name}': device: expected a CUDA device ordinal (an int >= 0), got "
                f"{shown(device, with_type=True)}")
        device = operator.index(device)
    if device is not None and size and ptr:
        device = _owner_device(ptr, device)
    arg = ArrayArg(obj, owner, ptr, shape, strides, dtype, readonly, device, stream)
    if odd and size:
        # Last, so that the refusal can carry an otherwise valid description: the launch checks
        # report a mutable argument that overlaps itself as such, whatever its strides.
        axis, s = next((i, s) for i, (n, s) in enumerate(zip(shape, strides))
                       if n != 1 and s % itemsize)
        exc = TileArgumentError(
            f"argument '{name}': byte stride {s} on axis {axis} is not a multiple of the item "
            f"size {itemsize} ({dtype}): expected strides in whole elements (strides "
            f"{_short(strides)}); pass a contiguous copy, e.g. numpy.ascontiguousarray(a) or "
            f"cupy.ascontiguousarray(a)")
        exc.odd_strides_layout = arg
        raise exc
    return arg


# -- adapters --------------------------------------------------------------------------------------
# Each returns the fields of an ArrayArg as read from the producer, unchecked: (obj, owner, ptr,
# shape, strides or None, dtype, readonly, device, stream).

def _from_numpy(obj: numpy.ndarray, name: str, stream: int | None) -> tuple:
    if isinstance(obj, numpy.ma.MaskedArray):
        raise TileArgumentError(f"argument '{name}': masked arrays are not supported (the mask "
                                f"would be ignored); pass numpy.ma.getdata(a) or a filled copy")
    # A subclass may override shape, strides, flags or __array_interface__ (say writeable over
    # read-only memory): read them through a plain ndarray view of the same memory.
    arr = obj if type(obj) is numpy.ndarray else numpy.ndarray.view(obj, numpy.ndarray)
    dtype = _check_dtype(arr.dtype, name)
    return (obj, obj, arr.__array_interface__["data"][0], arr.shape, arr.strides, dtype,
            not arr.flags.writeable, None, None)


_TYPESTR_CACHE: dict[str, numpy.dtype] = {}


def _typestr_dtype(typestr: object, name: str) -> numpy.dtype:
    try:
        return _TYPESTR_CACHE[typestr]
    except (KeyError, TypeError):
        pass
    if typestr in _FLOAT8_TYPESTRS:
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ typestr {typestr!r} is an 8-bit float "
            f"but does not say which format (float8_e4m3fn or float8_e5m2): pass FP8 arrays "
            f"through DLPack or as a PyTorch tensor")
    try:
        dtype = numpy.dtype(typestr)
    except (TypeError, ValueError) as exc:
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ has an unreadable typestr {typestr!r}"
        ) from exc
    if dtype.kind == "V":
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ typestr {typestr!r} is untyped raw data "
            f"(bfloat16 and FP8 arrays must come through DLPack or a PyTorch tensor); "
            f"supported dtypes: {_SUPPORTED_TEXT}")
    _check_dtype(dtype, name)
    if type(typestr) is str:
        _TYPESTR_CACHE[typestr] = dtype
    return dtype


def _cai_fields(obj: object, name: str) -> tuple:
    """(ptr, shape, byte strides or None, dtype, readonly, stream) from a CUDA Array Interface,
    unchecked but for the interface's structure."""
    cai = obj.__cuda_array_interface__
    if type(cai) is not dict:
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__: expected a dict, got {shown(cai, with_type=True)}")
    try:
        shape = cai["shape"]
        data = cai["data"]
        typestr = cai["typestr"]
    except KeyError as exc:
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ has no {exc.args[0]!r} entry") from None
    if type(data) is not tuple or len(data) != 2:
        raise TileArgumentError(
            f"argument '{name}': __cuda_array_interface__ 'data': expected a 2-tuple (pointer: "
            f"int, read-only: bool), got {shown(data, with_type=True)}")
    ptr, readonly = data
    if ptr is None:           # CAI v0-v2 producers may give None for an empty array
        ptr = 0
    if cai.get("mask") is not None:
        raise TileArgumentError(
            f"argument '{name}': masked arrays (__cuda_array_interface__ 'mask') are not supported")
    dtype = _TYPESTR_CACHE.get(typestr) if type(typestr) is str else None
    if dtype is None:
        dtype = _typestr_dtype(typestr, name)
    return ptr, shape, cai.get("strides"), dtype, readonly, cai.get("stream")


def _from_cai(obj: object, name: str, stream: int | None) -> tuple:
    ptr, shape, strides, dtype, readonly, producer_stream = _cai_fields(obj, name)
    return (obj, obj, ptr, shape, strides, dtype, readonly, _DEVICE_OF_POINTER,
            producer_stream)


def _from_cupy(obj: object, name: str, stream: int | None) -> tuple:
    ptr, shape, strides, dtype, readonly, producer_stream = _cai_fields(obj, name)
    try:
        device = obj.data.device_id  # a plain attribute of CuPy's MemoryPointer
    except AttributeError:
        device = obj.device.id
    return obj, obj, ptr, shape, strides, dtype, readonly, device, producer_stream


_TORCH_DTYPES: dict[object, numpy.dtype] = {}


def _torch_dtype(tdtype: object, name: str) -> numpy.dtype:
    if not _TORCH_DTYPES:
        torch = sys.modules["torch"]
        names = {"float16": numpy.float16, "bfloat16": BFLOAT16, "float32": numpy.float32,
                 "float64": numpy.float64, "int8": numpy.int8, "int16": numpy.int16,
                 "int32": numpy.int32, "int64": numpy.int64, "uint8": numpy.uint8,
                 "uint16": numpy.uint16, "uint32": numpy.uint32, "uint64": numpy.uint64,
                 "bool": numpy.bool_, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
                 "float8_e5m2": ml_dtypes.float8_e5m2}
        _TORCH_DTYPES.update({getattr(torch, n): numpy.dtype(d) for n, d in names.items()
                              if hasattr(torch, n)})
    try:
        return _TORCH_DTYPES[tdtype]
    except (KeyError, TypeError):
        raise TileArgumentError(
            f"argument '{name}': dtype {tdtype} is not supported (supported: {_SUPPORTED_TEXT})"
        ) from None


def _byte_strides(element_strides: object, itemsize: int, what: str, name: str) -> tuple:
    """Element strides (ints) times ``itemsize``; refuses non-int strides before multiplying."""
    out = _ints(element_strides, what, name)
    return tuple(s * itemsize for s in out)


def _from_torch(obj: object, name: str, stream: int | None) -> tuple:
    dtype = _torch_dtype(obj.dtype, name)
    dev = obj.device
    if dev.type == "cuda":
        device = dev.index if dev.index is not None else 0
    elif dev.type == "cpu":
        device = None
    else:
        raise TileArgumentError(
            f"argument '{name}': expected a CUDA or CPU tensor, got a tensor on device '{dev}'")
    # strides scaled by the dtype's item size, not the tensor's element_size(): one source of truth
    strides = _byte_strides(tuple(obj.stride()), dtype.itemsize, "tensor strides", name)
    # the owner is the storage, not the tensor object: set_() gives a tensor other memory, and
    # the memory a launch uses must outlive it (resize_() reallocates the storage itself, which
    # no reference can prevent: PyTorch's allocator reuses that memory in its stream's order)
    try:
        owner = obj.untyped_storage()
    except Exception:  # noqa: BLE001 - a tensor without a storage (meta, some subclasses)
        owner = obj
    return obj, owner, obj.data_ptr(), tuple(obj.shape), strides, dtype, False, device, None


def _from_dlpack(obj: object, name: str, stream: int | None) -> tuple:
    try:
        device_type, device_id = obj.__dlpack_device__()
        device_type = operator.index(device_type)
    except Exception as exc:
        raise TileArgumentError(
            f"argument '{name}': __dlpack_device__() failed or returned no (device type, device "
            f"id) pair ({exc!r})") from exc
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
    except Exception as exc:
        raise TileArgumentError(f"argument '{name}': DLPack export failed ({exc!r})") from exc
    try:
        info = dlpack.read_capsule(capsule)
    except ValueError as exc:
        raise TileArgumentError(f"argument '{name}': unusable DLPack capsule: {exc}") from None
    if info.copied:
        raise TileArgumentError(
            f"argument '{name}': the DLPack producer exported a copy, not its own memory")
    if info.dtype is None:
        raise TileArgumentError(
            f"argument '{name}': DLPack dtype {info.type_desc} is not supported "
            f"(supported: {_SUPPORTED_TEXT})")
    dtype = _check_dtype(info.dtype, name)
    strides = None
    if info.strides is not None:
        strides = _byte_strides(info.strides, dtype.itemsize, "DLPack strides", name)
    device = None if info.device_type == dlpack.K_DL_CPU else info.device_id
    return obj, capsule, info.ptr, info.shape, strides, dtype, info.readonly, device, None


_Adapter = Callable[[object, str, "int | None"], tuple]
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
    """Describes and validates a user's array argument: address, shape, byte strides, dtype, device.

    Nothing is copied and the data is never read. Whatever the adapter, the description is
    validated here (module docstring), so a class that masquerades as a known producer cannot
    smuggle a malformed layout past the launch checks.

    Args:
        obj: a device array (anything with ``__cuda_array_interface__``, a PyTorch tensor, or a
            DLPack producer) or a ``numpy.ndarray`` (host memory). Rank 1 to :data:`MAX_NDIM`,
            dtype among :data:`SUPPORTED_DTYPES`.
        name: the kernel parameter it is bound to, used in error messages.
        stream: handle (int) of the stream the launch will use. Only DLPack producers use it, to
            order their pending work before that stream (0 is sent as DLPack's 1, the legacy default
            stream).

    Returns:
        ArrayArg: the description; ``owner`` keeps the memory alive (the DLPack capsule for DLPack
        producers).

    Raises:
        TileArgumentError: ``obj`` is not an array, has an unsupported dtype, a masked CUDA Array
            Interface, a malformed interface, a layout that breaks a rule of the module docstring
            (0-d, too many axes, bad extents or strides, a null, misaligned or wrapping pointer, CAI
            stream 0), or lives on a device that is neither CUDA nor the host. A producer whose
            interface raises any other exception is reported as this error too. The refusal of
            strides that are not whole elements (checked last) carries the otherwise valid
            description as ``odd_strides_layout``, so that a launch can report a mutable argument
            that overlaps itself as such.
    """
    try:
        adapter = _ADAPTERS.get(type(obj))
        if adapter is None:
            adapter = _pick_adapter(obj)      # hasattr runs properties, which may raise
            if adapter is None:
                raise TileArgumentError(
                    f"argument '{name}': expected an array (on the GPU a CuPy, Numba or PyTorch "
                    f"device array, or any object with __cuda_array_interface__ or __dlpack__; "
                    f"in interpreter mode a NumPy array), got {type_name(obj)}")
            _ADAPTERS[type(obj)] = adapter
        fields = adapter(obj, name, stream)
    except TileArgumentError:
        raise
    except Exception as exc:  # a producer's interface that raises or returns nonsense
        raise TileArgumentError(
            f"argument '{name}': could not read the array interface of {type_name(obj)} "
            f"({shown(exc, with_type=True)})") from exc
    return _validated(name, *fields)
