"""Stand-ins for device arrays, for tests that run without a GPU.

:class:`FakeDeviceArray` exposes a ``__cuda_array_interface__`` (v3) built from a NumPy array's
``__array_interface__``: the addresses, shape and strides are real (host addresses), so overlap
checks give the same answers as for device memory, while nothing ever reads the data through the
interface. Without a CUDA driver, :func:`numba_tile.runtime.arrays.as_array_arg` places such an
array on device 0.

For the argument validation, :class:`RawInterface` exports a CUDA Array Interface dict verbatim
(:func:`cai_of` builds one from a NumPy array, with entries replaced), and :class:`FakeDLPack` a
DLPack capsule built with ctypes, whatever their extents, strides and pointer say.
"""

from __future__ import annotations

import ctypes

import numpy

__all__ = ["FakeDeviceArray", "RawInterface", "cai_of", "FakeDLPack"]


class FakeDeviceArray:
    """A CUDA Array Interface over a NumPy array's memory (for tests).

    Args:
        host: the NumPy array whose address, shape, strides and dtype are exported (kept alive).
        readonly: the ``data[1]`` flag to export; defaults to ``not host.flags.writeable``.
        stream: the v3 ``stream`` field (None: absent/no synchronisation).
        mask: the ``mask`` field (anything not None is a masked array, which numba_tile refuses).
        typestr: override of the exported ``typestr``.

    Examples:
        >>> x = FakeDeviceArray(numpy.arange(16).reshape(4, 4))
        >>> x.T.host.strides
        (8, 32)
    """

    def __init__(self, host: numpy.ndarray, *, readonly: bool | None = None,
                 stream: int | None = None, mask: object = None, typestr: str | None = None):
        self.host = host
        self.readonly = (not host.flags.writeable) if readonly is None else readonly
        self.stream = stream
        self.mask = mask
        self.typestr = typestr

    @property
    def __cuda_array_interface__(self) -> dict:
        ai = self.host.__array_interface__
        return {
            "version": 3,
            "shape": ai["shape"],
            "strides": ai["strides"],
            "typestr": self.typestr or ai["typestr"],
            "data": (ai["data"][0], self.readonly),
            "stream": self.stream,
            "mask": self.mask,
        }

    def __getitem__(self, index) -> "FakeDeviceArray":
        return FakeDeviceArray(self.host[index], readonly=self.readonly)

    @property
    def T(self) -> "FakeDeviceArray":
        return FakeDeviceArray(self.host.T, readonly=self.readonly)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.host.shape

    def __repr__(self) -> str:
        return f"FakeDeviceArray(shape={self.host.shape}, dtype={self.host.dtype})"


class RawInterface:
    """An object exporting a given ``__cuda_array_interface__`` verbatim, malformed or not.

    For tests of the argument validation: the dict is returned as given, so it may hold negative
    or float extents, a misaligned or wrapping pointer, ``stream`` 0, a ``data`` that is no
    2-tuple...

    Args:
        interface: the dict to export (not copied: tests may change it between launches).
        keepalive: an object to keep alive with this one (the buffer the pointer points into).

    Examples:
        >>> buf = numpy.zeros(4, numpy.float32)
        >>> bad = RawInterface(cai_of(buf, shape=(-4,)), buf)
        >>> bad.__cuda_array_interface__["shape"]
        (-4,)
    """

    def __init__(self, interface: dict, keepalive: object = None):
        self.__cuda_array_interface__ = interface
        self.keepalive = keepalive

    def __repr__(self) -> str:
        return f"RawInterface({self.__cuda_array_interface__!r})"


def cai_of(host: numpy.ndarray, **overrides) -> dict:
    """The CUDA Array Interface (v3) dict of ``host``'s memory, with entries replaced.

    Args:
        host: the NumPy array whose address, shape, strides and typestr are described.
        **overrides: entries to replace or add (``shape=``, ``strides=``, ``data=``,
            ``stream=``...).

    Returns:
        dict: ``version``, ``shape``, ``strides`` (explicit, never None), ``typestr``, ``data``
        (``(address, False)``), ``stream`` (None), then ``overrides``.
    """
    ai = host.__array_interface__
    out = {"version": 3, "shape": host.shape, "strides": host.strides, "typestr": ai["typestr"],
           "data": (ai["data"][0], False), "stream": None}
    out.update(overrides)
    return out


_CAPSULE_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}  # alive as long as the module
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDLPack:
    """A DLPack producer whose capsule says whatever the test wants (negative extents too).

    The ``DLManagedTensor`` (or ``DLManagedTensorVersioned``) struct is built with ctypes and kept
    alive by this object; every ``__dlpack__`` call wraps it in a new capsule without a destructor.
    Nothing reads the memory the capsule points at.

    Args:
        ptr: the ``data`` address (``byte_offset`` is 0).
        shape: extents as written into the capsule (any 64-bit ints).
        strides: element strides as written, or None for a null strides pointer (compact).
        dtype: ``(code, bits, lanes)`` of DLPack (default float32: ``(2, 32, 1)``).
        device: ``(device_type, device_id)`` (default CPU: ``(1, 0)``).
        versioned: export a ``dltensor_versioned`` capsule (DLPack 1.0) instead of ``dltensor``.
        flags: the versioned capsule's flags (bit 0 read-only, bit 1 is-copied).
        ndim: the rank written into the struct, if not ``len(shape)`` (a corrupt capsule).
        keepalive: an object to keep alive with this one (the buffer ``ptr`` points into).
    """

    def __init__(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...] | None = None,
                 *, dtype: tuple[int, int, int] = (2, 32, 1), device: tuple[int, int] = (1, 0),
                 versioned: bool = False, flags: int = 0, ndim: int | None = None,
                 keepalive: object = None):
        from numba_tile.runtime import dlpack

        self.keepalive = keepalive
        self.device = device
        self.versioned = versioned
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = (None if strides is None
                         else (ctypes.c_int64 * max(len(strides), 1))(*strides))
        if versioned:
            self._managed = dlpack._DLManagedTensorVersioned()
            self._managed.version.major, self._managed.version.minor = 1, 0
            self._managed.flags = flags
        else:
            self._managed = dlpack._DLManagedTensor()
        t = self._managed.dl_tensor
        t.data = ptr
        t.device.device_type, t.device.device_id = device
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)) if shape else None
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = 0

    def __dlpack__(self, stream=None, max_version=None, copy=None):
        return _capsule_new(ctypes.addressof(self._managed), _CAPSULE_NAMES[self.versioned], None)

    def __dlpack_device__(self):
        return self.device
